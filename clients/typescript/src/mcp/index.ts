/**
 * askgate for MCP (`@modelcontextprotocol/sdk`): a person answers a server's elicitations.
 *
 * ```ts
 * const client = new Client({ name: "agent", version: "1.0.0" }, {
 *   capabilities: { elicitation: { form: {}, url: {} } },
 * });
 * client.setRequestHandler(ElicitRequestSchema, elicitationHandler({ url, session: "thread-1" }));
 * ```
 *
 * Each elicitation is put to a person through the gateway (the `form` dialect), and the server
 * gets MCP's own `ElicitResult`:
 * - form mode: the person fills one field per property of the requested schema; accepting
 *   returns `{ action: "accept", content }`, checked by the gateway against the schema;
 * - URL mode: the person sees the message and the whole URL; accepting is consent to open it
 *   (`{ action: "accept" }`; the link is never opened here);
 * - the person declines: `{ action: "decline" }`; "Not now", a passed deadline (`timeoutS`)
 *   or a withdrawal: `{ action: "cancel" }`.
 *
 * The handler is not told which server asks: `server` names it on the card. When the SDK aborts
 * the handler (`extra.signal`: the session closed, or the server cancelled the request), the
 * request is withdrawn. When the gateway refuses the elicitation, the handler throws (the SDK
 * sends the server the error).
 *
 * An elicitation is answered once, over the MCP session that asked it: a server that asks again
 * sends a new elicitation, so nothing could collect an old one later. Each is its own request
 * (a random id), and past `wait` (seconds) the handler does not throw `NotAnswered` as the
 * other adapters do: it withdraws the request and answers the server `{ action: "cancel" }`, as
 * for a passed deadline (or the person's answer, if one came as it was withdrawn).
 */

import { randomUUID } from "node:crypto";

import { type AdapterOptions, askOne, commonFields, limits } from "../asking.js";
import { NotAnswered } from "../errors.js";
import { ack, withdraw } from "../http.js";
import type { Outcome } from "../outcome.js";

/** An elicitation's parameters, as the SDK hands them (form or URL mode). */
export interface ElicitParams {
  mode?: "form" | "url" | undefined;
  message: string;
  requestedSchema?: unknown;
  url?: string | undefined;
  elicitationId?: string | undefined;
}

/** What a value of a form's content may be. */
export type ElicitValue = string | number | boolean | string[];

/** MCP's `ElicitResult`. */
export interface ElicitResult {
  [key: string]: unknown;
  action: "accept" | "decline" | "cancel";
  content?: Record<string, ElicitValue>;
}

/** The options of `elicitationHandler`: the adapters' own, and the server's name for the card. */
export type ElicitationOptions = AdapterOptions & { server?: string };

/** The body of the `form` request that asks a person for `params`. */
export function elicitBody(
  params: ElicitParams,
  options: ElicitationOptions,
  id: string,
): Record<string, unknown> & { id: string } {
  const body: Record<string, unknown> & { id: string } = {
    id,
    dialect: "form",
    message: params.message,
    ...commonFields(options),
  };
  if (params.mode !== undefined) {
    body["mode"] = params.mode;
  }
  if (params.mode === "url") {
    body["url"] = params.url;
    body["elicitation_id"] = params.elicitationId;
  } else {
    body["schema"] = params.requestedSchema;
  }
  if (options.server !== undefined) {
    body["server"] = options.server;
  }
  return body;
}

/** MCP's `ElicitResult` for a request's outcome: its `response` is one; a request withdrawn
 * without one is a `cancel`. */
export function elicitResult(outcome: Outcome): ElicitResult {
  const response = outcome.response;
  if (response === null || response === undefined) {
    return { action: "cancel" };
  }
  if (typeof response !== "object") {
    throw new Error(`request ${outcome.id} came back without an ElicitResult: ${JSON.stringify(response)}`);
  }
  const { action, content } = response as Record<string, unknown>;
  if (action !== "accept" && action !== "decline" && action !== "cancel") {
    throw new Error(`request ${outcome.id} came back with an unknown action: ${JSON.stringify(action)}`);
  }
  const result: ElicitResult = { action };
  if (content !== undefined && content !== null) {
    result.content = content as Record<string, ElicitValue>;
  }
  return result;
}

/** The handler for `client.setRequestHandler(ElicitRequestSchema, …)`: every elicitation is put
 * to a person in askgate session `options.session`, and answered with their `ElicitResult`;
 * past `options.wait`, withdrawn and answered `cancel`. */
export function elicitationHandler(
  options: ElicitationOptions,
): (request: { params: ElicitParams }, extra: { signal: AbortSignal }) => Promise<ElicitResult> {
  return async (request, extra) => {
    const id = `mcp-${randomUUID().replaceAll("-", "")}`;
    try {
      return await askOne(options, elicitBody(request.params, options, id), elicitResult, extra.signal);
    } catch (error) {
      if (!(error instanceof NotAnswered)) {
        throw error;
      }
      // Nothing could collect it later: withdrawn, and answered with how it ended.
      const http = options.key === undefined ? {} : { key: options.key };
      const ended = await withdraw(options.url, options.session, id, { ...http, signal: AbortSignal.timeout(limits.settleMs) });
      if (ended.state !== "resolved") {
        throw error;
      }
      const result = elicitResult(ended);
      await ack(options.url, options.session, id, { ...http, signal: AbortSignal.timeout(limits.settleMs) }).catch(
        () => undefined,
      );
      return result;
    }
  };
}
