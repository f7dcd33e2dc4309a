/**
 * The `approval` dialect, shared by the framework adapters that pause on tool calls: each
 * adapter turns what its framework paused on into keyed `ApprovalCall`s, `askApproval` puts
 * them to a person (at most `MAX_CALLS` a request: more are split over several requests, all
 * posted before any is waited for) and returns one `CallDecision` per call, in order, which the
 * adapter turns into the framework's own answer. A declined request and one whose deadline
 * passed come back from the gateway as a `reject` of every call, with the message
 * `DECLINED_MESSAGE` or `TIMED_OUT_MESSAGE`; a withdrawn one throws `RequestWithdrawn`.
 */

import { createHash } from "node:crypto";

import { type AdapterOptions, askMany, commonFields } from "./asking.js";
import { RequestWithdrawn } from "./errors.js";
import type { Outcome, OutcomeKind } from "./outcome.js";

/** The most calls the gateway takes in one `approval` request. */
export const MAX_CALLS = 20;

/** The message of every call's `reject` when the person declined the whole request. */
export const DECLINED_MESSAGE = "The person declined.";

/** The message of every call's `reject` when the request's deadline passed unanswered. */
export const TIMED_OUT_MESSAGE = "No answer in time.";

/** What a person may decide about a call. */
export type DecisionKind = "approve" | "edit" | "reject" | "respond";

/** Every decision kind, in the gateway's canonical order. */
export const DECISIONS: readonly DecisionKind[] = ["approve", "edit", "reject", "respond"];

/** One tool call to put to a person: what would run, and what they may decide. */
export interface ApprovalCall {
  name: string;
  args: Record<string, unknown>;
  description?: string;
  /** A JSON Schema for the arguments, which edits are checked against. */
  argsSchema?: Record<string, unknown>;
  /** What the person may decide (approve and reject when not given). */
  decisions?: readonly DecisionKind[];
}

/** What the person decided for one call. */
export interface CallDecision {
  type: DecisionKind;
  /** An edit's arguments (null otherwise). */
  args: Record<string, unknown> | null;
  /** A reject's reason (null when none was given) or a respond's text. */
  message: string | null;
  /** How the request ended: for `declined` and `timed_out` every decision is a reject. */
  outcome: OutcomeKind;
  /** Who decided, if the gateway knows. */
  user: string | null;
  /** The request the decision came in (for messages), when known. */
  request?: { session: string; id: string };
}

/** The options every approval adapter takes. */
export interface ApprovalOptions extends AdapterOptions {
  /** What every call is decided as if nobody answers before the deadline (needs `timeoutS`). */
  default?: "approve" | "reject";
  /** `false`: these calls are always asked (no remembered approval answers them). */
  rules?: boolean;
}

/** The request id for calls known by `keys` (tool call or interrupt ids): the same calls always
 * get the same id, so asking about them again collects the same request. */
export function requestId(keys: readonly string[]): string {
  return `approval-${createHash("sha256").update(keys.join("\u001f")).digest("hex").slice(0, 40)}`;
}

/** A tool call's arguments as the JSON object the gateway takes: an object as is, JSON text of
 * an object parsed; anything else as `{ arguments: value }`. */
export function argsObject(value: unknown): Record<string, unknown> {
  let parsed = value;
  if (typeof value === "string") {
    try {
      parsed = value.trim() ? JSON.parse(value) : {};
    } catch {
      return { arguments: value };
    }
  }
  if (parsed === null || parsed === undefined) {
    return {};
  }
  if (typeof parsed === "object" && !Array.isArray(parsed)) {
    return parsed as Record<string, unknown>;
  }
  return { arguments: parsed };
}

function callJson(call: ApprovalCall): Record<string, unknown> {
  const value: Record<string, unknown> = { name: call.name, args: call.args };
  if (call.description) {
    value["description"] = call.description;
  }
  if (call.argsSchema !== undefined) {
    value["args_schema"] = call.argsSchema;
  }
  const allowed = new Set(call.decisions ?? ["approve", "reject"]);
  value["decisions"] = DECISIONS.filter((kind) => allowed.has(kind));
  return value;
}

/** The `count` decisions of an ended `approval` request, in call order. */
export function decisionsFromOutcome(outcome: Outcome, count: number): CallDecision[] {
  if (outcome.kind === "withdrawn" || outcome.response === null) {
    throw new RequestWithdrawn(outcome.session, outcome.id);
  }
  const items = (outcome.response as { decisions?: unknown }).decisions;
  const where = `request ${JSON.stringify(outcome.id)} in session ${JSON.stringify(outcome.session)}`;
  if (!Array.isArray(items) || items.length !== count) {
    throw new Error(
      `${where} came back without one decision per call (${count} calls): ${JSON.stringify(outcome.response).slice(0, 300)}`,
    );
  }
  return items.map((item: unknown, index) => {
    const decision = (typeof item === "object" && item !== null ? item : {}) as Record<string, unknown>;
    const type = DECISIONS.find((kind) => kind === decision["type"]);
    const args = decision["args"];
    const message = decision["message"];
    if (type === undefined) {
      throw new Error(`${where}: decision ${index} is not one askgate knows: ${JSON.stringify(item).slice(0, 200)}`);
    }
    if (type === "edit" && (typeof args !== "object" || args === null || Array.isArray(args))) {
      throw new Error(`${where}: decision ${index} edits without args`);
    }
    if (type === "respond" && typeof message !== "string") {
      throw new Error(`${where}: decision ${index} responds without a message`);
    }
    return {
      type,
      args: type === "edit" ? (args as Record<string, unknown>) : null,
      message: typeof message === "string" && message ? message : null,
      outcome: outcome.kind,
      user: outcome.user,
      request: { session: outcome.session, id: outcome.id },
    };
  });
}

/**
 * Puts `calls` (each under its key: a tool call or interrupt id) to a person and returns
 * `await convert(decisions)`, one decision per call in order; the outcomes are acknowledged
 * once `convert` has resolved (hand the framework the decisions inside it: a `convert` that
 * throws leaves them to be collected again). With no calls, returns `convert([])` without
 * asking. Aborting `signal` withdraws the requests and rejects with an `AbortError`.
 */
export async function askApproval<T>(
  options: ApprovalOptions,
  calls: ReadonlyArray<{ key: string; call: ApprovalCall }>,
  convert: (decisions: CallDecision[]) => T | Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  if (calls.length === 0) {
    return await convert([]);
  }
  if (options.default !== undefined && options.timeoutS === undefined) {
    throw new TypeError("default needs timeoutS: a default answers only at a deadline");
  }
  const chunks: Array<ReadonlyArray<{ key: string; call: ApprovalCall }>> = [];
  for (let start = 0; start < calls.length; start += MAX_CALLS) {
    chunks.push(calls.slice(start, start + MAX_CALLS));
  }
  const bodies = chunks.map((chunk) => {
    const body: Record<string, unknown> & { id: string } = {
      id: requestId(chunk.map(({ key }) => key)),
      dialect: "approval",
      calls: chunk.map(({ call }) => callJson(call)),
      ...commonFields(options),
    };
    if (options.default !== undefined) {
      body["default"] = { decisions: chunk.map(() => ({ type: options.default })) };
    }
    if (options.rules === false) {
      body["rules"] = false;
    }
    return body;
  });
  return askMany(
    options,
    bodies,
    (outcomes) => convert(outcomes.flatMap((outcome, index) => decisionsFromOutcome(outcome, chunks[index]!.length))),
    signal,
  );
}
