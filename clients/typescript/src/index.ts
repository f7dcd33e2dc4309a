/**
 * askgate for TypeScript agents: ask people structured questions through an askgate gateway
 * and get the answers back as data.
 *
 * - `Client`: the agent's WebSocket connection, asks waited for across reconnects.
 * - `postRequest`, `collect`, `ack`: the HTTP API for paused runs.
 * - The errors, each its own class, and the `approval` dialect's types the adapters share.
 * - One subpath per framework, so that `import "askgate"` loads none: `askgate/mcp` (MCP
 *   elicitation), `askgate/claude` (the Claude Agent SDK's `canUseTool`), `askgate/ai-sdk`
 *   (`toolApproval` and an ask-user tool), `askgate/openai-agents` (run interruptions),
 *   `askgate/langgraph` (`ask_user` and human-in-the-loop interrupts), `askgate/mastra`
 *   (suspended tool calls and `askUserTool`).
 */

export { type AskBody, type AskOptions, type Backoff, Client, type ClientOptions, type Opened } from "./client.js";
export {
  AskRejected,
  type FieldError,
  Forbidden,
  GatewayClosed,
  GatewayError,
  NotAnswered,
  RequestWithdrawn,
} from "./errors.js";
export { type AdapterOptions, type PostedRequest } from "./asking.js";
export {
  type ApprovalCall,
  type ApprovalOptions,
  type CallDecision,
  DECLINED_MESSAGE,
  type DecisionKind,
  TIMED_OUT_MESSAGE,
} from "./approval.js";
export {
  ack,
  collect,
  type HttpOptions,
  type Pending,
  postRequest,
  type RequestState,
  withdraw,
} from "./http.js";
export { type Outcome, type OutcomeKind } from "./outcome.js";
