/**
 * What every framework adapter shares: its options, and putting one request to a person over
 * the HTTP API — posted, long-polled until it ends (or the adapter's `wait` runs out), withdrawn
 * when the caller gives up, acknowledged only once the adapter has turned the outcome into the
 * framework's answer.
 */

import { NotAnswered, abortError } from "./errors.js";
import { ack, collect, postRequest, withdraw } from "./http.js";
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
  const { url, session } = options;
  const http = options.key === undefined ? {} : { key: options.key };
  if (signal?.aborted) {
    throw abortError(signal.reason);
  }
  let state = await postRequest(url, session, body, http);
  if (state.state === "pending") {
    options.onPosted?.([{ session, id: body.id, viewerUrl: state.viewerUrl }]);
  }
  const until = options.wait === undefined ? Infinity : Date.now() + options.wait * 1000;
  const polls = new AbortController();
  let failures = 0;
  const onAbort = (): void => polls.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  // Given up on while it was being posted (the gateway shows a request before it answers the
  // post): the first poll is cut short, and the request withdrawn.
  if (signal?.aborted) {
    polls.abort();
  }
  try {
    while (state.state === "pending") {
      const left = (until - Date.now()) / 1000;
      if (left <= 0) {
        throw new NotAnswered(session, body.id);
      }
      try {
        state = await collect(url, session, body.id, {
          ...http,
          waitS: Math.max(Math.min(left, POLL_S), 0),
          signal: polls.signal,
        });
        failures = 0;
      } catch (error) {
        if (signal?.aborted) {
          // Given up on: withdrawn at the gateway (within a bound), and told so.
          await withdraw(url, session, body.id, { ...http, signal: AbortSignal.timeout(10_000) }).catch(
            () => undefined,
          );
          throw abortError(signal.reason);
        }
        // The gateway unreachable for a moment (a restart, a dropped connection): polled again,
        // a few times, after a pause; the request stays open there meanwhile.
        failures += 1;
        if (!(error instanceof TypeError) || failures > POLL_RETRIES) {
          throw error;
        }
        await new Promise((resolveSoon) => setTimeout(resolveSoon, 250 * 2 ** failures));
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  const converted = convert(state);
  // The answer is the caller's now: a failed acknowledgement leaves the outcome kept at the
  // gateway until its retention ends, and loses nothing.
  await ack(url, session, body.id, http).catch(() => undefined);
  return converted;
}
