/**
 * What every framework adapter shares: its options, and putting one request to a person over
 * the HTTP API — posted, long-polled until it ends (or the adapter's `wait` runs out), withdrawn
 * when the caller gives up, acknowledged only once the adapter has handed the framework its
 * answer.
 */

import { GatewayError, NotAnswered, abortError } from "./errors.js";
import { type HttpOptions, type RequestState, ack, collect, postRequest, withdraw } from "./http.js";
import type { Outcome } from "./outcome.js";

/** A request the gateway holds, to show a person where to answer it. */
export interface PostedRequest {
  session: string;
  id: string;
  /** The link people open to answer. */
  viewerUrl: string | null;
}

/** The options every adapter takes. */
export interface AdapterOptions {
  /** The gateway (`http://host:port`). */
  url: string;
  /** The askgate session the requests go to. */
  session: string;
  /** The agent key (`Authorization: Bearer KEY`); none for a gateway in local mode. */
  key?: string;
  /** The card's title. */
  title?: string;
  /** The gateway deadline of each request, in seconds. */
  timeoutS?: number;
  /** How long to wait here, in seconds: past it `NotAnswered` is thrown and nothing is
   * acknowledged (ask again with the same id to collect the same request); `askgate/mcp`
   * withdraws the request instead, and answers `cancel`. */
  wait?: number;
  /** Who alone may answer (people, `group:NAME`). */
  answerers?: string[];
  /** Called with the posted requests before the wait: show people their `viewerUrl`. */
  onPosted?: (posted: PostedRequest[]) => void;
}

/** The longest single long-poll (the gateway allows 60 s). */
const POLL_S = 50;
/** How many polls in a row may fail (the network, or a proxy or restarting gateway's 502, 503
 * or 504) before the ask fails. */
const POLL_RETRIES = 4;
/** The statuses a poll is tried again after: a proxy in front of the gateway, or a gateway
 * restarting or briefly unable to read its store. */
const RETRIED_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

/** The bounds of the HTTP calls around a wait, in milliseconds (changed only by tests). */
export const limits = {
  /** One post of a request. */
  postMs: 30_000,
  /** Each acknowledgement, and each withdrawal of a request given up on. */
  settleMs: 10_000,
  /** The pause after a poll that failed, doubled with each failure in a row. */
  backoffMs: 250,
};

/** The fields every adapter's body carries from `options`. */
export function commonFields(options: AdapterOptions): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (options.timeoutS !== undefined) {
    fields["timeout_s"] = options.timeoutS;
  }
  if (options.title !== undefined) {
    fields["title"] = options.title;
  }
  if (options.answerers !== undefined) {
    fields["answerers"] = options.answerers;
  }
  return fields;
}

/**
 * Puts `body` (with its `id`) to a person and returns `await convert(outcome)` once it ends;
 * the outcome is acknowledged once `convert` has resolved (see `askMany`). Aborting `signal`
 * withdraws the request and rejects with an `AbortError`.
 */
export async function askOne<T>(
  options: AdapterOptions,
  body: Record<string, unknown> & { id: string },
  convert: (outcome: Outcome) => T | Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  return askMany(options, [body], ([outcome]) => convert(outcome as Outcome), signal);
}

/** Resolves after `ms`, or as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    if (signal.aborted) {
      done();
      return;
    }
    const finish = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      done();
    };
    const timer = setTimeout(finish, ms);
    signal.addEventListener("abort", finish, { once: true });
  });
}

/** Whether a failed poll is tried again: the gateway unreachable for a moment (a restart, a
 * dropped connection), or a proxy's or restarting gateway's 502, 503 or 504. */
function retried(error: unknown): boolean {
  return error instanceof TypeError || (error instanceof GatewayError && RETRIED_STATUSES.has(error.status));
}

/**
 * Puts every one of `bodies` (each with its `id`) to people, and returns `await
 * convert(outcomes)` (in the bodies' order) once every request has ended. All are posted before
 * any is waited for, so people see them together.
 *
 * - The outcomes are acknowledged only once `convert` has resolved: an adapter hands the
 *   framework the answer inside `convert`, so a `convert` that throws (or rejects) leaves them
 *   at the gateway, and asking again with the same ids collects the same outcomes. A `withdrawn`
 *   outcome carries no answer and is acknowledged before `convert` is called, so asking again
 *   with its id asks anew.
 * - Aborting `signal` (also while a request is being posted) withdraws them all and rejects
 *   with an `AbortError`. A post that fails (refused, unreachable, or no answer within
 *   `limits.postMs`) withdraws the requests posted before it, then rethrows. A withdrawal that
 *   came back `withdrawn` is acknowledged too, so asking again asks anew; one that found an
 *   outcome already leaves it to be collected.
 * - Past `options.wait`, `NotAnswered` is thrown and nothing is withdrawn or acknowledged
 *   (asking again with the same ids collects the same requests).
 */
export async function askMany<T>(
  options: AdapterOptions,
  bodies: ReadonlyArray<Record<string, unknown> & { id: string }>,
  convert: (outcomes: Outcome[]) => T | Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const { url, session } = options;
  const http = options.key === undefined ? {} : { key: options.key };
  if (signal?.aborted) {
    throw abortError(signal.reason);
  }
  const until = options.wait === undefined ? Infinity : Date.now() + options.wait * 1000;
  const states: RequestState[] = [];
  const bounded = (): HttpOptions => ({ ...http, signal: AbortSignal.timeout(limits.settleMs) });
  const ackEach = async (ids: readonly string[]): Promise<void> => {
    // A failed acknowledgement leaves the outcome kept at the gateway until its retention
    // ends, and loses nothing.
    await Promise.all(ids.map((id) => ack(url, session, id, bounded()).catch(() => undefined)));
  };
  const withdrawEach = async (ids: readonly string[]): Promise<void> => {
    // Given up on: withdrawn at the gateway (each within a bound), and the withdrawal
    // acknowledged, since it holds no answer.
    await Promise.all(
      ids.map(async (id) => {
        const ended = await withdraw(url, session, id, bounded()).catch(() => null);
        if (ended?.state === "resolved" && ended.kind === "withdrawn") {
          await ack(url, session, id, bounded()).catch(() => undefined);
        }
      }),
    );
  };
  const ids = bodies.map((body) => body.id);
  for (const body of bodies) {
    const bound = AbortSignal.timeout(limits.postMs);
    try {
      states.push(
        await postRequest(url, session, body, {
          ...http,
          signal: signal === undefined ? bound : AbortSignal.any([signal, bound]),
        }),
      );
    } catch (error) {
      // The requests posted before it would wait for nobody: withdrawn. This one too, unless
      // the gateway refused it (it then holds none of it, or another request under its id).
      await withdrawEach(ids.slice(0, error instanceof GatewayError ? states.length : states.length + 1));
      if (signal?.aborted) {
        throw abortError(signal.reason);
      }
      if (bound.aborted) {
        const late = new Error(
          `posting request ${body.id} to session ${session}: the gateway did not answer within ${limits.postMs / 1000} s`,
          { cause: error },
        );
        late.name = "TimeoutError";
        throw late;
      }
      throw error;
    }
    if (signal?.aborted) {
      // Given up on as the post was answered.
      await withdrawEach(ids.slice(0, states.length));
      throw abortError(signal.reason);
    }
  }
  const posted = states.flatMap((state, index) =>
    state.state === "pending" ? [{ session, id: ids[index]!, viewerUrl: state.viewerUrl }] : [],
  );
  if (posted.length > 0) {
    options.onPosted?.(posted);
  }
  const polls = new AbortController();
  const onAbort = (): void => polls.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (let index = 0; index < bodies.length; index += 1) {
      let failures = 0;
      const id = ids[index]!;
      while (states[index]!.state === "pending") {
        const left = (until - Date.now()) / 1000;
        if (left <= 0) {
          throw new NotAnswered(session, id);
        }
        try {
          states[index] = await collect(url, session, id, {
            ...http,
            waitS: Math.max(Math.min(left, POLL_S), 0),
            signal: polls.signal,
          });
          failures = 0;
        } catch (error) {
          failures += 1;
          if (!signal?.aborted && (!retried(error) || failures > POLL_RETRIES)) {
            throw error;
          }
          // Polled again after a pause (cut short by an abort); the request stays open at the
          // gateway meanwhile.
          if (!signal?.aborted) {
            await pause(limits.backoffMs * 2 ** failures, polls.signal);
          }
          if (signal?.aborted) {
            await withdrawEach(ids);
            throw abortError(signal.reason);
          }
        }
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  const outcomes = states as Outcome[];
  const withdrawn = ids.filter((_, index) => outcomes[index]!.kind === "withdrawn");
  await ackEach(withdrawn);
  const converted = await convert(outcomes);
  await ackEach(ids.filter((id) => !withdrawn.includes(id)));
  return converted;
}
