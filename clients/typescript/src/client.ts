/**
 * The agent's connection to the gateway: one WebSocket (`/v1/agent`) carrying every session.
 *
 * An ask waits for its outcome across reconnects: while the connection is down the ask is kept,
 * and each new connection sends every waiting ask again (the gateway answers a repeat from what
 * it holds: `accepted` again, or the outcome it kept), with what is left of its deadline. An
 * outcome is acknowledged once it has been handed over, and the acknowledgements of the last
 * minutes are sent again first on each new connection: one lost with its socket would leave the
 * gateway keeping the outcome, and answering a later ask of the same id with it. A withdrawal
 * (an aborted ask) rejects at once, and is sent again on each connection until the gateway has
 * ended the request.
 */

import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";

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

/** The close codes after which the gateway asks to be connected to again (`close.rs`,
 * `should_reconnect`), with a connection that failed or closed with no code; every other close
 * is final. */
const RECONNECT_CLOSES = new Set([1001, 1005, 1006, 1011, 1012, 1013, 4408, 4429]);
/** How long acknowledgements are sent again on each new connection. */
const ACKS_KEPT_MS = 10 * 60 * 1000;
/** Most acknowledgements kept to send again. */
const ACKS_KEPT = 1000;
/** A connection the gateway has not pinged for this long is taken for dead (it pings every
 * 25 s by default). */
const SILENCE_MS = 75_000;
/** How long the WebSocket handshake may take. */
const HANDSHAKE_MS = 10_000;

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
  /** Aborting it rejects the ask with an `AbortError` and withdraws the request (unless it
   * has ended already). */
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
  /** The ask frame without its `timeout_s`, encoded once. */
  fields: Record<string, unknown>;
  /** When the deadline falls, on this process's monotonic clock (ms); re-sent asks carry what
   * is left of it. */
  deadlineAt: number | null;
  /** The socket it was last sent on (each connection sends it once). */
  sentOn: WebSocket | null;
  resolve: (outcome: Outcome) => void;
  reject: (error: Error) => void;
  detach: () => void;
}

interface Opening {
  session: string;
  resolve: (opened: Opened) => void;
  reject: (error: Error) => void;
}

/** The agent's connection to a gateway. */
export class Client {
  private readonly socketUrl: string;
  private readonly key: string | undefined;
  private readonly backoff: Backoff;
  private socket: WebSocket | null = null;
  /** The socket being dialled, so that `close` reaches it too. */
  private dialling: WebSocket | null = null;
  private connecting: Promise<WebSocket> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private attempt = 0;
  private readonly waiting = new Map<string, Waiting>();
  /** `open`s not yet answered, oldest first: the gateway answers them in order, and refuses
   * one with an `error` that names no session. */
  private readonly opening: Opening[] = [];
  /** Withdrawals the gateway has not ended yet, sent again on each connection. */
  private readonly withdrawing = new Map<string, { session: string; id: string }>();
  /** Acknowledgements sent lately, by when: sent again first on each new connection. */
  private readonly acked = new Map<string, number>();

  /** A client of the gateway at `url` (`http://host:port`); it connects on first use. */
  constructor(url: string, options: ClientOptions = {}) {
    const base = new URL(url);
    base.protocol = base.protocol === "https:" ? "wss:" : "ws:";
    base.pathname = `${base.pathname.replace(/\/$/, "")}/v1/agent`;
    this.socketUrl = base.toString();
    this.key = options.key;
    this.backoff = options.backoff ?? { initialMs: 100, maxMs: 5000 };
  }

  /** Creates `session` at the gateway if new, and says where people answer it. Rejects with
   * `AskRejected` when the gateway refuses (a bad session id, one outside the key's scope:
   * `Forbidden`, the most sessions held), or `GatewayClosed` once the client is closed. */
  async open(session: string): Promise<Opened> {
    const socket = await this.connected();
    return new Promise<Opened>((resolve, reject) => {
      this.opening.push({ session, resolve, reject });
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
   * `options.signal` aborts (an answer that came first resolves it instead).
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
    const fields: Record<string, unknown> = { ...body, type: "ask", session, id };
    delete fields["timeout_s"];
    try {
      JSON.stringify(fields);
    } catch (error) {
      return Promise.reject(new TypeError(`the ask cannot be sent as JSON: ${String(error)}`));
    }
    const timeoutS = body["timeout_s"];
    return new Promise<Outcome>((resolve, reject) => {
      const onAbort = (): void => this.withdraw(key, signal?.reason);
      const waiting: Waiting = {
        session,
        id,
        fields,
        deadlineAt: typeof timeoutS === "number" ? performance.now() + timeoutS * 1000 : null,
        sentOn: null,
        resolve,
        reject,
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
    if (this.closed) {
      return;
    }
    this.closed = true;
    const closing = new GatewayClosed(1000, "the client was closed");
    for (const key of [...this.waiting.keys()]) {
      this.settle(key, closing);
    }
    this.failOpens(closing);
    if (this.retryTimer !== null) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    for (const socket of [this.socket, this.dialling]) {
      socket?.terminate();
    }
    this.socket = null;
    this.dialling = null;
  }

  private sendAsk(socket: WebSocket, waiting: Waiting): void {
    if (socket.readyState !== WebSocket.OPEN || waiting.sentOn === socket) {
      return; // sent by the next connection, or already on this one
    }
    const frame = { ...waiting.fields };
    if (waiting.deadlineAt !== null) {
      frame["timeout_s"] = Math.max(waiting.deadlineAt - performance.now(), 1) / 1000;
    }
    waiting.sentOn = socket;
    socket.send(JSON.stringify(frame));
  }

  /** The ask of `key` is given up on: it rejects now, and its request is withdrawn. */
  private withdraw(key: string, reason: unknown): void {
    const waiting = this.waiting.get(key);
    if (!waiting) {
      return;
    }
    this.withdrawing.set(key, { session: waiting.session, id: waiting.id });
    this.settle(key, abortError(reason));
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
    } else {
      waiting.resolve(result);
    }
  }

  private failOpens(error: Error): void {
    for (const opening of this.opening.splice(0)) {
      opening.reject(error);
    }
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
        return await this.dial();
      } catch (error) {
        if (error instanceof GatewayClosed && !RECONNECT_CLOSES.has(error.code)) {
          throw error;
        }
        const wait = Math.min(this.backoff.initialMs * 2 ** this.attempt, this.backoff.maxMs);
        this.attempt = Math.min(this.attempt + 1, 32);
        await new Promise<void>((resolve) => {
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            resolve();
          }, wait * (0.5 + Math.random() / 2));
        });
      }
    }
  }

  /** One connection attempt: the socket once open, with what it owes the gateway sent on it
   * (acknowledgements, withdrawals, then every waiting ask). */
  private dial(): Promise<WebSocket> {
    const headers: Record<string, string> = {};
    if (this.key !== undefined) {
      headers["Authorization"] = `Bearer ${this.key}`;
    }
    const socket = new WebSocket(this.socketUrl, { headers, handshakeTimeout: HANDSHAKE_MS });
    this.dialling = socket;
    return new Promise<WebSocket>((resolve, reject) => {
      let opened = false;
      let silence: NodeJS.Timeout | null = null;
      const heard = (): void => {
        if (silence !== null) {
          clearTimeout(silence);
        }
        silence = setTimeout(() => socket.terminate(), SILENCE_MS);
      };
      socket.on("open", () => {
        this.dialling = null;
        if (this.closed) {
          socket.terminate();
          return;
        }
        opened = true;
        this.socket = socket;
        heard();
        this.resend(socket);
        resolve(socket);
      });
      socket.on("ping", heard);
      socket.on("message", (data) => {
        heard();
        // A frame came: the connection works, and the next failure starts the backoff anew.
        this.attempt = 0;
        this.onFrame(socket, data.toString());
      });
      socket.on("unexpected-response", (_request, response) => {
        // The upgrade was refused (a wrong key, a web page's origin): final, as its close.
        const status = response.statusCode ?? 0;
        socket.terminate();
        reject(new GatewayClosed(status >= 400 && status < 500 ? 4401 : 1006, `HTTP ${status}`));
      });
      socket.on("close", (code, reason) => {
        if (silence !== null) {
          clearTimeout(silence);
        }
        if (this.dialling === socket) {
          this.dialling = null;
        }
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

  /** What a new connection owes the gateway, in order: the recent acknowledgements (so that a
   * re-ask of an acknowledged id is not answered with the old outcome), the withdrawals not
   * yet ended, then every waiting ask. */
  private resend(socket: WebSocket): void {
    const now = performance.now();
    for (const [key, at] of this.acked) {
      if (now - at > ACKS_KEPT_MS) {
        this.acked.delete(key);
        continue;
      }
      const [session, id] = key.split("\n");
      socket.send(JSON.stringify({ type: "ack", session, id }));
    }
    for (const { session, id } of this.withdrawing.values()) {
      socket.send(JSON.stringify({ type: "cancel", session, id }));
    }
    for (const waiting of this.waiting.values()) {
      this.sendAsk(socket, waiting);
    }
  }

  private onClose(socket: WebSocket, why: GatewayClosed): void {
    if (this.socket !== socket) {
      return; // an older socket, closing late: the current one is not its to settle
    }
    this.socket = null;
    if (this.closed) {
      return;
    }
    if (!RECONNECT_CLOSES.has(why.code)) {
      for (const key of [...this.waiting.keys()]) {
        this.settle(key, why);
      }
      this.failOpens(why);
      return;
    }
    // Opens not yet answered are said again on the next connection.
    const reopen = this.opening.splice(0);
    if (this.waiting.size > 0 || this.withdrawing.size > 0 || reopen.length > 0) {
      this.connected().then(
        (next) => {
          for (const opening of reopen) {
            this.opening.push(opening);
            next.send(JSON.stringify({ type: "open", session: opening.session }));
          }
        },
        (error: unknown) => {
          const failed = error instanceof Error ? error : new Error(String(error));
          for (const key of [...this.waiting.keys()]) {
            this.settle(key, failed);
          }
          for (const opening of reopen) {
            opening.reject(failed);
          }
        },
      );
    }
  }

  private remember(key: string): void {
    this.acked.delete(key);
    this.acked.set(key, performance.now());
    while (this.acked.size > ACKS_KEPT) {
      const oldest = this.acked.keys().next().value;
      if (oldest === undefined) {
        break;
      }
      this.acked.delete(oldest);
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
        const index = this.opening.findIndex((opening) => opening.session === session);
        const [opening] = index >= 0 ? this.opening.splice(index, 1) : [];
        const viewerUrl = typeof frame["viewer_url"] === "string" ? frame["viewer_url"] : "";
        opening?.resolve({ session, viewerUrl });
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
        this.withdrawing.delete(key);
        let outcome: Outcome;
        try {
          outcome = readOutcome(frame);
        } catch (error) {
          this.settle(key, error instanceof Error ? error : new Error(String(error)));
          return;
        }
        this.settle(key, outcome);
        // Handed over (or nobody here waits for it any more): the gateway may forget it.
        this.remember(key);
        if (socket.readyState === WebSocket.OPEN) {
          socket.send(JSON.stringify({ type: "ack", session, id }));
        }
        return;
      }
      case "error": {
        const code = typeof frame["code"] === "string" ? frame["code"] : "";
        const message = typeof frame["message"] === "string" ? frame["message"] : code;
        if (!session && !id) {
          // An `open` refused: the oldest one not yet answered.
          const opening = this.opening.shift();
          const errors = [{ path: "session", message, code }];
          opening?.reject(code === "forbidden" ? new Forbidden(errors) : new AskRejected(errors));
          return;
        }
        if (code === "not_found") {
          // A withdrawal of a request the gateway no longer holds: nothing is left to do.
          this.withdrawing.delete(key);
        }
        return;
      }
      default:
        return;
    }
  }
}
