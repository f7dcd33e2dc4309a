/**
 * The agent's connection to the gateway: one WebSocket (`/v1/agent`) carrying every session.
 *
 * An ask waits for its outcome across reconnects: while the connection is down the ask is kept,
 * and each new connection sends every waiting ask again (the gateway answers a repeat from what
 * it holds: `accepted` again, or the outcome it kept), with what is left of its deadline. An
 * outcome is acknowledged once it has been handed over, so that the gateway forgets it then and
 * not before: a client that dies between the two gets it again by asking again.
 */

import { randomUUID } from "node:crypto";

import WebSocket from "ws";

import {
  AskRejected,
  type FieldError,
  Forbidden,
  GatewayClosed,
  abortError,
  readErrors,
} from "./errors.js";
import { type Outcome, readOutcome } from "./outcome.js";

/** The close codes after which connecting again would only be refused again. */
const FATAL_CLOSES = new Set([4400, 4401, 4403]);

/** How the client waits between connection attempts: `initialMs`, doubling up to `maxMs`. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** What a `Client` is made with. */
export interface ClientOptions {
  /** The agent key (`Authorization: Bearer KEY`); none for a gateway in local mode. */
  key?: string;
  /** The waits between connection attempts (default 100 ms doubling to 5 s). */
  backoff?: Backoff;
}

/** An ask's body: the wire `ask` frame's fields as `docs/PROTOCOL.md` writes them (snake_case:
 * `id`, `dialect`, `questions` or `calls` or the dialect's own fields, `timeout_s`, `title`,
 * `answerers`, `default`, `quorum`, `rules`...), without `type` and `session`. */
export type AskBody = Record<string, unknown>;

/** How an ask is waited for. */
export interface AskOptions {
  /** Aborting it withdraws the request; the promise rejects with an `AbortError`. */
  signal?: AbortSignal;
}

/** What `open` tells of a session. */
export interface Opened {
  session: string;
  /** The link people open to answer. */
  viewerUrl: string;
}

interface Waiting {
  session: string;
  id: string;
  body: AskBody;
  /** When the deadline falls, on this machine's clock (ms), once known; re-sent asks carry
   * what is left of it. */
  deadlineAt: number | null;
  resolve: (outcome: Outcome) => void;
  reject: (error: Error) => void;
  /** Set once aborted: its outcome is read as a withdrawal. */
  aborted: boolean;
  abortReason?: unknown;
  detach: () => void;
}

/** The agent's connection to a gateway. */
export class Client {
  private readonly socketUrl: string;
  private readonly key: string | undefined;
  private readonly backoff: Backoff;
  private socket: WebSocket | null = null;
  private connecting: Promise<WebSocket> | null = null;
  private closed = false;
  private attempt = 0;
  private readonly waiting = new Map<string, Waiting>();
  private readonly opening = new Map<string, Array<(opened: Opened | Error) => void>>();

  /** A client of the gateway at `url` (`http://host:port`); it connects on first use. */
  constructor(url: string, options: ClientOptions = {}) {
    const base = new URL(url);
    base.protocol = base.protocol === "https:" ? "wss:" : "ws:";
    base.pathname = `${base.pathname.replace(/\/$/, "")}/v1/agent`;
    this.socketUrl = base.toString();
    this.key = options.key;
    this.backoff = options.backoff ?? { initialMs: 100, maxMs: 5000 };
  }

  /** Creates `session` at the gateway if new, and says where people answer it. */
  async open(session: string): Promise<Opened> {
    const socket = await this.connected();
    return new Promise<Opened>((resolve, reject) => {
      const callbacks = this.opening.get(session) ?? [];
      callbacks.push((opened) => (opened instanceof Error ? reject(opened) : resolve(opened)));
      this.opening.set(session, callbacks);
      socket.send(JSON.stringify({ type: "open", session }));
    });
  }

  /**
   * Asks `body` in `session` and waits for the outcome, across reconnects. `body.id` defaults
   * to a fresh id; asking a known id with the same questions is idempotent.
   *
   * Rejects with `AskRejected` (with the gateway's paths) when the gateway refuses the ask,
   * `Forbidden` when the key may not act on the session, `GatewayClosed` when the gateway
   * closes the connection for good or the client is closed, and an `AbortError` once
   * `options.signal` aborts (the request is withdrawn).
   */
  ask(session: string, body: AskBody, options: AskOptions = {}): Promise<Outcome> {
    const id = typeof body["id"] === "string" ? body["id"] : randomUUID().replaceAll("-", "");
    const key = `${session}\n${id}`;
    if (this.closed) {
      return Promise.reject(new GatewayClosed(1000, "the client was closed"));
    }
    if (this.waiting.has(key)) {
      return Promise.reject(
        new Error(`request ${id} of session ${session} is already being asked by this client`),
      );
    }
    const signal = options.signal;
    if (signal?.aborted) {
      return Promise.reject(abortError(signal.reason));
    }
    const timeoutS = body["timeout_s"];
    return new Promise<Outcome>((resolve, reject) => {
      const onAbort = (): void => this.withdraw(key, signal?.reason);
      const waiting: Waiting = {
        session,
        id,
        body: { ...body, id },
        deadlineAt: typeof timeoutS === "number" ? Date.now() + timeoutS * 1000 : null,
        resolve,
        reject,
        aborted: false,
        detach: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.set(key, waiting);
      this.connected().then(
        (socket) => this.sendAsk(socket, waiting),
        (error: unknown) => this.settle(key, error instanceof Error ? error : new Error(String(error))),
      );
    });
  }

  /** Closes the connection; every ask still waiting rejects with `GatewayClosed` (its request
   * stays open at the gateway: another client asking the same id collects it). */
  close(): void {
    this.closed = true;
    const closing = new GatewayClosed(1000, "the client was closed");
    for (const key of [...this.waiting.keys()]) {
      this.settle(key, closing);
    }
    this.failOpens(closing);
    this.socket?.close(1000);
    this.socket = null;
  }

  private sendAsk(socket: WebSocket, waiting: Waiting): void {
    if (socket.readyState !== WebSocket.OPEN) {
      return; // sent again by the next connection
    }
    const frame: Record<string, unknown> = {
      ...waiting.body,
      type: "ask",
      session: waiting.session,
    };
    if (waiting.deadlineAt !== null) {
      frame["timeout_s"] = Math.max(waiting.deadlineAt - Date.now(), 1) / 1000;
    }
    socket.send(JSON.stringify(frame));
    if (waiting.aborted) {
      socket.send(JSON.stringify({ type: "cancel", session: waiting.session, id: waiting.id }));
    }
  }

  private withdraw(key: string, reason: unknown): void {
    const waiting = this.waiting.get(key);
    if (!waiting) {
      return;
    }
    waiting.aborted = true;
    waiting.abortReason = reason;
    const socket = this.socket;
    if (socket?.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify({ type: "cancel", session: waiting.session, id: waiting.id }));
    }
  }

  private settle(key: string, result: Outcome | Error): void {
    const waiting = this.waiting.get(key);
    if (!waiting) {
      return;
    }
    this.waiting.delete(key);
    waiting.detach();
    if (result instanceof Error) {
      waiting.reject(result);
    } else if (waiting.aborted && result.kind === "withdrawn") {
      waiting.reject(abortError(waiting.abortReason));
    } else {
      waiting.resolve(result);
    }
  }

  private failOpens(error: Error): void {
    for (const callbacks of this.opening.values()) {
      for (const callback of callbacks) {
        callback(error);
      }
    }
    this.opening.clear();
  }

  /** The open socket, connecting (again) if there is none. */
  private connected(): Promise<WebSocket> {
    if (this.closed) {
      return Promise.reject(new GatewayClosed(1000, "the client was closed"));
    }
    if (this.socket?.readyState === WebSocket.OPEN) {
      return Promise.resolve(this.socket);
    }
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<WebSocket> {
    for (;;) {
      if (this.closed) {
        throw new GatewayClosed(1000, "the client was closed");
      }
      try {
        const socket = await this.dial();
        this.attempt = 0;
        return socket;
      } catch (error) {
        if (error instanceof GatewayClosed && FATAL_CLOSES.has(error.code)) {
          throw error;
        }
        const wait = Math.min(this.backoff.initialMs * 2 ** this.attempt, this.backoff.maxMs);
        this.attempt = Math.min(this.attempt + 1, 32);
        await new Promise((resolve) => setTimeout(resolve, wait * (0.5 + Math.random() / 2)));
      }
    }
  }

  /** One connection attempt: the socket once open, every waiting ask sent on it. */
  private dial(): Promise<WebSocket> {
    const headers: Record<string, string> = {};
    if (this.key !== undefined) {
      headers["Authorization"] = `Bearer ${this.key}`;
    }
    const socket = new WebSocket(this.socketUrl, { headers });
    return new Promise<WebSocket>((resolve, reject) => {
      let opened = false;
      socket.on("open", () => {
        opened = true;
        this.socket = socket;
        for (const waiting of this.waiting.values()) {
          this.sendAsk(socket, waiting);
        }
        resolve(socket);
      });
      socket.on("message", (data) => this.onFrame(socket, data.toString()));
      socket.on("close", (code, reason) => {
        const why = new GatewayClosed(code, reason.toString());
        if (!opened) {
          reject(why);
          return;
        }
        this.onClose(socket, why);
      });
      // A failed connection closes too; the close says what it came to.
      socket.on("error", () => undefined);
    });
  }

  private onClose(socket: WebSocket, why: GatewayClosed): void {
    if (this.socket === socket) {
      this.socket = null;
    }
    if (this.closed) {
      return;
    }
    this.failOpens(why);
    if (FATAL_CLOSES.has(why.code)) {
      for (const key of [...this.waiting.keys()]) {
        this.settle(key, why);
      }
      return;
    }
    if (this.waiting.size > 0) {
      // Asks are waiting: connect again, which sends them again.
      this.connected().catch((error: unknown) => {
        for (const key of [...this.waiting.keys()]) {
          this.settle(key, error instanceof Error ? error : new Error(String(error)));
        }
      });
    }
  }

  private onFrame(socket: WebSocket, text: string): void {
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    const session = typeof frame["session"] === "string" ? frame["session"] : "";
    const id = typeof frame["id"] === "string" ? frame["id"] : "";
    const key = `${session}\n${id}`;
    switch (frame["type"]) {
      case "opened": {
        const callbacks = this.opening.get(session) ?? [];
        this.opening.delete(session);
        const viewerUrl = typeof frame["viewer_url"] === "string" ? frame["viewer_url"] : "";
        for (const callback of callbacks) {
          callback({ session, viewerUrl });
        }
        return;
      }
      case "accepted": {
        const waiting = this.waiting.get(key);
        const deadlineMs = frame["deadline_ms"];
        if (waiting && typeof deadlineMs === "number") {
          // The gateway's deadline, on this machine's clock as well as can be told.
          waiting.deadlineAt = Math.min(waiting.deadlineAt ?? Infinity, deadlineMs);
        }
        return;
      }
      case "rejected": {
        const errors: FieldError[] = readErrors(frame["errors"]);
        const refusal = errors.some((e) => e.code === "forbidden")
          ? new Forbidden(errors)
          : new AskRejected(errors);
        this.settle(key, refusal);
        return;
      }
      case "outcome": {
        let outcome: Outcome;
        try {
          outcome = readOutcome(frame);
        } catch (error) {
          this.settle(key, error instanceof Error ? error : new Error(String(error)));
          return;
        }
        this.settle(key, outcome);
        // Handed over (or nobody here waits for it any more): the gateway may forget it.
        if (socket.readyState === WebSocket.OPEN) {
          socket.send(JSON.stringify({ type: "ack", session, id }));
        }
        return;
      }
      case "error": {
        // A cancel refused as `forbidden` means the key may not act there.
        if (frame["code"] === "forbidden" && id) {
          const message = typeof frame["message"] === "string" ? frame["message"] : "forbidden";
          this.settle(key, new Forbidden([{ path: "", message, code: "forbidden" }]));
        }
        return;
      }
      default:
        return;
    }
  }
}
