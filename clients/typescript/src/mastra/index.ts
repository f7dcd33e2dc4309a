/**
 * askgate for Mastra (`@mastra/core` 1.x): a person answers what an agent's `generate()` run
 * suspended on, and the run goes on from there.
 *
 * ```ts
 * let result = await agent.generate("Clean up the staging database");
 * while (isApprovalSuspension(result)) {
 *   result = await approveToolCalls(agent, result, { url, session: "thread-1" });
 * }
 * ```
 *
 * Each function answers one suspension and returns the resumed run's result, which may be
 * suspended again; the caller loops. So the result of every resume is in the caller's hands: a
 * later ask that fails (past `wait`, aborted, withdrawn) leaves the caller the result to call
 * again with, never one whose call was answered and run already.
 *
 * - `approveToolCalls`: a run suspended for a tool call's approval (a tool with
 *   `requireApproval`, or `requireToolApproval` on the call; `finishReason: "suspended"`,
 *   `suspendPayload: { toolCallId, toolName, args }`). The call is put to a person (the
 *   `approval` dialect: approve or reject, with the tool's description when the agent has the
 *   tool), and the run is resumed with `agent.approveToolCallGenerate({ runId, toolCallId })` or
 *   `agent.declineToolCallGenerate({ runId, toolCallId, reason })`, the person's reason (if they
 *   gave one) being what the model reads. Mastra suspends on one call at a time, also when the
 *   model asked for several at once: the resumed run then suspends for the next approval, which
 *   the next call of the loop asks about.
 * - `answerAskUser`: a run suspended by Mastra's own `askUserTool` (`suspendPayload:
 *   { question, options?, selectionMode? }`). The question goes to a person (the `deepagents`
 *   dialect: free text without options, one choice, or several for `multi_select`; an option's
 *   description is shown under the question), and the run is resumed with
 *   `agent.resumeGenerate(answer, { runId, toolCallId })`: the text, the label picked (or the
 *   person's own text under "Other"), or the labels picked. Follow-up questions are asked by
 *   the next call of the loop (`while (isAskUserSuspension(result))`).
 *
 * A declined request rejects the call with `DECLINED_MESSAGE` (an `ask_user` is answered with
 * it), one whose deadline (`timeoutS`) passed with `TIMED_OUT_MESSAGE`. The outcome is
 * acknowledged only once the run has been resumed: a resume that fails leaves it at the
 * gateway, and calling again with the same result collects the same answer. Aborting
 * `options.signal` withdraws the request and rejects with an `AbortError`; a request withdrawn
 * by someone else throws `RequestWithdrawn` (calling again asks anew); past `options.wait`
 * `NotAnswered` is thrown and the run stays suspended: calling again with the same result
 * collects the same request. A result that is not suspended is returned as it is; one suspended
 * on something else is refused with a TypeError. Resuming needs the run's snapshot, so the agent
 * must belong to a `Mastra` with storage (`new Mastra({ agents, storage: new InMemoryStore()
 * })`).
 */

import { createHash } from "node:crypto";

import {
  type ApprovalCall,
  type ApprovalOptions,
  type CallDecision,
  DECLINED_MESSAGE,
  TIMED_OUT_MESSAGE,
  argsObject,
  askApproval,
} from "../approval.js";
import { type AdapterOptions, askOne, commonFields } from "../asking.js";
import { RequestWithdrawn } from "../errors.js";
import type { Outcome } from "../outcome.js";

export { DECLINED_MESSAGE, TIMED_OUT_MESSAGE };

/** What is read of a `generate()` result (Mastra's `FullOutput`). */
export interface MastraResult {
  finishReason?: unknown;
  runId?: string | undefined;
  suspendPayload?: unknown;
  messages?: unknown;
}

/** What identifies a suspended tool call to Mastra's resume calls. */
export interface ResumeTarget {
  runId: string;
  toolCallId?: string;
}

/** The agent methods `approveToolCalls` uses (a Mastra `Agent` has them). */
export interface ApprovingAgent {
  approveToolCallGenerate(options: ResumeTarget): Promise<unknown>;
  declineToolCallGenerate(options: ResumeTarget & { reason?: string }): Promise<unknown>;
  /** Read for the tools' descriptions, when there. */
  listTools?(): unknown;
}

/** The agent method `answerAskUser` uses (a Mastra `Agent` has it). */
export interface AskingAgent {
  resumeGenerate(resumeData: unknown, options: ResumeTarget): Promise<unknown>;
}

/** What both functions take besides the adapters' options. */
interface MastraExtras {
  /** Aborting it withdraws the request being asked. */
  signal?: AbortSignal;
  /** Merged into every resume call (`memory`, `maxSteps`, ... as `generate()` took them). */
  resumeOptions?: Record<string, unknown>;
}

/** The options of `approveToolCalls`. */
export type MastraApprovalOptions = ApprovalOptions & MastraExtras;

/** The options of `answerAskUser`. */
export type MastraAskOptions = AdapterOptions & MastraExtras;

/** A tool call a run is suspended on. */
interface Suspended {
  runId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  /** For a tool's own suspension, what it suspended with; undefined for an approval. */
  payload: unknown;
  kind: "approval" | "suspension";
}

/** What `askUserTool` suspends with. */
export interface AskUserPayload {
  question: string;
  options?: Array<{ label: string; description?: string }>;
  selectionMode?: "single_select" | "multi_select";
}

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** Whether the run's messages name `toolCallId` as waiting for an approval or as suspended
 * (Mastra keeps them in the assistant message's metadata); null when they say neither. */
function kindFromMessages(messages: unknown, toolCallId: string): Suspended["kind"] | null {
  if (!Array.isArray(messages)) {
    return null;
  }
  for (const message of [...messages].reverse()) {
    const metadata = record(record(record(message)?.["content"])?.["metadata"]);
    if (record(metadata?.["pendingToolApprovals"])?.[toolCallId] !== undefined) {
      return "approval";
    }
    if (record(metadata?.["suspendedTools"])?.[toolCallId] !== undefined) {
      return "suspension";
    }
  }
  return null;
}

/** The tool call `result` is suspended on, or null when it is not suspended. */
function suspendedOn(result: MastraResult): Suspended | null {
  if (result.finishReason !== "suspended") {
    return null;
  }
  const payload = record(result.suspendPayload);
  const toolCallId = payload?.["toolCallId"];
  const toolName = payload?.["toolName"];
  if (payload === null || typeof toolCallId !== "string" || typeof toolName !== "string") {
    throw new TypeError(
      `a result suspended without a tool call in its suspendPayload: ${JSON.stringify(result.suspendPayload)?.slice(0, 200)}`,
    );
  }
  if (typeof result.runId !== "string" || result.runId === "") {
    throw new TypeError(`the result suspended on ${toolName} (${toolCallId}) has no runId to resume`);
  }
  // An approval's payload is the call itself; a tool's suspension carries what the tool
  // suspended with under `suspendPayload`.
  const kind = kindFromMessages(result.messages, toolCallId) ?? ("suspendPayload" in payload ? "suspension" : "approval");
  return { runId: result.runId, toolCallId, toolName, args: payload["args"], payload: payload["suspendPayload"], kind };
}

function askUserPayload(value: unknown): AskUserPayload | null {
  const payload = record(value);
  if (payload === null || typeof payload["question"] !== "string") {
    return null;
  }
  const options = payload["options"];
  if (
    options !== undefined &&
    options !== null &&
    !(Array.isArray(options) && options.every((option) => typeof record(option)?.["label"] === "string"))
  ) {
    return null;
  }
  const mode = payload["selectionMode"];
  if (mode !== undefined && mode !== null && mode !== "single_select" && mode !== "multi_select") {
    return null;
  }
  return payload as unknown as AskUserPayload;
}

/** Whether `result` is suspended for a tool call's approval. */
export function isApprovalSuspension(result: MastraResult): boolean {
  try {
    return suspendedOn(result)?.kind === "approval";
  } catch {
    return false;
  }
}

/** Whether `result` is suspended by `askUserTool` (a suspension with its `{ question, options?,
 * selectionMode? }` payload). */
export function isAskUserSuspension(result: MastraResult): boolean {
  try {
    const suspended = suspendedOn(result);
    return suspended?.kind === "suspension" && askUserPayload(suspended.payload) !== null;
  } catch {
    return false;
  }
}

/** The agent's tools' descriptions, by the name the model calls them (and by tool id); empty
 * when the agent cannot list them. */
async function descriptions(agent: ApprovingAgent): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  try {
    const tools = record(await agent.listTools?.());
    for (const [name, tool] of Object.entries(tools ?? {})) {
      const description = record(tool)?.["description"];
      const id = record(tool)?.["id"];
      if (typeof description === "string" && description) {
        found.set(name, description);
        if (typeof id === "string" && !found.has(id)) {
          found.set(id, description);
        }
      }
    }
  } catch {
    // Tools resolved per request (a function of the request context) may not list here; the
    // card then goes without descriptions.
  }
  return found;
}

/**
 * Asks a person about the tool call a `generate()` result is suspended on for approval, resumes
 * the run with their decision, and returns the resumed result, which may be suspended again (on
 * the next call the model asked for, say): loop while `isApprovalSuspension(result)`. The
 * outcome is acknowledged only once the run has been resumed, so a resume that fails leaves it
 * at the gateway, and calling again with the same result collects the same decision.
 */
export async function approveToolCalls<R extends MastraResult>(
  agent: ApprovingAgent,
  result: R,
  options: MastraApprovalOptions,
): Promise<R> {
  const suspended = suspendedOn(result);
  if (suspended === null) {
    return result;
  }
  if (suspended.kind !== "approval") {
    throw new TypeError(
      `approveToolCalls: the run is suspended by ${suspended.toolName} (${suspended.toolCallId}) itself, not for its approval`,
    );
  }
  const call: ApprovalCall = { name: suspended.toolName, args: argsObject(suspended.args), decisions: ["approve", "reject"] };
  const description = (await descriptions(agent)).get(suspended.toolName);
  if (description !== undefined) {
    call.description = description;
  }
  const resume = async ([decision]: CallDecision[]): Promise<R> => {
    const target = { ...options.resumeOptions, runId: suspended.runId, toolCallId: suspended.toolCallId };
    if (decision?.type === "approve") {
      return (await agent.approveToolCallGenerate(target)) as R;
    }
    if (decision?.type === "reject") {
      const declined = decision.message === null ? target : { ...target, reason: decision.message };
      return (await agent.declineToolCallGenerate(declined)) as R;
    }
    throw new Error(`the gateway answered ${suspended.toolName} with ${decision?.type}, which was not offered`);
  };
  return askApproval(options, [{ key: `${suspended.runId}\u001f${suspended.toolCallId}`, call }], resume, options.signal);
}

/** The `deepagents` question for an `askUserTool` payload. */
export function askUserQuestion(payload: AskUserPayload): Record<string, unknown> {
  const options = payload.options ?? [];
  if (options.length === 0) {
    return { question: payload.question, type: "text", required: true };
  }
  // The dialect's choices are bare values: what an option means is said under the question.
  const meanings = options.flatMap((option) => (option.description ? [`- ${option.label}: ${option.description}`] : []));
  return {
    question: meanings.length > 0 ? `${payload.question}\n\n${meanings.join("\n")}` : payload.question,
    type: payload.selectionMode === "multi_select" ? "multi_select" : "multiple_choice",
    choices: options.map((option) => ({ value: option.label })),
    required: true,
  };
}

/** The answer `askUserTool` is resumed with for an ended `deepagents` request about `payload`. */
export function askUserAnswer(payload: AskUserPayload, outcome: Outcome): string | string[] {
  if (outcome.kind === "withdrawn" || outcome.response === null) {
    throw new RequestWithdrawn(outcome.session, outcome.id);
  }
  if (outcome.kind === "declined") {
    return DECLINED_MESSAGE;
  }
  if (outcome.kind === "timed_out") {
    return TIMED_OUT_MESSAGE;
  }
  const where = `request ${outcome.id} in session ${outcome.session}`;
  const [answer] = (record(outcome.response)?.["answers"] as unknown[] | undefined) ?? [];
  if (typeof answer !== "string") {
    throw new Error(`${where} came back without a text answer: ${JSON.stringify(outcome.response)?.slice(0, 200)}`);
  }
  if (payload.selectionMode !== "multi_select" || !payload.options?.length) {
    return answer;
  }
  // The dialect hands a multi-select answer over as deepagents does: its values as JSON text.
  let values: unknown;
  try {
    values = JSON.parse(answer);
  } catch {
    values = undefined;
  }
  if (!Array.isArray(values) || !values.every((value) => typeof value === "string")) {
    throw new Error(`${where} came back with a multi-select answer that is not a list of texts: ${answer.slice(0, 200)}`);
  }
  return values as string[];
}

/**
 * Asks a person the question a `generate()` result is suspended on by `askUserTool`, resumes the
 * run with their answer, and returns the resumed result, which may be suspended again (on a
 * follow-up question, say): loop while `isAskUserSuspension(result)`. The outcome is
 * acknowledged only once the run has been resumed, so a resume that fails leaves it at the
 * gateway, and calling again with the same result collects the same answer.
 */
export async function answerAskUser<R extends MastraResult>(
  agent: AskingAgent,
  result: R,
  options: MastraAskOptions,
): Promise<R> {
  const suspended = suspendedOn(result);
  if (suspended === null) {
    return result;
  }
  const payload = suspended.kind === "suspension" ? askUserPayload(suspended.payload) : null;
  if (payload === null) {
    throw new TypeError(
      `answerAskUser: the run is suspended on ${suspended.toolName} (${suspended.toolCallId}) ${
        suspended.kind === "approval" ? "for its approval" : "with a payload that is not askUserTool's"
      }`,
    );
  }
  const digest = createHash("sha256").update(`${suspended.runId}\u001f${suspended.toolCallId}`).digest("hex");
  const body = {
    id: `ask-user-${digest.slice(0, 40)}`,
    dialect: "deepagents",
    questions: [askUserQuestion(payload)],
    ...commonFields(options),
  };
  const resume = async (outcome: Outcome): Promise<R> =>
    (await agent.resumeGenerate(askUserAnswer(payload, outcome), {
      ...options.resumeOptions,
      runId: suspended.runId,
      toolCallId: suspended.toolCallId,
    })) as R;
  return askOne(options, body, resume, options.signal);
}
