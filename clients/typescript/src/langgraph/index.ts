/**
 * askgate for LangGraph (`@langchain/langgraph`) and LangChain 1 agents: a person answers what
 * a graph paused on, and the graph gets the `Command` that resumes it.
 *
 * ```ts
 * let result = await graph.invoke(input, config);
 * const command = await answerInterrupts(result.__interrupt__, { url, session: "thread-1" });
 * result = await graph.invoke(command, config);
 * ```
 *
 * Two kinds of pause are read:
 * - `answerInterrupts`: deepagents-style `ask_user` interrupts (`interrupt({ type: "ask_user",
 *   questions, tool_call_id })`). Each interrupt's questions go to the gateway as one request in
 *   the `deepagents` dialect (its id is the interrupt's id), and the graph is resumed with
 *   `new Command({ resume: { [interrupt.id]: payload } })`, the payload being what deepagents'
 *   own client sends: `{ answers }`, `{ status: "cancelled", answers }` for a decline, and
 *   `{ status: "error", error }` once the request's deadline (`timeoutS`) passed.
 * - `answerHitl`: the interrupts of LangChain's `humanInTheLoopMiddleware` (`{ actionRequests,
 *   reviewConfigs }`, which the npm `deepagents` package raises too). Every tool call in them is
 *   put to a person in one `approval` request (split past 20 calls), each offered exactly the
 *   decisions its review config allows (approve, edit, reject), an edit checked by the gateway
 *   against the call's argument schema (the review config's `argsSchema`, else the schema of
 *   the tool of that name in `options.tools`). One interrupt is resumed with
 *   `new Command({ resume: { decisions } })`, as LangChain documents it; several (parallel
 *   subagents, each paused by its own middleware) with one `{ decisions }` under each
 *   interrupt's id. A decline rejects every call with `DECLINED_MESSAGE`, a passed deadline
 *   with `TIMED_OUT_MESSAGE`.
 *
 * The middleware (langchain 1.5) runs none of a batch's approved or edited calls when any call
 * in the same batch is rejected: it keeps only the rejected calls on the model's message, with
 * their rejection, and sends the model back to think again (the turn's calls it did not ask
 * about stay on the message, unrun and without a result). The person sees the calls side by
 * side, but a reject of one means the others do not run in that turn.
 *
 * Aborting `options.signal` withdraws the requests and rejects with an `AbortError`; a request
 * withdrawn by someone else throws `RequestWithdrawn` (asking again about the same interrupts
 * asks anew); past `options.wait` `NotAnswered` is
 * thrown and nothing is acknowledged: calling again with the same interrupts collects the same
 * requests.
 */

import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { Command } from "@langchain/langgraph";

import {
  type ApprovalCall,
  type ApprovalOptions,
  type CallDecision,
  DECLINED_MESSAGE,
  type DecisionKind,
  TIMED_OUT_MESSAGE,
  argsObject,
  askApproval,
} from "../approval.js";
import { type AdapterOptions, askMany, commonFields } from "../asking.js";
import { RequestWithdrawn } from "../errors.js";
import type { Outcome } from "../outcome.js";

export { DECLINED_MESSAGE, TIMED_OUT_MESSAGE };

/** What is read of a LangGraph `Interrupt` (`result.__interrupt__[i]`). */
export interface InterruptLike {
  id?: string | undefined;
  value?: unknown;
}

/** A tool of the agent, as `answerHitl` reads it: its name, and its schema (Zod, Standard
 * Schema or JSON Schema), which edits of its calls are checked against. */
export interface ToolLike {
  name: string;
  schema?: unknown;
}

/** The options of `answerInterrupts`. */
export type InterruptOptions = AdapterOptions & {
  /** Aborting it withdraws the requests. */
  signal?: AbortSignal;
};

/** The options of `answerHitl`. */
export type HitlOptions = ApprovalOptions & {
  /** The agent's tools: each call's argument schema, for the calls whose review config has no
   * `argsSchema`. */
  tools?: readonly ToolLike[];
  /** Aborting it withdraws the requests. */
  signal?: AbortSignal;
};

/** The `Command` the functions return: it only resumes (no update, no goto), so that any graph's
 * `invoke` takes it. */
export type ResumeCommand = Command<Record<string, unknown>, Record<string, never>, never>;

/** A decision of `humanInTheLoopMiddleware` (langchain's `Decision`). */
export type HitlDecision =
  | { type: "approve" }
  | { type: "edit"; editedAction: { name: string; args: Record<string, unknown> } }
  | { type: "reject"; message?: string };

/** The decisions the installed middleware knows (its `DecisionType`); askgate's `respond` is not
 * one of them. */
const HITL_KINDS: readonly DecisionKind[] = ["approve", "edit", "reject"];

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function list<T>(interrupts: T | readonly T[]): T[] {
  return Array.isArray(interrupts) ? [...(interrupts as readonly T[])] : [interrupts as T];
}

/** `interrupt.id`, or a TypeError naming the interrupt (by position) that has none. */
function idOf(interrupt: InterruptLike, index: number, what: string): string {
  if (typeof interrupt.id !== "string" || interrupt.id === "") {
    throw new TypeError(`${what}: interrupt ${index} has no id (pass the interrupts of result.__interrupt__ as they came)`);
  }
  return interrupt.id;
}

function shown(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}

// ---- ask_user ---------------------------------------------------------------------------

/** Whether an interrupt carries a deepagents `ask_user` payload (`{ type: "ask_user",
 * questions: [...] }`). */
export function isAskUser(interrupt: InterruptLike): boolean {
  const value = record(interrupt.value);
  return value !== null && value["type"] === "ask_user" && Array.isArray(value["questions"]);
}

/** The resume payload for an ended `deepagents` request: the gateway's `response`, built as
 * deepagents' own client builds it. A withdrawn request has none: `RequestWithdrawn`. */
export function resumePayload(outcome: Outcome): unknown {
  if (outcome.kind === "withdrawn" || outcome.response === null) {
    throw new RequestWithdrawn(outcome.session, outcome.id);
  }
  return outcome.response;
}

/**
 * Puts the questions of deepagents `ask_user` interrupts to people (one request each, all
 * posted before any is waited for) and returns the `Command` that resumes the graph with their
 * answers, each under its interrupt's id. Interrupts of another kind are refused with a
 * TypeError (pick these with `isAskUser`).
 */
export async function answerInterrupts(
  interrupts: InterruptLike | readonly InterruptLike[],
  options: InterruptOptions,
): Promise<ResumeCommand> {
  const items = list(interrupts);
  if (items.length === 0) {
    throw new TypeError("answerInterrupts: no interrupts were given");
  }
  const bodies = items.map((interrupt, index) => {
    const id = idOf(interrupt, index, "answerInterrupts");
    if (!isAskUser(interrupt)) {
      throw new TypeError(
        `answerInterrupts: interrupt ${id} is not a deepagents ask_user interrupt (pick them with isAskUser): ${shown(interrupt.value)}`,
      );
    }
    const questions = (interrupt.value as Record<string, unknown>)["questions"];
    return { id, dialect: "deepagents", questions, ...commonFields(options) };
  });
  return askMany(
    options,
    bodies,
    (outcomes) =>
      new Command({
        resume: Object.fromEntries(outcomes.map((outcome, index) => [bodies[index]!.id, resumePayload(outcome)])),
      }),
    options.signal,
  );
}

// ---- humanInTheLoopMiddleware -----------------------------------------------------------

/** Whether an interrupt is `humanInTheLoopMiddleware`'s (`{ actionRequests, reviewConfigs }`). */
export function isHitl(interrupt: InterruptLike): boolean {
  const value = record(interrupt.value);
  return value !== null && Array.isArray(value["actionRequests"]) && Array.isArray(value["reviewConfigs"]);
}

/** One middleware interrupt and the calls it asks about. */
interface Reviewed {
  id: string;
  calls: ApprovalCall[];
}

/** `schema` with every local `$ref` replaced by what it points at and `$defs` dropped, so that
 * the gateway checks edits against all of it (it reads no `$ref`); `null` for a reference that
 * cannot be inlined (a recursive one, or one into another document). */
export function inlineRefs(schema: unknown): Record<string, unknown> | null {
  const root = record(schema);
  if (root === null) {
    return null;
  }
  const pointer = (ref: string): unknown => {
    if (!ref.startsWith("#")) {
      return undefined;
    }
    let node: unknown = root;
    for (const raw of ref === "#" ? [] : ref.slice(1).split("/").slice(1)) {
      let part = raw;
      try {
        part = decodeURIComponent(raw);
      } catch {
        // Not percent-encoded after all: read as written.
      }
      part = part.replaceAll("~1", "/").replaceAll("~0", "~");
      if (Array.isArray(node) && /^\d+$/.test(part)) {
        node = node[Number(part)];
      } else {
        node = record(node)?.[part];
      }
      if (node === undefined) {
        return undefined;
      }
    }
    return node;
  };
  const inline = (node: unknown, seen: ReadonlySet<string>): unknown => {
    if (Array.isArray(node)) {
      return node.map((item) => inline(item, seen));
    }
    const object = record(node);
    if (object === null) {
      return node;
    }
    const rest: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(object)) {
      if (key !== "$ref" && key !== "$defs" && key !== "definitions") {
        rest[key] = inline(value, seen);
      }
    }
    const ref = object["$ref"];
    if (typeof ref !== "string") {
      return rest;
    }
    const target = pointer(ref);
    if (seen.has(ref) || target === undefined) {
      throw new RangeError(ref);
    }
    const inlined = inline(target, new Set([...seen, ref]));
    if (Object.keys(rest).length === 0) {
      return inlined;
    }
    const merged = record(inlined);
    return merged === null ? { allOf: [inlined, rest] } : { ...merged, ...rest };
  };
  try {
    return record(inline(root, new Set()));
  } catch (error) {
    if (error instanceof RangeError) {
      return null;
    }
    throw error;
  }
}

/** The argument schema of each of `tools`, by name: what the tool accepts as input (a Zod
 * default makes a field optional), its `$ref`s inlined. A tool whose schema cannot be read
 * gets none (its edits are then checked as a JSON object only). */
function toolSchemas(tools: readonly ToolLike[] | undefined): Map<string, Record<string, unknown>> {
  const schemas = new Map<string, Record<string, unknown>>();
  for (const tool of tools ?? []) {
    if (tool.schema === undefined || schemas.has(tool.name)) {
      continue;
    }
    let schema: unknown;
    try {
      schema = toJsonSchema(tool.schema as Parameters<typeof toJsonSchema>[0], { io: "input" });
    } catch {
      continue;
    }
    const inlined = inlineRefs(schema);
    if (inlined !== null) {
      schemas.set(tool.name, inlined);
    }
  }
  return schemas;
}

function reviewedCalls(
  id: string,
  value: Record<string, unknown>,
  schemas: ReadonlyMap<string, Record<string, unknown>>,
): ApprovalCall[] {
  const actions = value["actionRequests"] as unknown[];
  const configs = (value["reviewConfigs"] as unknown[]).flatMap((config) => {
    const object = record(config);
    return object === null ? [] : [object];
  });
  const byName = new Map<unknown, Record<string, unknown>>();
  for (const config of configs) {
    if (!byName.has(config["actionName"])) {
      byName.set(config["actionName"], config);
    }
  }
  return actions.map((raw, index) => {
    const action = record(raw);
    const name = action?.["name"];
    if (action === null || typeof name !== "string" || name === "") {
      throw new TypeError(`answerHitl: interrupt ${id}: actionRequests[${index}] has no tool name: ${shown(raw)}`);
    }
    // The middleware writes one review config per action, in order; one config per tool name
    // is read too.
    const positional = configs.length === actions.length ? configs[index] : undefined;
    const config = positional?.["actionName"] === name ? positional : byName.get(name);
    if (config === undefined) {
      throw new TypeError(`answerHitl: interrupt ${id}: no reviewConfigs entry for actionRequests[${index}] (${name})`);
    }
    const allowed = config["allowedDecisions"];
    const decisions = HITL_KINDS.filter((kind) => Array.isArray(allowed) && allowed.includes(kind));
    if (decisions.length === 0) {
      throw new TypeError(
        `answerHitl: interrupt ${id}: the review config of ${name} allows no decision askgate knows: ${shown(allowed)}`,
      );
    }
    const call: ApprovalCall = { name, args: argsObject(action["args"]), decisions };
    const description = action["description"];
    if (typeof description === "string" && description) {
      call.description = description;
    }
    const argsSchema = config["argsSchema"] !== undefined ? inlineRefs(config["argsSchema"]) : schemas.get(name);
    if (argsSchema) {
      call.argsSchema = argsSchema;
    }
    return call;
  });
}

/** The middleware's decision for what a person decided about `call` (of the interrupt whose
 * id is `interrupt`, named with the request in errors). A decline or a passed deadline rejects
 * every call: for a call that may not be rejected, that is an Error naming the call, its
 * interrupt and its request (nothing is acknowledged, so asking again collects the same
 * request). */
export function hitlDecision(call: ApprovalCall, decision: CallDecision, interrupt?: string): HitlDecision {
  const where = [
    interrupt === undefined ? [] : [`interrupt ${interrupt}`],
    decision.request === undefined ? [] : [`request ${decision.request.id} of session ${decision.request.session}`],
  ].flat();
  const prefix = where.length > 0 ? `${where.join(", ")}: ` : "";
  const allowed = call.decisions ?? ["approve", "reject"];
  if (!allowed.includes(decision.type)) {
    if (decision.outcome !== "answered") {
      throw new Error(
        `${prefix}the request was ${decision.outcome.replace("_", " ")}, which rejects every call, but ${call.name} allows only ${allowed.join(", ")}`,
      );
    }
    throw new Error(`${prefix}the gateway answered ${call.name} with ${decision.type}, which its review config does not allow`);
  }
  switch (decision.type) {
    case "approve":
      return { type: "approve" };
    case "edit":
      return { type: "edit", editedAction: { name: call.name, args: decision.args ?? {} } };
    case "reject":
      return decision.message === null ? { type: "reject" } : { type: "reject", message: decision.message };
    default:
      throw new Error(`${prefix}the gateway answered ${call.name} with ${decision.type}, which the middleware does not know`);
  }
}

/**
 * Puts every tool call of `humanInTheLoopMiddleware` interrupts to a person (one `approval`
 * request for up to 20 calls) and returns the `Command` that resumes the agent with their
 * decisions: `{ decisions }` for one interrupt, one `{ decisions }` under each interrupt's id for
 * several. Interrupts of another kind are refused with a TypeError (pick these with `isHitl`).
 */
export async function answerHitl(
  interrupts: InterruptLike | readonly InterruptLike[],
  options: HitlOptions,
): Promise<ResumeCommand> {
  const items = list(interrupts);
  if (items.length === 0) {
    throw new TypeError("answerHitl: no interrupts were given");
  }
  const schemas = toolSchemas(options.tools);
  const reviewed: Reviewed[] = items.map((interrupt, index) => {
    const id = idOf(interrupt, index, "answerHitl");
    if (!isHitl(interrupt)) {
      throw new TypeError(
        `answerHitl: interrupt ${id} is not a humanInTheLoopMiddleware interrupt (pick them with isHitl): ${shown(interrupt.value)}`,
      );
    }
    return { id, calls: reviewedCalls(id, interrupt.value as Record<string, unknown>, schemas) };
  });
  // Each call is known by its interrupt and its place in it, so the same interrupts always make
  // the same request.
  const keyed = reviewed.flatMap(({ id, calls }) => calls.map((call, index) => ({ key: `${id}#${index}`, call })));
  return askApproval(
    options,
    keyed,
    (decisions) => {
      let position = 0;
      const resumes = reviewed.map(({ id, calls }) => {
        const mine = decisions.slice(position, position + calls.length);
        position += calls.length;
        return [id, { decisions: calls.map((call, index) => hitlDecision(call, mine[index]!, id)) }] as const;
      });
      if (resumes.length === 1) {
        return new Command({ resume: resumes[0]![1] });
      }
      return new Command({ resume: Object.fromEntries(resumes) });
    },
    options.signal,
  );
}
