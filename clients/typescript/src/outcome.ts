/** How a request ended, as the agent reads it. */

/** The ways a request ends. */
export type OutcomeKind = "answered" | "declined" | "timed_out" | "withdrawn";

/** How a request ended: the gateway's `outcome` frame (or HTTP body), camel-cased. */
export interface Outcome {
  /** The session. */
  session: string;
  /** The request id. */
  id: string;
  /** How it ended. */
  kind: OutcomeKind;
  /** The dialect's response, as a tab gave it (`{"answers": [...]}`, `{"decisions": [...]}`...);
   * null when it was not answered. */
  response: unknown;
  /** What the framework's own tool returns, in its own shape. */
  result: unknown;
  /** The exact text the model reads, where the dialect has one. */
  modelText: string | null;
  /** Who ended it: a tab's id, `default`, `rule:{id}`, or null. */
  by: string | null;
  /** The person, if the gateway knows who. */
  user: string | null;
  /** How they were known (`personal-link`, `proxy`, `email`, `slack`, `default`, `rule`, ...). */
  via: string | null;
  /** For a request several people decided: each voter's decisions. */
  voters: unknown;
  /** When it ended (Unix ms). */
  atMs: number | null;
}

const KINDS: readonly OutcomeKind[] = ["answered", "declined", "timed_out", "withdrawn"];

/** The outcome a gateway frame or body describes (`outcome` or `state` names the kind). */
export function readOutcome(value: Record<string, unknown>): Outcome {
  const named = value["outcome"] ?? value["state"];
  const kind = KINDS.find((k) => k === named);
  if (kind === undefined) {
    throw new Error(`the gateway sent an outcome of an unknown kind: ${JSON.stringify(named)}`);
  }
  const text = (name: string): string | null => {
    const field = value[name];
    return typeof field === "string" ? field : null;
  };
  const atMs = value["at_ms"];
  return {
    session: text("session") ?? "",
    id: text("id") ?? "",
    kind,
    response: value["response"] ?? null,
    result: value["result"] ?? null,
    modelText: text("model_text"),
    by: text("by"),
    user: text("user"),
    via: text("via"),
    voters: value["voters"] ?? null,
    atMs: typeof atMs === "number" ? atMs : null,
  };
}
