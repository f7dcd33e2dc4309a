/** `askgate/langgraph` against the real gateway and the real packages: a `StateGraph` paused by
 * deepagents-style `ask_user` interrupts, and `createAgent` agents paused by
 * `humanInTheLoopMiddleware` (on LangChain's own `fakeModel`), each put to a person, answered
 * (or declined, timed out, withdrawn) by a tab, and resumed with the `Command` the adapter
 * builds; the graph and the tools show exactly what the person decided. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages";
import {
  Annotation,
  Command,
  END,
  INTERRUPT,
  MemorySaver,
  MessagesAnnotation,
  START,
  StateGraph,
  interrupt,
  isInterrupted,
} from "@langchain/langgraph";
import {
  type AnyAgentMiddleware,
  type InterruptOnConfig,
  createAgent,
  fakeModel,
  humanInTheLoopMiddleware,
  tool,
} from "langchain";
import { z } from "zod";

import { Client, NotAnswered, type PostedRequest } from "../src/index.js";
import {
  DECLINED_MESSAGE,
  type InterruptLike,
  type ResumeCommand,
  TIMED_OUT_MESSAGE,
  answerHitl,
  answerInterrupts,
  hitlDecision,
  inlineRefs,
  isAskUser,
  isHitl,
} from "../src/langgraph/index.js";
import { Gateway, Tab, within } from "./support.js";

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

/** An `onPosted` to pass an adapter, and the requests it is called with, once it is. */
function whenPosted(): { onPosted: (requests: PostedRequest[]) => void; posted: Promise<PostedRequest[]> } {
  let onPosted: (requests: PostedRequest[]) => void = () => undefined;
  const posted = new Promise<PostedRequest[]>((resolve) => {
    onPosted = resolve;
  });
  return { onPosted, posted };
}

/** The next request the tab is shown. */
async function nextRequest(tab: Tab): Promise<Record<string, unknown>> {
  return (await tab.next("request"))["request"] as Record<string, unknown>;
}

// ---- ask_user ---------------------------------------------------------------------------

const QUESTIONS = [
  { question: "What should the release be called?", type: "text" },
  { question: "Which channel?", type: "multiple_choice", choices: [{ value: "stable" }, { value: "beta" }] },
  {
    question: "Which platforms?",
    type: "multi_select",
    choices: [{ value: "linux" }, { value: "macOS" }, { value: "Windows" }],
  },
];

const AskState = Annotation.Root({
  release: Annotation<unknown>(),
  confirmed: Annotation<unknown>(),
});

/** A graph whose node asks `QUESTIONS` with deepagents' payload; with `confirm`, a second node
 * asks its own question in the same step, so the graph pauses on two interrupts. */
function askGraph(confirm = false) {
  const asking = new StateGraph(AskState)
    .addNode("ask", () => ({ release: interrupt({ type: "ask_user", questions: QUESTIONS, tool_call_id: "call_ask_1" }) }))
    .addEdge(START, "ask")
    .addEdge("ask", END);
  if (!confirm) {
    return asking.compile({ checkpointer: new MemorySaver() });
  }
  return asking
    .addNode("confirm", () => ({
      confirmed: interrupt({
        type: "ask_user",
        questions: [{ question: "Ship it tonight?", type: "multiple_choice", choices: [{ value: "yes" }, { value: "no" }] }],
        tool_call_id: "call_ask_2",
      }),
    }))
    .addEdge(START, "confirm")
    .addEdge("confirm", END)
    .compile({ checkpointer: new MemorySaver() });
}

/** `graph` run on thread `thread` until it pauses, with the interrupts it paused on. */
async function pausedGraph(graph: ReturnType<typeof askGraph>, thread: string) {
  const config = { configurable: { thread_id: thread } };
  const result = await graph.invoke({}, config);
  const interrupts: InterruptLike[] = isInterrupted(result) ? result[INTERRUPT] : [];
  assert.ok(interrupts.length > 0 && interrupts.every(isAskUser), "the graph paused on ask_user interrupts");
  return { config, interrupts };
}

test("an ask_user interrupt is answered by a person and the graph reads exactly their answers", { timeout: 60_000 }, async () => {
  const session = "ts-lg-ask";
  const graph = askGraph();
  const { config, interrupts } = await pausedGraph(graph, session);
  const tab = await gateway.tab(session);
  try {
    const { onPosted, posted } = whenPosted();
    const answering = answerInterrupts(interrupts, { url: gateway.url, session, title: "Release", onPosted });
    const [request] = await within(posted);
    assert.equal(request!.id, interrupts[0]!.id, "the request id is the interrupt id");
    assert.equal(request!.viewerUrl?.includes(`/s/${session}`), true);
    const shown = await nextRequest(tab);
    assert.equal(shown["id"], interrupts[0]!.id);
    assert.equal(shown["dialect"], "deepagents");
    assert.equal(shown["title"], "Release");
    assert.deepEqual(shown["questions"], QUESTIONS);
    // A multi-select answer as a list; the gateway encodes it as deepagents' own client does.
    tab.answer(String(shown["id"]), { answers: ["Kestrel 2", "beta", ["Windows", "linux"]] });
    const command = await within(answering, 20_000, "the Command");
    const expected = { answers: ["Kestrel 2", "beta", '["linux", "Windows"]'] };
    assert.ok(command instanceof Command);
    assert.deepEqual(command.resume, { [interrupts[0]!.id!]: expected });
    const resumed = await graph.invoke(command, config);
    assert.deepEqual(resumed.release, expected);
    assert.ok(!isInterrupted(resumed));
  } finally {
    tab.close();
  }
});

test("two ask_user interrupts are posted together and each node reads its own answer", { timeout: 60_000 }, async () => {
  const session = "ts-lg-ask-two";
  const graph = askGraph(true);
  const { config, interrupts } = await pausedGraph(graph, session);
  assert.equal(interrupts.length, 2);
  const tab = await gateway.tab(session);
  try {
    const { onPosted, posted } = whenPosted();
    const answering = answerInterrupts(interrupts, { url: gateway.url, session, onPosted });
    assert.equal((await within(posted)).length, 2, "both are posted before the wait");
    const first = await nextRequest(tab);
    const second = await nextRequest(tab);
    const byQuestion = new Map(
      [first, second].map((request) => [
        ((request["questions"] as Array<Record<string, unknown>>)[0]!)["question"],
        String(request["id"]),
      ]),
    );
    // Answered in the other order than asked.
    tab.answer(byQuestion.get("Ship it tonight?")!, { answers: ["yes"] });
    tab.answer(byQuestion.get("What should the release be called?")!, { answers: ["Kestrel", "stable", ["macOS"]] });
    const command = await within(answering, 20_000, "the Command");
    const resumed = await graph.invoke(command, config);
    assert.deepEqual(resumed.confirmed, { answers: ["yes"] });
    assert.deepEqual(resumed.release, { answers: ["Kestrel", "stable", '["macOS"]'] });
    assert.ok(!isInterrupted(resumed));
  } finally {
    tab.close();
  }
});

test("a declined ask_user resumes with the cancelled payload, a passed deadline with the error one", { timeout: 60_000 }, async () => {
  const session = "ts-lg-ask-declined";
  const graph = askGraph();
  const tab = await gateway.tab(session);
  try {
    const declined = await pausedGraph(graph, `${session}-1`);
    const answering = answerInterrupts(declined.interrupts, { url: gateway.url, session });
    tab.decline(String((await nextRequest(tab))["id"]));
    const resumed = await graph.invoke(await within(answering, 20_000, "the Command"), declined.config);
    assert.deepEqual(resumed.release, { status: "cancelled", answers: ["", "", ""] });

    const late = await pausedGraph(graph, `${session}-2`);
    const command = await within(
      answerInterrupts(late.interrupts, { url: gateway.url, session, timeoutS: 0.5 }),
      20_000,
      "the Command after the deadline",
    );
    const timedOut = (await graph.invoke(command, late.config)).release as Record<string, unknown>;
    assert.equal(timedOut["status"], "error");
    assert.equal(timedOut["error"], "the user did not answer in time");
  } finally {
    tab.close();
  }
});

test("past `wait` NotAnswered is thrown, and asking again collects the same request", { timeout: 60_000 }, async () => {
  const session = "ts-lg-ask-wait";
  const graph = askGraph();
  const { config, interrupts } = await pausedGraph(graph, session);
  const tab = await gateway.tab(session);
  try {
    const first = whenPosted();
    await assert.rejects(
      answerInterrupts(interrupts, { url: gateway.url, session, wait: 0.2, onPosted: first.onPosted }),
      NotAnswered,
    );
    const shown = await nextRequest(tab);
    const second = whenPosted();
    const again = answerInterrupts(interrupts, { url: gateway.url, session, onPosted: second.onPosted });
    const ids = [...(await first.posted), ...(await within(second.posted))].map((request) => request.id);
    assert.deepEqual(ids, [interrupts[0]!.id, interrupts[0]!.id], "the same request both times");
    tab.answer(String(shown["id"]), { answers: ["Kestrel 3", "stable", ["linux"]] });
    const resumed = await graph.invoke(await within(again, 20_000, "the Command"), config);
    assert.deepEqual(resumed.release, { answers: ["Kestrel 3", "stable", '["linux"]'] });
  } finally {
    tab.close();
  }
});

test("aborting the signal withdraws the ask_user request", { timeout: 60_000 }, async () => {
  const session = "ts-lg-ask-abort";
  const { interrupts } = await pausedGraph(askGraph(), session);
  const tab = await gateway.tab(session);
  try {
    const controller = new AbortController();
    const answering = answerInterrupts(interrupts, { url: gateway.url, session, signal: controller.signal });
    const shown = await nextRequest(tab);
    controller.abort();
    await assert.rejects(within(answering), { name: "AbortError" });
    const resolved = await tab.next("resolved", String(shown["id"]));
    assert.equal(resolved["outcome"], "withdrawn");
  } finally {
    tab.close();
  }
});

// ---- humanInTheLoopMiddleware -----------------------------------------------------------

const SQL = { name: "run_sql", args: { query: "DROP TABLE users" }, id: "call_1" };
const MAIL = { name: "send_email", args: { to: "ops@example.com", body: "done" }, id: "call_2" };

type InterruptOn = Record<string, boolean | InterruptOnConfig>;

/** `humanInTheLoopMiddleware({ interruptOn })`, as `createAgent` takes it: langchain 1.5's types
 * of the middleware do not check under `exactOptionalPropertyTypes` (its zod v3 context schema),
 * which these tests are compiled with. */
function hitl(interruptOn: InterruptOn): AnyAgentMiddleware {
  const make = humanInTheLoopMiddleware as unknown as (options: { interruptOn: InterruptOn }) => AnyAgentMiddleware;
  return make({ interruptOn });
}

/** An agent whose model calls `calls`, then says "done"; records what its tools ran and what the
 * model read. */
class World {
  readonly sql: Array<[string, number]> = [];
  readonly mail: Array<[string, string]> = [];
  readonly model = fakeModel();
  readonly tools;
  readonly agent;
  readonly config;

  constructor(thread: string, calls: Array<{ name: string; args: Record<string, unknown>; id: string }>, interruptOn?: InterruptOn) {
    const runSql = tool(
      ({ query, limit }) => {
        this.sql.push([query, limit]);
        return `ran ${query}`;
      },
      {
        name: "run_sql",
        description: "Run a SQL statement.",
        schema: z.object({ query: z.string(), limit: z.number().int().default(10) }),
      },
    );
    const sendEmail = tool(
      ({ to, body }) => {
        this.mail.push([to, body]);
        return `sent to ${to}`;
      },
      { name: "send_email", description: "Send an email.", schema: z.object({ to: z.string(), body: z.string() }) },
    );
    this.tools = [runSql, sendEmail];
    this.model.respondWithTools(calls).respond(new AIMessage("done"));
    this.agent = createAgent({
      model: this.model,
      tools: this.tools,
      middleware: [hitl(interruptOn ?? { run_sql: true, send_email: { allowedDecisions: ["approve", "reject"] } })],
      checkpointer: new MemorySaver(),
    });
    this.config = { configurable: { thread_id: thread } };
  }

  /** The interrupts the agent paused on; nothing has run yet. */
  async paused(): Promise<InterruptLike[]> {
    const result = await this.agent.invoke({ messages: [{ role: "user", content: "Clean up" }] }, this.config);
    const interrupts = (result.__interrupt__ ?? []) as InterruptLike[];
    assert.equal(interrupts.length, 1);
    assert.ok(isHitl(interrupts[0]!));
    assert.deepEqual([this.sql, this.mail], [[], []]);
    return interrupts;
  }

  /** Resumes with `command`, through to the model's "done". */
  async resume(command: ResumeCommand): Promise<void> {
    const result = await this.agent.invoke(command, this.config);
    assert.equal(result.__interrupt__, undefined);
    assert.equal(result.messages.at(-1)?.content, "done");
  }

  /** What the model read on its last turn: each tool call it still made, and each tool result
   * by call id. */
  lastTurn(): { calls: string[]; results: Record<string, string> } {
    return readTurn(this.model.calls.at(-1)?.messages ?? []);
  }
}

function readTurn(messages: BaseMessage[]): { calls: string[]; results: Record<string, string> } {
  const calls = messages.flatMap((message) => (AIMessage.isInstance(message) ? (message.tool_calls ?? []).map((c) => c.name) : []));
  const results: Record<string, string> = {};
  for (const message of messages) {
    if (ToolMessage.isInstance(message)) {
      results[message.tool_call_id] = String(message.content);
    }
  }
  return { calls, results };
}

test("HITL: an edit checked against the tool's schema runs with the edited args, an approval as asked", { timeout: 60_000 }, async () => {
  const session = "ts-lg-hitl-edit";
  const world = new World(session, [SQL, MAIL]);
  const interrupts = await world.paused();
  const tab = await gateway.tab(session);
  try {
    const deciding = answerHitl(interrupts, { url: gateway.url, session, tools: world.tools, title: "Clean up" });
    const shown = await nextRequest(tab);
    assert.equal(shown["dialect"], "approval");
    const [sql, mail] = shown["calls"] as Array<Record<string, unknown>>;
    assert.equal(sql!["name"], "run_sql");
    assert.deepEqual(sql!["args"], { query: "DROP TABLE users" });
    assert.match(String(sql!["description"]), /^Tool execution requires approval/);
    // Exactly what each call's review config allows.
    assert.deepEqual(sql!["decisions"], ["approve", "edit", "reject"]);
    assert.deepEqual(mail!["decisions"], ["approve", "reject"]);
    const schema = sql!["args_schema"] as { properties: Record<string, { type: string }>; required: string[] };
    assert.equal(schema.properties["query"]!.type, "string");
    assert.equal(schema.properties["limit"]!.type, "integer");
    assert.deepEqual(schema.required, ["query"], "a field with a default may be left out");
    assert.equal(sql!["edit_check"], "schema");
    // An edit the tool's schema refuses never reaches the run.
    tab.answer(String(shown["id"]), {
      decisions: [{ type: "edit", args: { query: "SELECT 1", limit: "ten" } }, { type: "approve" }],
    });
    const refused = await tab.next("answer_rejected", String(shown["id"]));
    const errors = refused["errors"] as Array<{ path: string }>;
    assert.ok(errors.some((error) => error.path.endsWith(".args.limit")), JSON.stringify(errors));
    tab.answer(String(shown["id"]), { decisions: [{ type: "edit", args: { query: "SELECT 1" } }, { type: "approve" }] });
    const command = await within(deciding, 20_000, "the Command");
    assert.deepEqual(command.resume, {
      decisions: [
        { type: "edit", editedAction: { name: "run_sql", args: { query: "SELECT 1" } } },
        { type: "approve" },
      ],
    });
    await world.resume(command);
    assert.deepEqual(world.sql, [["SELECT 1", 10]]);
    assert.deepEqual(world.mail, [["ops@example.com", "done"]]);
    assert.deepEqual(world.lastTurn().results, { call_1: "ran SELECT 1", call_2: "sent to ops@example.com" });
  } finally {
    tab.close();
  }
});

test("HITL: a reject's message is what the model reads, and the batch's approved call is dropped", { timeout: 60_000 }, async () => {
  const session = "ts-lg-hitl-reject";
  const world = new World(session, [SQL, MAIL]);
  const interrupts = await world.paused();
  const tab = await gateway.tab(session);
  try {
    const deciding = answerHitl(interrupts, { url: gateway.url, session });
    const shown = await nextRequest(tab);
    assert.equal((shown["calls"] as Array<Record<string, unknown>>)[0]!["args_schema"], undefined, "no tools, no schema");
    tab.answer(String(shown["id"]), { decisions: [{ type: "approve" }, { type: "reject", message: "Not today." }] });
    const command = await within(deciding, 20_000, "the Command");
    assert.deepEqual(command.resume, { decisions: [{ type: "approve" }, { type: "reject", message: "Not today." }] });
    await world.resume(command);
    // langchain's middleware keeps only the rejected call when any call of the batch is
    // rejected: the approved run_sql does not run, and the model never sees it was asked for.
    assert.deepEqual(world.sql, []);
    assert.deepEqual(world.mail, []);
    assert.deepEqual(world.lastTurn(), { calls: ["send_email"], results: { call_2: "Not today." } });
  } finally {
    tab.close();
  }
});

test("HITL: a decline rejects every call with DECLINED_MESSAGE, a passed deadline with TIMED_OUT_MESSAGE", { timeout: 60_000 }, async () => {
  const session = "ts-lg-hitl-declined";
  const tab = await gateway.tab(session);
  try {
    const world = new World(`${session}-1`, [SQL, MAIL]);
    const deciding = answerHitl(await world.paused(), { url: gateway.url, session });
    tab.decline(String((await nextRequest(tab))["id"]));
    await world.resume(await within(deciding, 20_000, "the Command"));
    assert.deepEqual([world.sql, world.mail], [[], []]);
    assert.deepEqual(world.lastTurn().results, { call_1: DECLINED_MESSAGE, call_2: DECLINED_MESSAGE });

    const late = new World(`${session}-2`, [SQL]);
    const command = await within(
      answerHitl(await late.paused(), { url: gateway.url, session, timeoutS: 0.5 }),
      20_000,
      "the Command after the deadline",
    );
    assert.deepEqual(command.resume, { decisions: [{ type: "reject", message: TIMED_OUT_MESSAGE }] });
    await late.resume(command);
    assert.deepEqual(late.sql, []);
    assert.deepEqual(late.lastTurn().results, { call_1: TIMED_OUT_MESSAGE });
  } finally {
    tab.close();
  }
});

test("HITL: with default approve, a passed deadline runs the call", { timeout: 60_000 }, async () => {
  const session = "ts-lg-hitl-default";
  const world = new World(session, [SQL]);
  const command = await within(
    answerHitl(await world.paused(), { url: gateway.url, session, timeoutS: 0.5, default: "approve" }),
    20_000,
    "the Command at the deadline",
  );
  assert.deepEqual(command.resume, { decisions: [{ type: "approve" }] });
  await world.resume(command);
  assert.deepEqual(world.sql, [["DROP TABLE users", 10]]);
});

test("HITL: a review config's argsSchema is the one edits are checked against; a call that may not be rejected cannot be declined", { timeout: 60_000 }, async () => {
  const session = "ts-lg-hitl-config";
  const argsSchema = {
    type: "object",
    properties: { query: { type: "string", maxLength: 8 } },
    required: ["query"],
    additionalProperties: false,
  };
  const world = new World(session, [SQL], { run_sql: { allowedDecisions: ["approve", "edit"], argsSchema } });
  const interrupts = await world.paused();
  const tab = await gateway.tab(session);
  try {
    const deciding = answerHitl(interrupts, { url: gateway.url, session, tools: world.tools });
    const shown = await nextRequest(tab);
    const [call] = shown["calls"] as Array<Record<string, unknown>>;
    assert.deepEqual(call!["decisions"], ["approve", "edit"]);
    assert.deepEqual(call!["args_schema"], argsSchema);
    tab.decline(String(shown["id"]));
    // The error names the interrupt and the request, so an operator can find both.
    const interruptId = String(interrupts[0]!.id);
    await assert.rejects(within(deciding), (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.equal(
        error.message,
        `interrupt ${interruptId}, request ${String(shown["id"])} of session ${session}: ` +
          "the request was declined, which rejects every call, but run_sql allows only approve, edit",
      );
      return true;
    });
  } finally {
    tab.close();
  }
});

test("HITL: parallel agents' interrupts go in one request and each is resumed under its id", { timeout: 60_000 }, async () => {
  const session = "ts-lg-hitl-parallel";
  const ran: string[] = [];
  const agentFor = (name: string, id: string) =>
    createAgent({
      name: `agent_${name}`,
      model: fakeModel()
        .respondWithTools([{ name, args: { target: name }, id }])
        .respond(new AIMessage(`${name} done`)),
      tools: [
        tool(
          ({ target }: { target: string }) => {
            ran.push(target);
            return `${name} ran`;
          },
          { name, description: `The ${name} step.`, schema: z.object({ target: z.string() }) },
        ),
      ],
      middleware: [hitl({ [name]: true })],
    });
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("alpha", agentFor("alpha", "call_a").graph)
    .addNode("beta", agentFor("beta", "call_b").graph)
    .addEdge(START, "alpha")
    .addEdge(START, "beta")
    .addEdge("alpha", END)
    .addEdge("beta", END)
    .compile({ checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: session } };
  const paused = await graph.invoke({ messages: [{ role: "user", content: "Go" }] }, config);
  const interrupts: InterruptLike[] = isInterrupted(paused) ? paused[INTERRUPT] : [];
  assert.equal(interrupts.length, 2);
  const tab = await gateway.tab(session);
  try {
    const { onPosted, posted } = whenPosted();
    const deciding = answerHitl(interrupts, { url: gateway.url, session, onPosted });
    assert.equal((await within(posted)).length, 1, "one request for both interrupts");
    const shown = await nextRequest(tab);
    const names = (shown["calls"] as Array<Record<string, unknown>>).map((call) => call["name"]);
    tab.answer(String(shown["id"]), {
      decisions: names.map((name) => (name === "alpha" ? { type: "approve" } : { type: "reject", message: "Not beta." })),
    });
    const command = await within(deciding, 20_000, "the Command");
    const byName = Object.fromEntries(
      interrupts.map((i) => [((i.value as { actionRequests: Array<{ name: string }> }).actionRequests[0]!).name, i.id]),
    );
    assert.deepEqual(command.resume, {
      [byName["alpha"]!]: { decisions: [{ type: "approve" }] },
      [byName["beta"]!]: { decisions: [{ type: "reject", message: "Not beta." }] },
    });
    const resumed = await graph.invoke(command, config);
    assert.ok(!isInterrupted(resumed));
    assert.deepEqual(ran, ["alpha"]);
    assert.deepEqual(readTurn(resumed.messages).results, { call_a: "alpha ran", call_b: "Not beta." });
  } finally {
    tab.close();
  }
});

test("HITL: aborting the signal withdraws the request", { timeout: 60_000 }, async () => {
  const session = "ts-lg-hitl-abort";
  const world = new World(session, [SQL]);
  const interrupts = await world.paused();
  const tab = await gateway.tab(session);
  try {
    const controller = new AbortController();
    const deciding = answerHitl(interrupts, { url: gateway.url, session, signal: controller.signal });
    const shown = await nextRequest(tab);
    controller.abort();
    await assert.rejects(within(deciding), { name: "AbortError" });
    assert.equal((await tab.next("resolved", String(shown["id"])))["outcome"], "withdrawn");
    assert.deepEqual(world.sql, []);
  } finally {
    tab.close();
  }
});

// ---- without a gateway ------------------------------------------------------------------

test("interrupts of the other kind, or without an id, are refused before anything is asked", async () => {
  const nowhere = { url: "http://127.0.0.1:9", session: "s" };
  const askUser = { id: "i-1", value: { type: "ask_user", questions: [] } };
  const hitl = { id: "i-2", value: { actionRequests: [], reviewConfigs: [] } };
  assert.ok(isAskUser(askUser) && !isHitl(askUser));
  assert.ok(isHitl(hitl) && !isAskUser(hitl));
  await assert.rejects(answerInterrupts([hitl], nowhere), /interrupt i-2 is not a deepagents ask_user interrupt/);
  await assert.rejects(answerHitl(askUser, nowhere), /interrupt i-1 is not a humanInTheLoopMiddleware interrupt/);
  await assert.rejects(answerInterrupts([{ value: askUser.value }], nowhere), /interrupt 0 has no id/);
  await assert.rejects(answerHitl([], nowhere), /no interrupts were given/);
  await assert.rejects(
    answerHitl({ id: "i-3", value: { actionRequests: [{ name: "x", args: {} }], reviewConfigs: [] } }, nowhere),
    /interrupt i-3: no reviewConfigs entry for actionRequests\[0\] \(x\)/,
  );
});

test("local $refs are inlined for the gateway; a recursive schema is not sent", () => {
  assert.deepEqual(
    inlineRefs({
      type: "object",
      properties: { a: { $ref: "#/$defs/Name" }, b: { $ref: "#/properties/a", description: "again" } },
      $defs: { Name: { type: "string", maxLength: 5 } },
    }),
    {
      type: "object",
      properties: { a: { type: "string", maxLength: 5 }, b: { type: "string", maxLength: 5, description: "again" } },
    },
  );
  assert.equal(
    inlineRefs({ $ref: "#/$defs/Node", $defs: { Node: { type: "object", properties: { next: { $ref: "#/$defs/Node" } } } } }),
    null,
  );
});

test("a decline of a call that allows no reject is an error, not a decision the middleware refuses", () => {
  const call = { name: "deploy", args: {}, decisions: ["approve", "edit"] as const };
  const declined = { type: "reject" as const, args: null, message: DECLINED_MESSAGE, outcome: "declined" as const, user: null };
  assert.throws(() => hitlDecision(call, declined), /^Error: the request was declined, which rejects every call, but deploy allows only approve, edit$/);
  const named = { ...declined, request: { session: "s", id: "approval-1" } };
  assert.throws(
    () => hitlDecision(call, named, "i-1"),
    /^Error: interrupt i-1, request approval-1 of session s: the request was declined, which rejects every call/,
  );
  const reject = { ...declined, message: null, outcome: "answered" as const };
  assert.deepEqual(hitlDecision({ ...call, decisions: ["approve", "reject"] }, reject), { type: "reject" });
});
