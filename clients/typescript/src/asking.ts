/**
 * What every framework adapter shares: its options, and putting one request to a person over
 * the HTTP API — posted, long-polled until it ends (or the adapter's `wait` runs out), withdrawn
 * when the caller gives up, acknowledged only once the adapter has turned the outcome into the
 * framework's answer.
 */

import { NotAnswered, abortError } from "./errors.js";
import { type RequestState, ack, collect, postRequest, withdraw } from "./http.js";
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
   * acknowledged (ask again with the same id to collect the same request). */
  wait?: number;
  /** Who alone may answer (people, `group:NAME`). */
  answerers?: string[];
  /** Called with the posted requests before the wait: show people their `viewerUrl`. */
  onPosted?: (posted: PostedRequest[]) => void;
}

/** The longest single long-poll (the gateway allows 60 s). */
const POLL_S = 50;
/** How many polls in a row may fail on the network before the ask fails. */
const POLL_RETRIES = 4;

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
 * Puts `body` (with its `id`) to a person and returns `convert(outcome)` once it ends; the
 * outcome is acknowledged after `convert` returns. Aborting `signal` withdraws the request and
 * rejects with an `AbortError`.
 */
export async function askOne<T>(
  options: AdapterOptions,
  body: Record<string, unknown> & { id: string },
  convert: (outcome: Outcome) => T,
  signal?: AbortSignal,
): Promise<T> {
  return askMany(options, [body], ([outcome]) => convert(outcome as Outcome), signal);
}

/**
 * Puts every one of `bodies` (each with its `id`) to people, and returns `convert(outcomes)`
 * (in the bodies' order) once every request has ended; the outcomes are acknowledged after
 * `convert` returns. All are posted before any is waited for, so people see them together.
 * Aborting `signal` withdraws them all and rejects with an `AbortError`; past `options.wait`,
 * `NotAnswered` is thrown and nothing is withdrawn or acknowledged (asking again with the same
 * ids collects the same requests).
 */
export async function askMany<T>(
  options: AdapterOptions,
  bodies: ReadonlyArray<Record<string, unknown> & { id: string }>,
  convert: (outcomes: Outcome[]) => T,
  signal?: AbortSignal,
): Promise<T> {
  const { url, session } = options;
  const http = options.key === undefined ? {} : { key: options.key };
  if (signal?.aborted) {
    throw abortError(signal.reason);
  }
  const until = options.wait === undefined ? Infinity : Date.now() + options.wait * 1000;
  const states: RequestState[] = [];
  const polls = new AbortController();
  const onAbort = (): void => polls.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  const withdrawAll = async (): Promise<void> => {
    // Given up on: withdrawn at the gateway (within a bound), and told so.
    const bound = AbortSignal.timeout(10_000);
    for (const body of bodies.slice(0, Math.max(states.length, 1))) {
      await withdraw(url, session, body.id, { ...http, signal: bound }).catch(() => undefined);
    }
  };
  try {
    for (const body of bodies) {
      states.push(await postRequest(url, session, body, http));
      if (signal?.aborted) {
        // Given up on while it was being posted (the gateway shows a request before it
        // answers the post).
        await withdrawAll();
        throw abortError(signal.reason);
      }
    }
    const posted = states.flatMap((state, index) =>
      state.state === "pending" ? [{ session, id: bodies[index]!.id, viewerUrl: state.viewerUrl }] : [],
    );
    if (posted.length > 0) {
      options.onPosted?.(posted);
    }
    for (let index = 0; index < bodies.length; index += 1) {
      let failures = 0;
      const id = bodies[index]!.id;
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
          if (signal?.aborted) {
            await withdrawAll();
            throw abortError(signal.reason);
          }
          // The gateway unreachable for a moment (a restart, a dropped connection): polled
          // again, a few times, after a pause; the request stays open there meanwhile.
          failures += 1;
          if (!(error instanceof TypeError) || failures > POLL_RETRIES) {
            throw error;
          }
          await new Promise((resolveSoon) => setTimeout(resolveSoon, 250 * 2 ** failures));
        }
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  const converted = convert(states as Outcome[]);
  // The answer is the caller's now: a failed acknowledgement leaves the outcome kept at the
  // gateway until its retention ends, and loses nothing.
  for (const body of bodies) {
    await ack(url, session, body.id, http).catch(() => undefined);
  }
  return converted;
}
