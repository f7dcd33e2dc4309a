/**
 * askgate for the Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`): a person answers the
 * agent's `AskUserQuestion`, and may approve, edit or reject its other tool calls.
 *
 * ```ts
 * for await (const message of query({
 *   prompt: "Set up the service",
 *   options: { canUseTool: canUseTool({ url, session: "thread-1", approveTools: ["Bash"] }) },
 * })) { ... }
 * ```
 *
 * The CLI asks its host before a tool runs (the SDK's `canUseTool` callback), and
 * `AskUserQuestion` comes the same way: its questions are in the tool's input, and the answers
 * go back as the input the tool runs with. The callback `canUseTool` returns:
 * - `AskUserQuestion`: the 1-4 questions are put to a person (the `claude` dialect). Their
 *   answer is `{ behavior: "allow", updatedInput }`: the tool's input as the CLI sent it, with
 *   `answers` keyed by question text (a label, a multi-select's labels joined with ", ", or the
 *   person's own text), and `response` when they wrote free text instead of picking. A decline
 *   is `{ behavior: "deny", message: "The person declined to answer." }`, a passed deadline
 *   (`timeoutS`) a deny with `"No answer in time."`;
 * - any other tool, when `approveTools` is `true` (every tool) or a list of tool names that
 *   holds it (exact names, `Bash`, `mcp__github__create_issue`): the call is put to a person
 *   (the `approval` dialect: the tool, its input, and the CLI's prompt sentence as the
 *   description), who approves (allow, the input unchanged), edits (allow with their input) or
 *   rejects it (deny with their reason, `REJECTED_MESSAGE` when they gave none); a decline is
 *   a deny with `"The person declined."`, a passed deadline with `"No answer in time."`;
 * - any other tool otherwise: allowed with its input unchanged, nobody asked.
 *
 * A request someone else withdrew before it was answered (an operator, the session ending) is a
 * deny with `WITHDRAWN_MESSAGE`. When the SDK aborts the callback (the CLI cancelled the
 * permission request, or the query was closed), the request is withdrawn and the callback
 * rejects with an `AbortError`. A gateway that refuses the request or cannot be reached, and a
 * `wait` that runs out (`NotAnswered`), make the callback reject: the SDK hands the CLI the
 * error. Request ids come from the SDK's `toolUseID`, so a callback retried for the same tool
 * call collects the same request instead of asking again.
 *
 * Edits are checked by the gateway as a JSON object only: the SDK does not hand the callback
 * the tool's input schema.
 */

import { createHash, randomUUID } from "node:crypto";

import { type AdapterOptions, askOne, commonFields } from "../asking.js";
import {
  type ApprovalCall,
  type CallDecision,
  DECLINED_MESSAGE,
  type DecisionKind,
  TIMED_OUT_MESSAGE,
  askApproval,
} from "../approval.js";
import { RequestWithdrawn } from "../errors.js";
import type { Outcome } from "../outcome.js";

export { DECLINED_MESSAGE, TIMED_OUT_MESSAGE };

/** The dialect `AskUserQuestion` is asked in. */
export const DIALECT = "claude";

/** The tool whose questions are put to the person. */
export const ASK_USER_QUESTION = "AskUserQuestion";

/** The deny message of an `AskUserQuestion` the person declined (the gateway's own). */
export const QUESTION_DECLINED_MESSAGE = "The person declined to answer.";

/** The deny message of a call the person rejected without giving a reason. */
export const REJECTED_MESSAGE = "The person rejected this tool call.";

/** The deny message of a request someone withdrew before anyone answered it. */
export const WITHDRAWN_MESSAGE = "The request was withdrawn before anyone answered.";

/** What a person may decide about a tool call: the SDK has no place for a `respond`. */
const DECISIONS: readonly DecisionKind[] = ["approve", "edit", "reject"];

/** What the answer adds to `AskUserQuestion`'s input; the rest is kept as the CLI sent it. */
const ANSWER_KEYS = ["answers", "response", "annotations"] as const;

/** The options of `canUseTool`: the adapters' own, and which other tools a person approves. */
export type ClaudeOptions = AdapterOptions & {
  /** `true`: every tool call (but `AskUserQuestion`, which is always asked) is put to a
   * person; a list: the calls of the tools it names (exact names); `false` or absent: other
   * tools are allowed unasked. */
  approveTools?: boolean | readonly string[];
};

/** What the SDK passes the callback as its third argument (the fields used here). */
export interface ToolPermissionContext {
  /** Aborted when the CLI cancels the permission request or the query closes. */
  signal: AbortSignal;
  /** The tool call's id: the same call is the same request. */
  toolUseID?: string | undefined;
  /** The CLI's prompt sentence ("Claude wants to run rm -rf build/"). */
  title?: string | undefined;
  /** The CLI's subtitle for the prompt. */
  description?: string | undefined;
}

/** The SDK's `PermissionResult`, as this callback gives it. */
export type PermissionResult =
  | { behavior: "allow"; updatedInput: Record<string, unknown> }
  | { behavior: "deny"; message: string };

/** The callback, assignable to the SDK's `CanUseTool`. */
export type CanUseToolCallback = (
  toolName: string,
  input: Record<string, unknown>,
  context: ToolPermissionContext,
) => Promise<PermissionResult>;

/** The request id for a question or call known by `key` (a tool call id): the same key always
 * gets the same id (the Python client's, too); without one, a fresh id. */
export function derivedId(prefix: string, key: string | undefined): string {
  if (!key) {
    return `${prefix}-${randomUUID().replaceAll("-", "")}`;
  }
  return `${prefix}-${createHash("sha256").update(key).digest("hex").slice(0, 40)}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The body of the `claude` request that asks `AskUserQuestion` `input`. */
export function questionBody(
  input: Record<string, unknown>,
  options: AdapterOptions,
  id: string,
): Record<string, unknown> & { id: string } {
  // The questions go as the model wrote them: the gateway checks them as the CLI's schema does,
  // and refuses them with their paths.
  return { id, dialect: DIALECT, questions: input["questions"], ...commonFields(options) };
}

/** `answers` as the SDK types them, `{ [question]: string }`: a multi-select's list of labels
 * joined with ", " (as the tool itself joins a list). */
function answerTexts(answers: unknown, where: string): Record<string, string> {
  if (answers === undefined || answers === null) {
    return {};
  }
  if (!isObject(answers)) {
    throw new Error(`${where}: answers is not an object keyed by question text: ${JSON.stringify(answers).slice(0, 300)}`);
  }
  const texts: Record<string, string> = {};
  for (const [question, answer] of Object.entries(answers)) {
    if (typeof answer === "string") {
      texts[question] = answer;
    } else if (Array.isArray(answer) && answer.every((item) => typeof item === "string")) {
      texts[question] = answer.join(", ");
    } else {
      throw new Error(
        `${where}: the answer to ${JSON.stringify(question)} is neither text nor a list of texts: ${JSON.stringify(answer).slice(0, 300)}`,
      );
    }
  }
  return texts;
}

/**
 * The permission result for an ended `claude` request about `AskUserQuestion` `input`. The
 * outcome's `response` is `{ behavior: "allow", updated_input }` or `{ behavior: "deny",
 * message }`; an allow runs the tool with `input` and the answer's `answers` (and `response`)
 * in it, a withdrawn request (no response) is a deny with `WITHDRAWN_MESSAGE`. Throws for any
 * other response.
 */
export function questionResult(outcome: Outcome, input: Record<string, unknown>): PermissionResult {
  const response = outcome.response;
  if (response === null || response === undefined) {
    return { behavior: "deny", message: WITHDRAWN_MESSAGE };
  }
  const where = `request ${JSON.stringify(outcome.id)} in session ${JSON.stringify(outcome.session)}`;
  const behavior = isObject(response) ? response["behavior"] : undefined;
  if (behavior === "allow" && isObject(response)) {
    const updated = response["updated_input"];
    if (!isObject(updated)) {
      throw new Error(`${where}: an allow without updated_input: ${JSON.stringify(response).slice(0, 300)}`);
    }
    // The questions stay the input's own (the CLI refuses an input whose shown fields changed):
    // only what the person added is taken from the answer.
    const updatedInput: Record<string, unknown> = { ...input };
    for (const name of ANSWER_KEYS) {
      if (updated[name] !== undefined && updated[name] !== null) {
        updatedInput[name] = name === "answers" ? answerTexts(updated[name], where) : updated[name];
      }
    }
    return { behavior: "allow", updatedInput };
  }
  if (behavior === "deny" && isObject(response)) {
    const message = response["message"];
    const fallback = outcome.kind === "timed_out" ? TIMED_OUT_MESSAGE : QUESTION_DECLINED_MESSAGE;
    return { behavior: "deny", message: typeof message === "string" && message ? message : fallback };
  }
  throw new Error(`${where} came back without a permission result: ${JSON.stringify(response).slice(0, 300)}`);
}

/** The permission result for what the person decided about the call whose input is `input`. */
export function approvalResult(decision: CallDecision, input: Record<string, unknown>): PermissionResult {
  switch (decision.type) {
    case "approve":
      return { behavior: "allow", updatedInput: input };
    case "edit":
      return { behavior: "allow", updatedInput: decision.args ?? {} };
    case "reject": {
      // A decline and a passed deadline come as a reject of the call, with the gateway's
      // message; one without a message still says which it was.
      const fallback =
        decision.outcome === "declined"
          ? DECLINED_MESSAGE
          : decision.outcome === "timed_out"
            ? TIMED_OUT_MESSAGE
            : REJECTED_MESSAGE;
      return { behavior: "deny", message: decision.message ?? fallback };
    }
    default:
      throw new Error(`the gateway answered a tool approval with ${JSON.stringify(decision.type)}, which the SDK cannot take`);
  }
}

/** The card's description of a call: the CLI's prompt sentence and subtitle, each once. */
function callDescription(context: ToolPermissionContext): string | undefined {
  const parts = [context.title, context.description].filter(
    (text): text is string => typeof text === "string" && text.trim() !== "",
  );
  const text = [...new Set(parts)].join("\n");
  return text || undefined;
}

/** Whether `approveTools` puts `toolName`'s calls to a person. */
function approves(approveTools: ClaudeOptions["approveTools"], toolName: string): boolean {
  return approveTools === true || (Array.isArray(approveTools) && approveTools.includes(toolName));
}

/**
 * The `canUseTool` callback for `query({ options: { canUseTool } })`: `AskUserQuestion` is
 * answered by a person in askgate session `options.session`; the calls of the tools
 * `options.approveTools` names (every tool for `true`) are approved, edited or rejected by one;
 * every other call is allowed as it is.
 */
export function canUseTool(options: ClaudeOptions): CanUseToolCallback {
  const approveTools = options.approveTools ?? false;
  if (
    typeof approveTools !== "boolean" &&
    !(Array.isArray(approveTools) && approveTools.every((name: unknown) => typeof name === "string"))
  ) {
    throw new TypeError(
      `canUseTool: approveTools must be true, false or a list of tool names, got ${JSON.stringify(approveTools)}`,
    );
  }

  const askQuestions = (input: Record<string, unknown>, context: ToolPermissionContext): Promise<PermissionResult> => {
    const body = questionBody(input, options, derivedId(DIALECT, context.toolUseID));
    return askOne(options, body, (outcome) => questionResult(outcome, input), context.signal);
  };

  const approve = async (
    toolName: string,
    input: Record<string, unknown>,
    context: ToolPermissionContext,
  ): Promise<PermissionResult> => {
    const call: ApprovalCall = { name: toolName, args: input, decisions: DECISIONS };
    const description = callDescription(context);
    if (description !== undefined) {
      call.description = description;
    }
    // Keyed by the tool call: the request id (`requestId([key])`) is the call's own, so a
    // retried callback collects the same request.
    const key = context.toolUseID || derivedId("call", undefined);
    try {
      return await askApproval(options, [{ key, call }], (decisions) => approvalResult(decisions[0]!, input), context.signal);
    } catch (error) {
      if (error instanceof RequestWithdrawn) {
        return { behavior: "deny", message: WITHDRAWN_MESSAGE };
      }
      throw error;
    }
  };

  return async (toolName, input, context) => {
    if (toolName === ASK_USER_QUESTION) {
      return askQuestions(input, context);
    }
    if (approves(approveTools, toolName)) {
      return approve(toolName, input, context);
    }
    return { behavior: "allow", updatedInput: input };
  };
}

