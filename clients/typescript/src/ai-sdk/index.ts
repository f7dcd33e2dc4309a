/**
 * askgate for the AI SDK (`ai` 7): a person approves or rejects the tool calls a generation
 * paused on, and a tool through which the model asks a person questions.
 *
 * Approvals. With `toolApproval` (`{ deleteFile: "user-approval" }`, or a function), a
 * `generateText` that reaches such a call stops (`result.stoppedBy === "approval"`) with a
 * `tool-approval-request` part in `result.content` for each call waiting. `approveToolCalls`
 * puts them all to a person through the gateway (the `approval` dialect, one request for up to
 * 20 calls; each call offers approve and reject only, since the SDK cannot run an edited call)
 * and returns the tool message to append after the result's messages:
 *
 * ```ts
 * let result = await generateText({ model, tools, toolApproval, messages });
 * while (result.stoppedBy === "approval") {
 *   messages.push(...result.responseMessages, await approveToolCalls(result.content, options));
 *   result = await generateText({ model, tools, toolApproval, messages });
 * }
 * ```
 *
 * - approve: `approved: true`, the SDK runs the tool when it is called again;
 * - reject: `approved: false` with the person's reason (if they gave one) as `reason`, which
 *   the model reads in the call's `execution-denied` result;
 * - the person declines the whole request: every call rejected with `DECLINED_MESSAGE`; its
 *   deadline (`timeoutS`) passes: every call rejected with `TIMED_OUT_MESSAGE`;
 * - a request withdrawn by someone else throws `RequestWithdrawn` (asking again about the
 *   same calls asks anew); one the gateway refuses throws `GatewayError`.
 *
 * Calls the SDK decided itself (`isAutomatic`: a `toolApproval` of `"approved"` or `"denied"`)
 * are not asked about: their response is in the result's messages already.
 *
 * Questions. `askUserTool` is a tool whose input is pydantic-ai-harness's `ask_user_question`
 * (one to ten multiple-choice questions): each call is put to a person (the `harness` dialect),
 * and the model reads what the harness's own tool returns.
 */

import { createHash } from "node:crypto";

import { type ContentPart, type Tool, type ToolModelMessage, type ToolSet, jsonSchema, tool } from "ai";

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

/** What `approveToolCalls` may be given besides the parts and the options. */
export interface ApproveToolCallsExtras {
  /** Aborting it withdraws the requests, and the call rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** The tools of the generation: a tool's (string) description is shown with its calls. */
  tools?: ToolSet;
}

/** What this adapter reads of a `tool-approval-request` part (`ai`'s own type, whatever the
 * tool set). */
export interface ApprovalRequestPart {
  type: "tool-approval-request";
  approvalId: string;
  toolCall: { toolCallId: string; toolName: string; input: unknown; providerExecuted?: boolean | undefined };
  reason?: string | undefined;
  isAutomatic?: boolean | undefined;
}

function isPendingRequest(part: { type: string }): part is ApprovalRequestPart {
  return part.type === "tool-approval-request" && (part as ApprovalRequestPart).isAutomatic !== true;
}

/** What the person is shown for one call: the tool, its input, and what the SDK gives about
 * it (the tool's description, the reason `toolApproval` gave for asking). */
export function approvalCall(part: ApprovalRequestPart, tools?: ToolSet): ApprovalCall {
  const described = tools?.[part.toolCall.toolName]?.description;
  const lines: string[] = [];
  if (typeof described === "string" && described.trim()) {
    lines.push(described.trim());
  }
  if (part.reason?.trim()) {
    lines.push(`Asked because: ${part.reason.trim()}`);
  }
  const call: ApprovalCall = {
    name: part.toolCall.toolName,
    args: argsObject(part.toolCall.input),
    decisions: ["approve", "reject"],
  };
  if (lines.length > 0) {
    call.description = lines.join("\n\n");
  }
  return call;
}

/**
 * Asks a person about every `tool-approval-request` of `content` (a generation's
 * `result.content`) that the SDK did not decide itself, and returns the tool message holding
 * their answers, to append after `...result.responseMessages` before generating again. With
 * nothing to ask, the message has no parts (and need not be appended).
 *
 * The same approval requests always make the same request (it is keyed by their `approvalId`s,
 * which the SDK makes anew for every approval and keeps in the result), so calling again with
 * the same content after `NotAnswered` (past `options.wait`) collects the same request, and two
 * generations whose calls share a tool call id are asked about apart. The outcomes are
 * acknowledged once the message is built.
 */
export async function approveToolCalls<TOOLS extends ToolSet>(
  content: ReadonlyArray<ContentPart<TOOLS>>,
  options: ApprovalOptions,
  extras: ApproveToolCallsExtras = {},
): Promise<ToolModelMessage> {
  const parts = (content as ReadonlyArray<{ type: string }>).filter(isPendingRequest);
  const keyed = parts.map((part) => ({ key: part.approvalId, call: approvalCall(part, extras.tools) }));
  const convert = (decisions: CallDecision[]): ToolModelMessage => ({
    role: "tool",
    content: parts.map((part, index) => {
      const decision = decisions[index]!;
      if (decision.type !== "approve" && decision.type !== "reject") {
        throw new Error(
          `the gateway answered the approval of ${JSON.stringify(part.toolCall.toolName)} ` +
            `(tool call ${part.toolCall.toolCallId}) with ${JSON.stringify(decision.type)}, ` +
            "which the AI SDK cannot take (only approve and reject)",
        );
      }
      return {
        type: "tool-approval-response" as const,
        approvalId: part.approvalId,
        approved: decision.type === "approve",
        ...(decision.type === "reject" && decision.message !== null ? { reason: decision.message } : {}),
        // The SDK forwards only a provider-executed call's response to the provider.
        ...(part.toolCall.providerExecuted === true ? { providerExecuted: true } : {}),
      };
    }),
  });
  return askApproval(options, keyed, convert, extras.signal);
}

// ---- ask_user_question -------------------------------------------------------------------

/** The name pydantic-ai-harness gives the tool: register `askUserTool` under it. */
export const ASK_USER_TOOL_NAME = "ask_user_question";

/** The line pydantic-ai-harness adds to the system prompt for the tool. */
export const ASK_USER_INSTRUCTIONS =
  "When the task is ambiguous and the answer is not in the workspace, call `ask_user_question` with concrete options rather than guessing or burying the question in prose. Batch related questions into one call. If the user declines, make a reasonable choice and say which one you made.";

/** What the model reads when the person declines (pydantic-ai-harness's `DECLINED`). */
export const ASK_USER_DECLINED =
  "The user declined to answer. Continue without the answer, or ask differently if it is essential.";

/** What the model reads when the deadline (`timeoutS`) passes unanswered (the harness's
 * `TIMED_OUT`). */
export const ASK_USER_TIMED_OUT =
  "The user did not answer in time. Continue without the answer: make a reasonable choice and say which one you made.";

const ASK_USER_DESCRIPTION =
  "Ask the user one or more multiple-choice questions and wait for the answers.\n\nUse it when the task is ambiguous and the answer cannot be found in the workspace.\nOffer concrete options; the answerer may also accept a custom answer. The result maps\neach question's `header` to picked labels or a one-item list containing the custom\nanswer, or explains that the user declined.";

/** One choice of a question. */
export interface AskUserOption {
  /** Short option name, one to five words (at most 50 characters). */
  label: string;
  /** What choosing this option means (at most 200 characters). */
  description?: string | null;
}

/** One multiple-choice question. */
export interface AskUserQuestion {
  /** Short label naming the question, unique within the call (at most 25 characters); the
   * answer is keyed by it. */
  header: string;
  /** The full question text (at most 500 characters). */
  question: string;
  /** Two to six choices. */
  options: AskUserOption[];
  /** Whether the person may pick more than one option. */
  multi_select?: boolean;
}

/** The tool's input: pydantic-ai-harness's `ask_user_question` arguments. */
export interface AskUserInput {
  /** One to ten questions. */
  questions: AskUserQuestion[];
}

/** What the tool returns: each question's header with the picked labels (or a one-item list
 * holding the person's own answer), or the sentence `ASK_USER_DECLINED` / `ASK_USER_TIMED_OUT`. */
export type AskUserResult = Record<string, string[]> | string;

/** The JSON Schema pydantic-ai sends the model for `ask_user_question` (pydantic-ai-harness
 * 0.62), so a model sees the same tool here as there. */
export const ASK_USER_INPUT_SCHEMA = {
  $defs: {
    Question: {
      additionalProperties: false,
      description: "One multiple-choice question.",
      properties: {
        header: {
          description: "Short label naming the question, unique within the call; the answer is keyed by it.",
          maxLength: 25,
          minLength: 1,
          type: "string",
        },
        question: { description: "The full question text.", maxLength: 500, minLength: 1, type: "string" },
        options: {
          description: "The choices to offer.",
          items: { $ref: "#/$defs/QuestionOption" },
          maxItems: 6,
          minItems: 2,
          type: "array",
        },
        multi_select: {
          default: false,
          description: "Whether the user may pick more than one option.",
          type: "boolean",
        },
      },
      required: ["header", "question", "options"],
      title: "Question",
      type: "object",
    },
    QuestionOption: {
      additionalProperties: false,
      description: "One choice the user can pick.",
      properties: {
        label: { description: "Short option name, one to five words.", maxLength: 50, minLength: 1, type: "string" },
        description: {
          anyOf: [{ maxLength: 200, type: "string" }, { type: "null" }],
          default: null,
          description: "What choosing this option means.",
        },
      },
      required: ["label"],
      title: "QuestionOption",
      type: "object",
    },
  },
  additionalProperties: false,
  properties: {
    questions: {
      description:
        "One to ten questions, each with a unique `header`, two to six options,\nand `multi_select` when several answers are allowed.",
      items: { $ref: "#/$defs/Question" },
      maxItems: 10,
      minItems: 1,
      type: "array",
    },
  },
  required: ["questions"],
  type: "object",
} as const;

/** The request id for the tool call `toolCallId`: the same call always makes the same request
 * (asking again after `NotAnswered` collects it); an id the gateway could not take as it is
 * (not printable ASCII, or too long) is hashed. */
export function askUserRequestId(toolCallId: string): string {
  if (/^[\x21-\x7e]{1,200}$/.test(toolCallId)) {
    return `ask-user-${toolCallId}`;
  }
  return `ask-user-${createHash("sha256").update(toolCallId).digest("hex").slice(0, 40)}`;
}

/** The body of the `harness` request that asks `input`'s questions. The gateway judges them
 * as pydantic-ai judges a model's call, and refuses bad ones with each problem's path. */
export function askUserBody(
  input: AskUserInput,
  options: AdapterOptions,
  id: string,
): Record<string, unknown> & { id: string } {
  // Input that is not an object goes as no questions: the gateway then says what is missing.
  const questions = typeof input === "object" && input !== null ? input.questions : undefined;
  return { id, dialect: "harness", questions, ...commonFields(options) };
}

/** What the model reads for an ended `harness` request: what the harness's `ask_user_result`
 * returns (the gateway's `result`), the `DECLINED` or `TIMED_OUT` sentence otherwise. A
 * withdrawn request has no answer: `RequestWithdrawn`. */
export function askUserResult(outcome: Outcome): AskUserResult {
  if (outcome.kind === "withdrawn") {
    throw new RequestWithdrawn(outcome.session, outcome.id);
  }
  const result = outcome.result;
  if (typeof result === "string") {
    return result;
  }
  if (typeof result !== "object" || result === null || Array.isArray(result)) {
    throw new Error(
      `request ${outcome.id} in session ${outcome.session} came back (${outcome.kind}) without an ask_user_question result: ${JSON.stringify(result)?.slice(0, 300)}`,
    );
  }
  const answers: Record<string, string[]> = {};
  for (const [header, labels] of Object.entries(result as Record<string, unknown>)) {
    if (!Array.isArray(labels)) {
      throw new Error(
        `request ${outcome.id} in session ${outcome.session}: the answer to ${JSON.stringify(header)} is not a list of labels: ${JSON.stringify(labels)?.slice(0, 200)}`,
      );
    }
    answers[header] = labels.map(String);
  }
  return answers;
}

/**
 * A tool the model calls to ask a person one to ten multiple-choice questions (the input of
 * pydantic-ai-harness's `ask_user_question`): each call is put to a person in askgate session
 * `options.session`, and the tool returns what the harness's own tool would: each question's
 * header with the picked labels (or a one-item list with the person's own answer), or the
 * `ASK_USER_DECLINED` / `ASK_USER_TIMED_OUT` sentence. Register it as `ask_user_question`:
 *
 * ```ts
 * const tools = { [ASK_USER_TOOL_NAME]: askUserTool({ url, session: "thread-1" }) };
 * ```
 *
 * Questions the gateway refuses (too many options, a repeated header...) make the tool fail
 * with each problem's path, which the model reads as the call's error. When the generation is
 * aborted (`abortSignal`), the question is withdrawn. A question withdrawn by someone else
 * fails the call with `RequestWithdrawn`.
 */
export function askUserTool(options: AdapterOptions): Tool<AskUserInput, AskUserResult> {
  return tool<AskUserInput, AskUserResult, {}>({
    description: ASK_USER_DESCRIPTION,
    inputSchema: jsonSchema<AskUserInput>(ASK_USER_INPUT_SCHEMA as unknown as Parameters<typeof jsonSchema>[0]),
    execute: (input, { toolCallId, abortSignal }) => {
      const body = askUserBody(input, options, askUserRequestId(toolCallId));
      return askOne(options, body, askUserResult, abortSignal);
    },
  });
}
