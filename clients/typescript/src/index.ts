/**
 * askgate for TypeScript agents: ask people structured questions through an askgate gateway
 * and get the answers back as data.
 *
 * - `Client`: the agent's WebSocket connection, asks waited for across reconnects.
 * - `postRequest`, `collect`, `ack`: the HTTP API for paused runs.
 * - The errors, each its own class.
 * - `askgate/mcp`: a person answers an MCP server's elicitations (its own subpath, so that
 *   `import "askgate"` loads no framework).
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
