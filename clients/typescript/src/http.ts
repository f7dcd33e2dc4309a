/**
 * The HTTP API for paused runs: post a request, collect its outcome (long-polling), acknowledge
 * it. A run that stops while it waits asks again with the same id later and collects the same
 * request; it acknowledges only once it has used the outcome.
 */

import { GatewayError, readErrors } from "./errors.js";
import { type Outcome, readOutcome } from "./outcome.js";

/** Where the gateway is, and with which key. */
export interface HttpOptions {
  /** The agent key (`Authorization: Bearer KEY`); none for a gateway in local mode. */
  key?: string;
  /** Aborts the HTTP call (not the request at the gateway). */
  signal?: AbortSignal;
}

/** A request the gateway holds open. */
export interface Pending {
  state: "pending";
  id: string;
  /** Its deadline (Unix ms), if it has one. */
  deadlineMs: number | null;
  /** The link people open to answer. */
  viewerUrl: string | null;
}

/** What the gateway says of a request: still open, or how it ended. */
export type RequestState = Pending | ({ state: "resolved" } & Outcome);

function endpoint(url: string, path: string): string {
  return `${url.replace(/\/$/, "")}${path}`;
}

async function call(
  method: string,
  url: string,
  options: HttpOptions,
  what: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) {
    headers["Authorization"] = `Bearer ${options.key}`;
  }
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
  }
  const init: RequestInit = { method, headers };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
  }
  if (options.signal !== undefined) {
    init.signal = options.signal;
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let json: Record<string, unknown> = {};
  if (text) {
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = {};
    }
  }
  if (!response.ok) {
    const errors = readErrors(json["errors"]);
    if (errors.length === 0 && text) {
      // Not the gateway's JSON (a proxy's page, say): its text, for the message.
      errors.push({ path: "", message: text.slice(0, 500), code: "" });
    }
    throw new GatewayError(response.status, errors, what);
  }
  return { status: response.status, json };
}

function readState(json: Record<string, unknown>, session: string): RequestState {
  if (json["state"] === "pending") {
    const deadline = json["deadline_ms"];
    const viewer = json["viewer_url"];
    return {
      state: "pending",
      id: typeof json["id"] === "string" ? json["id"] : "",
      deadlineMs: typeof deadline === "number" ? deadline : null,
      viewerUrl: typeof viewer === "string" ? viewer : null,
    };
  }
  return { state: "resolved", ...readOutcome({ session, ...json }) };
}

/** `POST /v1/sessions/{session}/requests`: asks `body` (the wire ask's fields, snake_case, as
 * `Client.ask` takes them). Asking a known id with the same questions is idempotent: the
 * request as it stands. Throws `GatewayError` (with the gateway's paths) when refused. */
export async function postRequest(
  url: string,
  session: string,
  body: Record<string, unknown>,
  options: HttpOptions = {},
): Promise<RequestState> {
  const path = `/v1/sessions/${encodeURIComponent(session)}/requests`;
  const id = typeof body["id"] === "string" ? `request ${body["id"]}` : "a request";
  const { json } = await call("POST", endpoint(url, path), options, `posting ${id} to session ${session}`, body);
  return readState(json, session);
}

/** `GET /v1/sessions/{session}/requests/{id}?wait_s=N`: the request's state, waiting up to
 * `waitS` seconds (at most 60) for it to end. */
export async function collect(
  url: string,
  session: string,
  id: string,
  options: HttpOptions & { waitS?: number } = {},
): Promise<RequestState> {
  const wait = Math.max(0, Math.min(options.waitS ?? 0, 60));
  const path = `/v1/sessions/${encodeURIComponent(session)}/requests/${encodeURIComponent(id)}?wait_s=${wait}`;
  const { json } = await call("GET", endpoint(url, path), options, `collecting request ${id} of session ${session}`);
  return readState(json, session);
}

/** `POST /v1/sessions/{session}/requests/{id}/ack`: the outcome is used; the gateway forgets
 * it. Idempotent. */
export async function ack(
  url: string,
  session: string,
  id: string,
  options: HttpOptions = {},
): Promise<void> {
  const path = `/v1/sessions/${encodeURIComponent(session)}/requests/${encodeURIComponent(id)}/ack`;
  await call("POST", endpoint(url, path), options, `acknowledging request ${id} of session ${session}`);
}

/** `DELETE /v1/sessions/{session}/requests/{id}`: withdraws an open request; how it ended (a
 * request that had ended already is told as it ended). */
export async function withdraw(
  url: string,
  session: string,
  id: string,
  options: HttpOptions = {},
): Promise<RequestState> {
  const path = `/v1/sessions/${encodeURIComponent(session)}/requests/${encodeURIComponent(id)}`;
  const { json } = await call("DELETE", endpoint(url, path), options, `withdrawing request ${id} of session ${session}`);
  return readState({ state: "resolved", ...json }, session);
}
