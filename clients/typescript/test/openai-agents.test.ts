/** `askgate/openai-agents` with the real Agents SDK (`@openai/agents` 0.20) and its own test
 * model (`ScriptedModel`): a run paused on `needsApproval` tools, decided by a person in a tab
 * through the real gateway, and resumed with the `RunState` `approveInterruptions` returns. Each
 * test checks what ran and what the model read on its next turn. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Agent, RunState, Runner, tool } from "@openai/agents";
import { ScriptedModel, assistantMessage, functionCall, modelResponder } from "@openai/agents/testing";
import { z } from "zod";

import { Client, type PostedRequest, RequestWithdrawn } from "../src/index.js";
import { DECLINED_MESSAGE, TIMED_OUT_MESSAGE, approveInterruptions } from "../src/openai-agents/index.js";
import { FakeGateway, Gateway, Tab, within } from "./support.js";

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

/** The tool outputs the model read on its last turn, by call id. */
function outputsRead(model: ScriptedModel): Record<string, string> {
  const input = model.lastCall?.request.input;
  const seen: Record<string, string> = {};
  for (const item of Array.isArray(input) ? input : []) {
    if (item.type === "function_call_result") {
      const output: unknown = item.output;
      const text = (output as { text?: unknown } | null)?.text;
      seen[item.callId] = typeof output === "string" ? output : typeof text === "string" ? text : JSON.stringify(output);
    }
  }
  return seen;
}

/** The SDK's own test model, scripted: it calls `calls` (`[callId, tool, args]`) on its first
 * turn, then says which tool outputs it read. */
function scripted(calls: Array<[string, string, Record<string, unknown>]>): ScriptedModel {
  const model: ScriptedModel = new ScriptedModel([
    ...(calls.length > 0 ? [calls.map(([callId, name, args]) => functionCall(name, args, { callId }))] : []),
    modelResponder(() => [assistantMessage(`read: ${Object.values(outputsRead(model)).join(" | ")}`)]),
  ]);
  return model;
}

/** A dba agent with two tools that need approval, and what they ran. */
function world(...calls: Array<[string, string, Record<string, unknown>]>) {
  const ran: string[] = [];
  const runSql = tool({
    name: "run_sql",
    description: "Run a SQL statement.",
    parameters: z.object({ query: z.string() }),
    needsApproval: true,
    execute: async ({ query }) => {
      ran.push(query);
      return `ran ${query}`;
    },
  });
  const sendEmail = tool({
    name: "send_email",
    description: "Send an email.",
    parameters: z.object({ to: z.string(), body: z.string() }),
    needsApproval: true,
    execute: async ({ to }) => {
      ran.push(`mail ${to}`);
      return `sent to ${to}`;
    },
  });
  const model = scripted(calls);
  const agent = new Agent({ name: "dba", instructions: "Keep the database tidy.", model, tools: [runSql, sendEmail] });
  const runner = new Runner({ tracingDisabled: true });
  return { ran, model, agent, runner };
}

const SQL: [string, string, Record<string, unknown>] = ["call_1", "run_sql", { query: "DROP TABLE users" }];
const MAIL: [string, string, Record<string, unknown>] = ["call_2", "send_email", { to: "ops@example.com", body: "done" }];

/** The next request a tab is shown. */
async function shown(tab: Tab): Promise<Record<string, unknown> & { id: string }> {
  const request = (await tab.next("request"))["request"] as Record<string, unknown>;
  return { ...request, id: String(request["id"]) };
}

test("an approved call runs when the run is resumed, and the model reads its output", { timeout: 60_000 }, async () => {
  const session = "ts-oa-approve";
  const { ran, model, agent, runner } = world(SQL);
  const paused = await runner.run(agent, "Clean up");
  assert.equal(paused.interruptions.length, 1);
  assert.deepEqual(ran, []);

  let told: (posted: PostedRequest[]) => void = () => undefined;
  const posted = new Promise<PostedRequest[]>((resolvePosted) => (told = resolvePosted));
  const deciding = approveInterruptions(paused, { url: gateway.url, session, title: "dba", onPosted: told });
  // The tab joins through the link `onPosted` gave.
  const [first, ...more] = await within(posted, 20_000, "onPosted");
  assert.equal(more.length, 0);
  assert.equal(first?.session, session);
  assert.ok(first?.viewerUrl);
  const tab = await Tab.join(first.viewerUrl);
  try {
    const request = await shown(tab);
    assert.equal(request["title"], "dba");
    const [call] = request["calls"] as Array<Record<string, unknown>>;
    assert.equal(call?.["name"], "run_sql");
    assert.deepEqual(call?.["args"], { query: "DROP TABLE users" });
    assert.equal(call?.["description"], "Run a SQL statement.");
    const schema = call?.["args_schema"] as { properties: { query: { type: string } } };
    assert.equal(schema.properties.query.type, "string");
    assert.deepEqual(call?.["decisions"], ["approve", "reject"]);
    // The SDK cannot run an edited call: the gateway refuses an edit.
    tab.answer(request.id, { decisions: [{ type: "edit", args: { query: "SELECT 1" } }] });
    const refused = await tab.next("answer_rejected", request.id);
    assert.match(JSON.stringify(refused), /response\.decisions\[0\]\.type/);
    tab.answer(request.id, { decisions: [{ type: "approve" }] });
    const state = await within(deciding);
    assert.ok(state instanceof RunState);
    assert.equal(state, paused.state, "the run's own state, decided");

    const resumed = await runner.run(agent, state);
    assert.equal(resumed.interruptions.length, 0);
    assert.deepEqual(ran, ["DROP TABLE users"]);
    assert.deepEqual(outputsRead(model), { call_1: "ran DROP TABLE users" });
    assert.equal(resumed.finalOutput, "read: ran DROP TABLE users");
    model.assertComplete();
  } finally {
    tab.close();
  }
});

test("several calls go in one request; a rejected one does not run and the model reads the reason", { timeout: 60_000 }, async () => {
  const session = "ts-oa-batch";
  const tab = await gateway.tab(session);
  try {
    const { ran, model, agent, runner } = world(SQL, MAIL);
    const paused = await runner.run(agent, "Clean up");
    assert.equal(paused.interruptions.length, 2);
    const posted: PostedRequest[] = [];
    const deciding = approveInterruptions(paused, {
      url: gateway.url,
      session,
      onPosted: (requests) => posted.push(...requests),
    });
    const request = await shown(tab);
    assert.deepEqual(
      (request["calls"] as Array<Record<string, unknown>>).map((call) => call["name"]),
      ["run_sql", "send_email"],
    );
    tab.answer(request.id, { decisions: [{ type: "reject", message: "Not on production." }, { type: "approve" }] });
    const state = await within(deciding);
    assert.equal(posted.length, 1, "both calls go in one request");

    const resumed = await runner.run(agent, state);
    assert.deepEqual(ran, ["mail ops@example.com"]);
    assert.deepEqual(outputsRead(model), { call_1: "Not on production.", call_2: "sent to ops@example.com" });
    assert.equal(resumed.finalOutput, "read: Not on production. | sent to ops@example.com");
  } finally {
    tab.close();
  }
});

test("a reject without a reason gives the model the SDK's own rejection text", { timeout: 60_000 }, async () => {
  const session = "ts-oa-reject-bare";
  const tab = await gateway.tab(session);
  try {
    const { ran, model, agent, runner } = world(SQL);
    const paused = await runner.run(agent, "Clean up");
    const deciding = approveInterruptions(paused, { url: gateway.url, session });
    const request = await shown(tab);
    tab.answer(request.id, { decisions: [{ type: "reject" }] });
    await runner.run(agent, await within(deciding));
    assert.deepEqual(ran, []);
    // The SDK's default (its `TOOL_APPROVAL_REJECTION_MESSAGE`, not exported).
    assert.deepEqual(outputsRead(model), { call_1: "Tool execution was not approved." });
  } finally {
    tab.close();
  }
});

test("a declined request rejects every call with the declined message", { timeout: 60_000 }, async () => {
  const session = "ts-oa-declined";
  const tab = await gateway.tab(session);
  try {
    const { ran, model, agent, runner } = world(SQL, MAIL);
    const paused = await runner.run(agent, "Clean up");
    const deciding = approveInterruptions(paused, { url: gateway.url, session });
    const request = await shown(tab);
    tab.decline(request.id);
    await runner.run(agent, await within(deciding));
    assert.deepEqual(ran, []);
    assert.deepEqual(outputsRead(model), { call_1: DECLINED_MESSAGE, call_2: DECLINED_MESSAGE });
    assert.equal(DECLINED_MESSAGE, "The person declined.");
  } finally {
    tab.close();
  }
});

test("a request whose deadline passes rejects every call with the timed-out message", { timeout: 60_000 }, async () => {
  const { ran, model, agent, runner } = world(SQL);
  const paused = await runner.run(agent, "Clean up");
  // Nobody answers: the gateway's deadline ends the request.
  const state = await within(approveInterruptions(paused, { url: gateway.url, session: "ts-oa-timeout", timeoutS: 0.5 }));
  await runner.run(agent, state);
  assert.deepEqual(ran, []);
  assert.deepEqual(outputsRead(model), { call_1: TIMED_OUT_MESSAGE });
});

test("a stored state, loaded back, is decided and resumed", { timeout: 60_000 }, async () => {
  const session = "ts-oa-stored";
  const tab = await gateway.tab(session);
  try {
    const { ran, model, agent, runner } = world(SQL);
    const stored = (await runner.run(agent, "Clean up")).state.toString();
    const loaded = await RunState.fromString(agent, stored);
    const deciding = approveInterruptions(loaded, { url: gateway.url, session });
    const request = await shown(tab);
    tab.answer(request.id, { decisions: [{ type: "reject", message: "Use a migration." }] });
    const state = await within(deciding);
    assert.equal(state, loaded);
    await runner.run(agent, state);
    assert.deepEqual(ran, []);
    assert.deepEqual(outputsRead(model), { call_1: "Use a migration." });
  } finally {
    tab.close();
  }
});

test("a run without interruptions asks nothing", { timeout: 60_000 }, async () => {
  const { agent, runner } = world();
  const finished = await runner.run(agent, "Nothing to do");
  assert.equal(finished.finalOutput, "read: ");
  // A stand-in gateway that records every call (and refuses it): none may come.
  const recorder = await new FakeGateway((hit) => hit.respond(500, {})).start();
  try {
    const state = await approveInterruptions(finished, { url: recorder.url, session: "ts-oa-nothing" });
    assert.equal(state, finished.state);
    assert.deepEqual(
      recorder.hits.map((hit) => `${hit.method} ${hit.path}`),
      [],
      "the gateway was not contacted",
    );
  } finally {
    await recorder.close();
  }
});

test("aborting the approval withdraws its request", { timeout: 60_000 }, async () => {
  const session = "ts-oa-abort";
  const tab = await gateway.tab(session);
  try {
    const { agent, runner } = world(SQL);
    const paused = await runner.run(agent, "Clean up");
    const controller = new AbortController();
    const deciding = approveInterruptions(paused, { url: gateway.url, session }, { signal: controller.signal });
    deciding.catch(() => undefined);
    const request = await shown(tab);
    controller.abort();
    await assert.rejects(within(deciding), { name: "AbortError" });
    const resolved = await tab.next("resolved", request.id);
    assert.equal(resolved["outcome"], "withdrawn");
    assert.equal(paused.state.getInterruptions().length, 1, "the state is left undecided");
  } finally {
    tab.close();
  }
});

test("a request withdrawn by someone else throws RequestWithdrawn", { timeout: 60_000 }, async () => {
  const session = "ts-oa-withdrawn";
  const tab = await gateway.tab(session);
  try {
    const { agent, runner } = world(SQL);
    const paused = await runner.run(agent, "Clean up");
    const deciding = approveInterruptions(paused, { url: gateway.url, session });
    deciding.catch(() => undefined);
    const request = await shown(tab);
    const withdrawn = await fetch(`${gateway.url}/v1/sessions/${session}/requests/${request.id}`, { method: "DELETE" });
    assert.equal(withdrawn.status, 200);
    await assert.rejects(within(deciding), RequestWithdrawn);
  } finally {
    tab.close();
  }
});
