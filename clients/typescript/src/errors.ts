/**
 * What can go wrong talking to the gateway, each its own class so that a caller can tell them
 * apart with `instanceof`.
 */

/** One thing wrong with an ask, as the gateway names it: where (`calls[1].args.path`), why. */
export interface FieldError {
  /** The path of the field, in the ask as sent (`""` for the ask as a whole). */
  path: string;
  /** What is wrong, in words. */
  message: string;
  /** A stable code: `invalid_value`, `wrong_type`, `forbidden`, `unavailable`... */
  code: string;
}

/** The gateway refused the ask: nothing was stored. */
export class AskRejected extends Error {
  /** Every problem the gateway found, each with its path. */
  readonly errors: FieldError[];

  constructor(errors: FieldError[], message?: string) {
    super(message ?? describe(errors));
    this.name = "AskRejected";
    this.errors = errors;
  }
}

/** Refused because the agent key may not act on the session (or the request). */
export class Forbidden extends AskRejected {
  constructor(errors: FieldError[]) {
    super(errors);
    this.name = "Forbidden";
  }
}

/** The gateway closed the connection for good (a wrong key, a malformed frame), or the client
 * was closed. */
export class GatewayClosed extends Error {
  /** The WebSocket close code (4401: the key was refused), or 1000 for a client closed here. */
  readonly code: number;
  /** The gateway's reason, if it gave one. */
  readonly reason: string;

  constructor(code: number, reason: string) {
    super(`the gateway closed the connection (${code}${reason ? `: ${reason}` : ""})`);
    this.name = "GatewayClosed";
    this.code = code;
    this.reason = reason;
  }
}

/** Nobody answered within the wait asked for here; the request stays open at the gateway, and
 * asking again with the same id collects it. */
export class NotAnswered extends Error {
  /** The session. */
  readonly session: string;
  /** The request. */
  readonly id: string;

  constructor(session: string, id: string) {
    super(`request ${id} of session ${session} was not answered in time; ask again to collect it`);
    this.name = "NotAnswered";
    this.session = session;
    this.id = id;
  }
}

/** The request was withdrawn (by the agent, an operator, or its session ending) before anyone
 * answered it: there is no answer to give the framework. */
export class RequestWithdrawn extends Error {
  /** The session. */
  readonly session: string;
  /** The request. */
  readonly id: string;

  constructor(session: string, id: string) {
    super(`request ${id} of session ${session} was withdrawn before anyone answered it`);
    this.name = "RequestWithdrawn";
    this.session = session;
    this.id = id;
  }
}

/** An HTTP call the gateway answered with an error status, its errors as it gave them. */
export class GatewayError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The gateway's errors, each with its path. */
  readonly errors: FieldError[];

  constructor(status: number, errors: FieldError[], what: string) {
    super(`${what}: HTTP ${status}${errors.length ? `: ${describe(errors)}` : ""}`);
    this.name = "GatewayError";
    this.status = status;
    this.errors = errors;
  }
}

/** The error a call aborted through its `signal` rejects with, as `fetch` does. */
export function abortError(reason?: unknown): Error {
  if (reason instanceof Error && reason.name === "AbortError") {
    return reason;
  }
  const error = new Error("the ask was aborted; its request was withdrawn");
  error.name = "AbortError";
  return error;
}

/** `path: message; path: message`. */
export function describe(errors: FieldError[]): string {
  return errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join("; ");
}

/** The `errors` of a gateway reply, kept only where they have the shape the gateway gives. */
export function readErrors(value: unknown): FieldError[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.flatMap((item: unknown) => {
    if (typeof item !== "object" || item === null) {
      return [];
    }
    const { path, message, code } = item as Record<string, unknown>;
    return [
      {
        path: typeof path === "string" ? path : "",
        message: typeof message === "string" ? message : String(message ?? ""),
        code: typeof code === "string" ? code : "",
      },
    ];
  });
}
