/**
 * askgate for TypeScript agents: ask people structured questions through an askgate gateway
 * and get the answers back as data.
 *
 * - `Client`: the agent's WebSocket connection, asks waited for across reconnects.
 * - `postRequest`, `collect`, `ack`: the HTTP API for paused runs.
 * - The errors, each its own class.
 */

export { type AskBody, type AskOptions, type Backoff, Client, type ClientOptions, type Opened } from "./client.js";
export {
  AskRejected,
  type FieldError,
  Forbidden,
  GatewayClosed,
  GatewayError,
} from "./errors.js";
export { ack, collect, type HttpOptions, type Pending, postRequest, type RequestState } from "./http.js";
export { type Outcome, type OutcomeKind } from "./outcome.js";
