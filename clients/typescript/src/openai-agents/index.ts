/**
 * askgate for the OpenAI Agents SDK (`@openai/agents`): a person approves or rejects the tool
 * calls a run paused on.
 *
 * A tool with `needsApproval` makes `run` return early, with `result.interruptions`: one
 * `RunToolApprovalItem` per call waiting. `approveInterruptions` puts them all to a person
 * through the gateway (the `approval` dialect, one request for up to 20 calls; each call offers
 * approve and reject only, since the SDK cannot run an edited call), and returns the run's
 * `RunState` with every interruption decided, ready for `run(agent, state)`:
 *
 * ```ts
 * let result = await run(agent, "Clean up the staging bucket");
 * while (result.interruptions.length > 0) {
 *   result = await run(agent, await approveInterruptions(result, { url, session: "thread-1" }));
 * }
 * ```
 *
 * - approve: `state.approve(item)`: the tool runs;
 * - reject: `state.reject(item, { message })`: the tool does not run, and the model reads the
 *   person's reason as the call's output (the SDK's own rejection text when they gave none);
 * - the person declines the whole request: every call rejected with `DECLINED_MESSAGE`; its
 *   deadline (`timeoutS`) passes: every call rejected with `TIMED_OUT_MESSAGE`;
 * - a request withdrawn by someone else throws `RequestWithdrawn` (asking again about the
 *   same calls asks anew); one the gateway refuses throws `GatewayError`.
 *
 * Each call is shown with its tool's description and argument schema when the item's agent has
 * the tool. The outcomes are acknowledged only once the state holds the decisions.
 */

import type { Agent, RunState, RunToolApprovalItem } from "@openai/agents";

import {
  type ApprovalCall,
  type ApprovalOptions,
  type CallDecision,
  DECLINED_MESSAGE,
  TIMED_OUT_MESSAGE,
  argsObject,
  askApproval,
} from "../approval.js";

export { DECLINED_MESSAGE, TIMED_OUT_MESSAGE };

/** What is read of a `RunResult` / `StreamedRunResult` that stopped on approvals. */
export interface PausedRun<TContext, TAgent extends Agent<any, any>> {
  readonly state: RunState<TContext, TAgent>;
}

/** What `approveInterruptions` may be given besides the run and the options. */
export interface ApproveInterruptionsExtras {
  /** Aborting it withdraws the request, and the call rejects with an `AbortError`. */
  signal?: AbortSignal;
}

function isRunState<TContext, TAgent extends Agent<any, any>>(
  value: PausedRun<TContext, TAgent> | RunState<TContext, TAgent>,
): value is RunState<TContext, TAgent> {
  return typeof (value as Partial<RunState<TContext, TAgent>>).getInterruptions === "function";
}

/** The item's function tool on its agent, if it has one by that name. */
function agentTool(item: RunToolApprovalItem): Record<string, unknown> | undefined {
  const tools: unknown = (item.agent as { tools?: unknown } | undefined)?.tools;
  if (!Array.isArray(tools)) {
    return undefined;
  }
  const names = new Set([item.name, (item.rawItem as { name?: unknown }).name]);
  return (tools as Array<Record<string, unknown>>).find((tool) => names.has(tool["name"] as string | undefined));
}

/** The arguments to show for an item: a function or hosted call's `arguments`; for a computer,
 * shell or patch call (which have none), its `action` or `operation`. */
function itemArgs(item: RunToolApprovalItem): Record<string, unknown> {
  const raw = item.rawItem as Record<string, unknown>;
  if ("arguments" in raw || raw["type"] === "function_call") {
    return argsObject(raw["arguments"]);
  }
  const shown: Record<string, unknown> = {};
  for (const field of ["action", "operation"]) {
    if (raw[field] !== undefined) {
      shown[field] = raw[field];
    }
  }
  return shown;
}

/** What the person is shown for one interruption: the tool, its arguments, and (from the
 * agent's tool) its description and argument schema; the decisions are approve and reject. */
export function approvalCall(item: RunToolApprovalItem): ApprovalCall {
  const tool = agentTool(item);
  const call: ApprovalCall = {
    name: item.name ?? String((item.rawItem as { type?: unknown }).type ?? "tool"),
    args: itemArgs(item),
    decisions: ["approve", "reject"],
  };
  const description = tool?.["description"];
  if (typeof description === "string" && description) {
    call.description = description;
  }
  const schema = tool?.["parameters"];
  if (typeof schema === "object" && schema !== null && !Array.isArray(schema)) {
    call.argsSchema = schema as Record<string, unknown>;
  }
  return call;
}

/** The key of an interruption: its call id (what makes the request id), else its position. */
function itemKey(item: RunToolApprovalItem, index: number): string {
  const raw = item.rawItem as { callId?: unknown; id?: unknown };
  if (typeof raw.callId === "string" && raw.callId) {
    return raw.callId;
  }
  if (typeof raw.id === "string" && raw.id) {
    return raw.id;
  }
  return `${item.name ?? "tool"}#${index}`;
}

/**
 * Asks a person about every interruption of `result` (a paused `RunResult` or
 * `StreamedRunResult`, or a `RunState`, for instance one loaded back with
 * `RunState.fromString`) and returns its state with each approved or rejected, to resume with
 * `run(agent, state)`. With no interruptions, returns the state as it is without asking.
 *
 * The same calls always make the same request (it is keyed by their call ids), so calling again
 * after `NotAnswered` (past `options.wait`) collects the same request.
 */
export async function approveInterruptions<TContext, TAgent extends Agent<any, any>>(
  result: PausedRun<TContext, TAgent> | RunState<TContext, TAgent>,
  options: ApprovalOptions,
  extras: ApproveInterruptionsExtras = {},
): Promise<RunState<TContext, TAgent>> {
  const state = isRunState(result) ? result : result.state;
  const items = state.getInterruptions();
  const keyed = items.map((item, index) => ({ key: itemKey(item, index), call: approvalCall(item) }));
  const convert = (decisions: CallDecision[]): RunState<TContext, TAgent> => {
    // Every decision is checked before any is applied: a state is never left half decided.
    decisions.forEach((decision, index) => {
      if (decision.type !== "approve" && decision.type !== "reject") {
        throw new Error(
          `the gateway answered the approval of ${JSON.stringify(items[index]!.name)} ` +
            `(call ${keyed[index]!.key}) with ${JSON.stringify(decision.type)}, ` +
            "which the Agents SDK cannot take (only approve and reject)",
        );
      }
    });
    items.forEach((item, index) => {
      const decision = decisions[index]!;
      if (decision.type === "approve") {
        state.approve(item);
      } else {
        state.reject(item, decision.message === null ? {} : { message: decision.message });
      }
    });
    return state;
  };
  return askApproval(options, keyed, convert, extras.signal);
}
