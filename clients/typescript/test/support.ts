/** The real gateway binary on loopback, and a tab that answers, for the tests. */

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

import WebSocket from "ws";

import { Client } from "../src/client.js";

// The whole line: a chunk of output may end inside the address.
const LISTENING = /askgate listening on (http:\/\/\S+)\r?\n/;
const REPO = resolve(import.meta.dirname, "..", "..", "..", "..");

/** `$ASKGATE_BIN`, else the workspace's debug build. */
function binary(): string {
  const path = process.env["ASKGATE_BIN"] ?? join(REPO, "target", "debug", "askgate");
  if (!existsSync(path)) {
    throw new Error(
      `no askgate gateway binary at ${path}: build it with \`cargo build -p askgate\` or set ASKGATE_BIN`,
    );
  }
  return path;
}

/** `askgate serve` as a child process. */
/** The token usage a scripted model reports for each turn (the AI SDK's v4 model shape):
 * the tests do not look at it, the SDK requires it. */
export const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

export class Gateway {
  url = "";
  private child: ChildProcess | null = null;
  private listen = "127.0.0.1:0";
  readonly dataDir: string;

  constructor(
    private readonly store = "memory",
    private readonly extra: string[] = [],
  ) {
    this.dataDir = mkdtempSync(join(tmpdir(), "askgate-ts-"));
  }

  /** Starts it, resolved once it says where it listens (on the port it had, after a stop: a
   * port its last process still holds for a moment is tried again until it is free). */
  async start(): Promise<this> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        this.url = await this.spawnOnce(deadline);
        break;
      } catch (error) {
        const inUse = error instanceof Error && error.message.includes("in use");
        if (!inUse || this.listen.endsWith(":0") || Date.now() >= deadline) {
          throw error;
        }
        await new Promise((resolveSoon) => setTimeout(resolveSoon, 100));
      }
    }
    this.listen = this.url.replace("http://", "");
    return this;
  }

  private spawnOnce(deadline: number): Promise<string> {
    const child = spawn(
      binary(),
      ["serve", "--listen", this.listen, "--store", this.store, "--data-dir", this.dataDir, ...this.extra],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1", RUST_LOG: "warn" } },
    );
    this.child = child;
    return new Promise<string>((resolveUrl, reject) => {
      let said = "";
      const timer = setTimeout(
        () => reject(new Error(`the gateway did not start: ${said}`)),
        Math.max(deadline - Date.now(), 1),
      );
      const hear = (chunk: Buffer): void => {
        said += chunk.toString();
        const found = LISTENING.exec(said);
        if (found?.[1]) {
          clearTimeout(timer);
          resolveUrl(found[1]);
        }
      };
      child.stdout?.on("data", hear);
      child.stderr?.on("data", hear);
      child.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the gateway exited (${code}) before listening: ${said}`));
      });
    });
  }

  /** Stops it and waits for it to be gone (killed outright if it takes more than 10 s). */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      return;
    }
    await new Promise<void>((done) => {
      const hard = setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.once("exit", () => {
        clearTimeout(hard);
        done();
      });
      child.kill("SIGTERM");
    });
  }

  /** Stops it and removes its data. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** A tab on `session`, through the viewer link an agent's `open` gives. */
  async tab(session: string): Promise<Tab> {
    const agent = new Client(this.url);
    try {
      const { viewerUrl } = await agent.open(session);
      return await Tab.join(viewerUrl);
    } finally {
      agent.close();
    }
  }
}

/** `promise`, or a rejection once `ms` have passed without it: an await that would otherwise
 * hang the test run fails the test instead. */
export function within<T>(promise: Promise<T>, ms = 20_000, what = "the awaited event"): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not come within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A browser tab's connection to a session, as the page speaks it. */
export class Tab {
  private readonly frames: Record<string, unknown>[] = [];
  private readonly waiters: Array<() => void> = [];

  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data) => {
      const frame = JSON.parse(data.toString()) as Record<string, unknown>;
      this.frames.push(frame);
      // The requests open when the tab joined come in its snapshot: each is read as its
      // `request` frame would be.
      if (frame["type"] === "snapshot" && Array.isArray(frame["requests"])) {
        for (const request of frame["requests"] as unknown[]) {
          this.frames.push({ type: "request", request });
        }
      }
      for (const wake of this.waiters.splice(0)) {
        wake();
      }
    });
  }

  /** A tab on the session of `viewerUrl` (`…/s/{session}#k={key}`), once its snapshot came. */
  static async join(viewerUrl: string): Promise<Tab> {
    const url = new URL(viewerUrl);
    const session = url.pathname.split("/").pop() ?? "";
    const key = url.hash.replace(/^#k=/, "");
    const live = `ws://${url.host}/v1/sessions/${session}/live`;
    const socket = new WebSocket(live);
    await new Promise<void>((resolveOpen, reject) => {
      socket.once("open", () => resolveOpen());
      socket.once("error", reject);
    });
    const tab = new Tab(socket);
    socket.send(JSON.stringify({ type: "hello", key }));
    await tab.next("snapshot");
    return tab;
  }

  /** The next frame of `type` (and about request `id`, if given), waiting up to 20 s. */
  async next(type: string, id?: string): Promise<Record<string, unknown>> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const index = this.frames.findIndex(
        (frame) =>
          frame["type"] === type &&
          (id === undefined ||
            frame["id"] === id ||
            (frame["request"] as Record<string, unknown> | undefined)?.["id"] === id),
      );
      if (index >= 0) {
        return this.frames.splice(index, 1)[0] ?? {};
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`no ${type} frame${id ? ` about ${id}` : ""} within 20 s`);
      }
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
  }

  /** Sends an answer to request `id`. */
  answer(id: string, response: unknown): void {
    this.socket.send(JSON.stringify({ type: "answer", id, response }));
  }

  /** Declines request `id`. */
  decline(id: string): void {
    this.socket.send(JSON.stringify({ type: "decline", id }));
  }

  close(): void {
    this.socket.close();
  }
}

/** One HTTP call a `FakeGateway` received: answered when its handler (or the test) calls
 * `respond`, held open until then. */
export interface Hit {
  method: string;
  /** The path and query (`/v1/sessions/s/requests/r1?wait_s=50`). */
  path: string;
  body: unknown;
  respond(status: number, json?: unknown): void;
  /** Drops the connection without an answer, as a network failure does. */
  drop(): void;
}

/** A stand-in for the gateway on loopback, for what the real one does not do on demand (a post
 * it never answers, a proxy's 502): every call is recorded and handed to `handler`. */
export class FakeGateway {
  url = "";
  readonly hits: Hit[] = [];
  private readonly waiters: Array<() => void> = [];
  private readonly server: Server;

  constructor(handler: (hit: Hit) => void) {
    this.server = createServer((request: IncomingMessage, response: ServerResponse) => {
      let text = "";
      request.on("data", (chunk: Buffer) => (text += chunk.toString()));
      request.on("end", () => {
        let body: unknown = null;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          body = text;
        }
        const hit: Hit = {
          method: request.method ?? "",
          path: request.url ?? "",
          body,
          respond: (status, json) => {
            if (response.headersSent) {
              return;
            }
            if (json === undefined) {
              response.writeHead(status).end();
            } else {
              response.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(json));
            }
          },
          drop: () => request.socket.destroy(),
        };
        this.hits.push(hit);
        for (const wake of this.waiters.splice(0)) {
          wake();
        }
        handler(hit);
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((done) => this.server.listen(0, "127.0.0.1", done));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The calls of `method` whose path matches `pattern`. */
  matching(method: string, pattern: RegExp): Hit[] {
    return this.hits.filter((hit) => hit.method === method && pattern.test(hit.path));
  }

  /** Resolves once `count` calls of `method` to a path matching `pattern` have come (20 s at
   * most). */
  async received(method: string, pattern: RegExp, count = 1): Promise<Hit[]> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const found = this.matching(method, pattern);
      if (found.length >= count) {
        return found;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`${count} ${method} ${pattern} did not come within 20 s (came: ${found.length})`);
      }
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
  }

  /** Stops it, dropping the calls it still holds. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}
