/** `askgate/mastra` against the real gateway and the real `@mastra/core`: an `Agent` on the AI
 * SDK's `MockLanguageModelV4`, in a `Mastra` with in-memory storage, whose `generate()` run
 * suspends for a tool call's approval or on `askUserTool`; a tab answers (or declines, lets the
 * deadline pass, or the ask is withdrawn), and the resumed run shows exactly what the person
 * decided: the tool ran or did not, and the model read their reason or their answer. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { askUserTool, createTool } from "@mastra/core/tools";
import { MockLanguageModelV4 } from "ai/test";
import { z } from "zod";

import { Client, NotAnswered, type PostedRequest } from "../src/index.js";
import {
  DECLINED_MESSAGE,
  TIMED_OUT_MESSAGE,
  answerAskUser,
  approveToolCalls,
  isApprovalSuspension,
  isAskUserSuspension,
} from "../src/mastra/index.js";
import { Gateway, Tab, within, USAGE } from "./support.js";

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

/** The next request the tab is shown. */
async function nextRequest(tab: Tab): Promise<Record<string, unknown>> {
  return (await tab.next("request"))["request"] as Record<string, unknown>;
}

/** An `onPosted` to pass an adapter, and the requests it is called with, once it is. */
function whenPosted(): { onPosted: (requests: PostedRequest[]) => void; posted: Promise<PostedRequest[]> } {
  let onPosted: (requests: PostedRequest[]) => void = () => undefined;
  const posted = new Promise<PostedRequest[]>((resolve) => {
    onPosted = resolve;
  });
  return { onPosted, posted };
}

type Part = { type: "tool-call"; toolCallId: string; toolName: string; input: string } | { type: "text"; text: string };

/** A model turn calling `name` with `args`. */
function call(toolCallId: string, toolName: string, args: Record<string, unknown>): Part {
  return { type: "tool-call", toolCallId, toolName, input: JSON.stringify(args) };
}

type AgentModel = ConstructorParameters<typeof Agent>[0]["model"];

const DONE: Part = { type: "text", text: "done" };

/** An agent whose model plays `turns` in order (a turn: its parts), in a `Mastra` with
 * in-memory storage; records what its tools ran and every prompt the model was given. */
class World {
  readonly sql: Array<Record<string, unknown>> = [];
  readonly mail: Array<Record<string, unknown>> = [];
  readonly prompts: unknown[][] = [];
  readonly agent;

  constructor(turns: Part[][]) {
    const left = [...turns];
    const model = new MockLanguageModelV4({
      doGenerate: async (options) => {
        this.prompts.push(options.prompt as unknown[]);
        const content = left.shift();
        if (content === undefined) {
          throw new Error("the model was called more often than the test scripted");
        }
        return {
          content,
          finishReason: { unified: content.some((part) => part.type === "tool-call") ? "tool-calls" : "stop", raw: undefined },
          usage: USAGE,
          warnings: [],
        };
      },
    });
    const runSql = createTool({
      id: "runSql",
      description: "Run a SQL statement.",
      inputSchema: z.object({ query: z.string(), limit: z.number().int().default(10) }),
      requireApproval: true,
      execute: async (input) => {
        this.sql.push(input);
        return `ran ${input.query}`;
      },
    });
    const sendEmail = createTool({
      id: "sendEmail",
      description: "Send an email.",
      inputSchema: z.object({ to: z.string() }),
      requireApproval: true,
      execute: async (input) => {
        this.mail.push(input);
        return `sent to ${input.to}`;
      },
    });
    const agent = new Agent({
      id: "ops",
      name: "ops",
      instructions: "Keep the database tidy.",
      // ai 7's provider types (a finish reason "interrupted", read-only JSON values) are newer
      // than the copy @mastra/core 1.71 bundles, so the mock is Mastra's model at run time only.
      model: model as unknown as AgentModel,
      tools: { runSql, sendEmail, askUser: askUserTool },
    });
    const mastra = new Mastra({ agents: { ops: agent }, storage: new InMemoryStore(), logger: false });
    this.agent = mastra.getAgent("ops");
  }

  /** What the model read on its last turn as each tool's result, by tool call id. */
  lastResults(): Record<string, unknown> {
    const results: Record<string, unknown> = {};
    for (const message of this.prompts.at(-1) ?? []) {
      const { role, content } = message as { role: string; content: unknown };
      if (role !== "tool" || !Array.isArray(content)) {
        continue;
      }
      for (const part of content as Array<{ type: string; toolCallId: string; output: { value: unknown } }>) {
        if (part.type === "tool-result") {
          results[part.toolCallId] = part.output.value;
        }
      }
    }
    return results;
  }
}

/** Mastra's own words to the model for a call declined without a reason. */
const NOT_APPROVED = /not approved/i;

test("an approved tool call runs with the model's args, and the run ends", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-approve";
  const world = new World([[call("call_1", "runSql", { query: "DROP TABLE users" })], [DONE]]);
  const result = await world.agent.generate("Clean up");
  assert.equal(result.finishReason, "suspended");
  assert.ok(isApprovalSuspension(result) && !isAskUserSuspension(result));
  const tab = await gateway.tab(session);
  try {
    const { onPosted, posted } = whenPosted();
    const approving = approveToolCalls(world.agent, result, { url: gateway.url, session, title: "Clean up", onPosted });
    const shown = await nextRequest(tab);
    assert.equal(shown["dialect"], "approval");
    assert.equal(shown["title"], "Clean up");
    assert.deepEqual(shown["calls"], [
      {
        name: "runSql",
        args: { query: "DROP TABLE users" },
        description: "Run a SQL statement.",
        decisions: ["approve", "reject"],
        edit_check: "object",
      },
    ]);
    assert.equal((await within(posted))[0]!.id, shown["id"]);
    assert.deepEqual(world.sql, [], "nothing runs before the person decides");
    tab.answer(String(shown["id"]), { decisions: [{ type: "approve" }] });
    const resumed = await within(approving, 20_000, "the resumed run");
    assert.equal(resumed.finishReason, "stop");
    assert.equal(resumed.text, "done");
    assert.deepEqual(world.sql, [{ query: "DROP TABLE users", limit: 10 }]);
    assert.deepEqual(world.lastResults(), { call_1: "ran DROP TABLE users" });
  } finally {
    tab.close();
  }
});

test("a rejected call does not run and the model reads the person's reason", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-reject";
  const world = new World([[call("call_1", "runSql", { query: "DROP TABLE users" })], [DONE]]);
  const result = await world.agent.generate("Clean up");
  const tab = await gateway.tab(session);
  try {
    const approving = approveToolCalls(world.agent, result, { url: gateway.url, session });
    tab.answer(String((await nextRequest(tab))["id"]), { decisions: [{ type: "reject", message: "Not today." }] });
    const resumed = await within(approving, 20_000, "the resumed run");
    assert.equal(resumed.finishReason, "stop");
    assert.deepEqual(world.sql, []);
    assert.deepEqual(world.lastResults(), { call_1: "Not today." });
  } finally {
    tab.close();
  }
});

test("two calls of one step are asked about in turn, one suspension a call, each decided on its own", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-two";
  const world = new World([
    [call("call_1", "runSql", { query: "DELETE FROM logs" }), call("call_2", "sendEmail", { to: "ops@example.com" })],
    [DONE],
  ]);
  let result = await world.agent.generate("Clean up and tell ops");
  const tab = await gateway.tab(session);
  try {
    const options = { url: gateway.url, session };
    const seen: Array<Record<string, unknown>> = [];
    const deciding = (async () => {
      while (isApprovalSuspension(result)) {
        result = await approveToolCalls(world.agent, result, options);
        seen.push({ finishReason: result.finishReason, sql: world.sql.length, mail: world.mail.length });
      }
      return result;
    })();
    const first = await nextRequest(tab);
    assert.equal((first["calls"] as Array<Record<string, unknown>>)[0]!["name"], "runSql");
    tab.answer(String(first["id"]), { decisions: [{ type: "approve" }] });
    const second = await nextRequest(tab);
    assert.notEqual(second["id"], first["id"]);
    assert.deepEqual((second["calls"] as Array<Record<string, unknown>>)[0]!["args"], { to: "ops@example.com" });
    tab.answer(String(second["id"]), { decisions: [{ type: "reject" }] });
    const resumed = await within(deciding, 20_000, "the resumed run");
    assert.equal(resumed.finishReason, "stop");
    // The first call returned the run resumed past call_1 (which ran), suspended on call_2.
    assert.deepEqual(seen, [
      { finishReason: "suspended", sql: 1, mail: 0 },
      { finishReason: "stop", sql: 1, mail: 0 },
    ]);
    assert.deepEqual(world.sql, [{ query: "DELETE FROM logs", limit: 10 }]);
    assert.deepEqual(world.mail, []);
    const results = world.lastResults();
    assert.equal(results["call_1"], "ran DELETE FROM logs");
    assert.match(String(results["call_2"]), NOT_APPROVED);
  } finally {
    tab.close();
  }
});

test("a second call not answered in time leaves the run resumed past the first, to call again with", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-second-late";
  const world = new World([
    [call("call_1", "runSql", { query: "DELETE FROM logs" }), call("call_2", "sendEmail", { to: "ops@example.com" })],
    [DONE],
  ]);
  const result = await world.agent.generate("Clean up and tell ops");
  const tab = await gateway.tab(session);
  try {
    // A `wait` the first call is answered well within: only a second ask could run it out.
    const approving = approveToolCalls(world.agent, result, { url: gateway.url, session, wait: 10 });
    tab.answer(String((await nextRequest(tab))["id"]), { decisions: [{ type: "approve" }] });
    const afterFirst = await within(approving, 20_000, "the run resumed past the first call");
    assert.ok(isApprovalSuspension(afterFirst), "suspended on the second call");
    assert.deepEqual(world.sql, [{ query: "DELETE FROM logs", limit: 10 }]);

    const late = whenPosted();
    await assert.rejects(
      approveToolCalls(world.agent, afterFirst, { url: gateway.url, session, wait: 0.2, onPosted: late.onPosted }),
      NotAnswered,
    );
    const second = await nextRequest(tab);
    assert.deepEqual((second["calls"] as Array<Record<string, unknown>>)[0]!["args"], { to: "ops@example.com" });
    // Called again with the result it had: the same request, and the first call is not run again.
    const again = whenPosted();
    const approvingAgain = approveToolCalls(world.agent, afterFirst, { url: gateway.url, session, onPosted: again.onPosted });
    assert.equal((await within(again.posted))[0]!.id, (await late.posted)[0]!.id, "the same request");
    tab.answer(String(second["id"]), { decisions: [{ type: "approve" }] });
    assert.equal((await within(approvingAgain, 20_000, "the resumed run")).finishReason, "stop");
    assert.deepEqual(world.sql, [{ query: "DELETE FROM logs", limit: 10 }]);
    assert.deepEqual(world.mail, [{ to: "ops@example.com" }]);
  } finally {
    tab.close();
  }
});

test("a resume that fails leaves the decision at the gateway, and calling again resumes with it", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-resume-fails";
  const world = new World([[call("call_1", "runSql", { query: "VACUUM" })], [DONE]]);
  const result = await world.agent.generate("Tidy");
  let failures = 1;
  // The agent as Mastra's storage might make it: the first resume fails before it does anything.
  const flaky = {
    approveToolCallGenerate: async (target: Parameters<typeof world.agent.approveToolCallGenerate>[0]) => {
      if (failures > 0) {
        failures -= 1;
        throw new Error("the store is down");
      }
      return world.agent.approveToolCallGenerate(target);
    },
    declineToolCallGenerate: (target: Parameters<typeof world.agent.declineToolCallGenerate>[0]) =>
      world.agent.declineToolCallGenerate(target),
  };
  const tab = await gateway.tab(session);
  try {
    const approving = approveToolCalls(flaky, result, { url: gateway.url, session });
    tab.answer(String((await nextRequest(tab))["id"]), { decisions: [{ type: "approve" }] });
    await assert.rejects(within(approving), /the store is down/);
    assert.deepEqual(world.sql, []);
    // Called again: the person's decision is collected as it was (nothing new is posted, nobody
    // is asked again), and the run resumes with it.
    const posted: PostedRequest[] = [];
    const resumed = await within(
      approveToolCalls(flaky, result, { url: gateway.url, session, wait: 5, onPosted: (requests) => posted.push(...requests) }),
      20_000,
      "the run resumed with the kept decision",
    );
    assert.equal(resumed.finishReason, "stop");
    assert.deepEqual(world.sql, [{ query: "VACUUM", limit: 10 }]);
    assert.deepEqual(posted, [], "nothing was posted anew");
  } finally {
    tab.close();
  }
});

test("a decline declines the call with DECLINED_MESSAGE, a passed deadline with TIMED_OUT_MESSAGE", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-declined";
  const tab = await gateway.tab(session);
  try {
    const world = new World([[call("call_1", "runSql", { query: "DROP TABLE users" })], [DONE]]);
    const approving = approveToolCalls(world.agent, await world.agent.generate("Clean up"), { url: gateway.url, session });
    tab.decline(String((await nextRequest(tab))["id"]));
    assert.equal((await within(approving, 20_000, "the resumed run")).finishReason, "stop");
    assert.deepEqual(world.sql, []);
    assert.deepEqual(world.lastResults(), { call_1: DECLINED_MESSAGE });

    const late = new World([[call("call_1", "runSql", { query: "DROP TABLE users" })], [DONE]]);
    const resumed = await within(
      approveToolCalls(late.agent, await late.agent.generate("Clean up"), { url: gateway.url, session, timeoutS: 0.5 }),
      20_000,
      "the run resumed at the deadline",
    );
    assert.equal(resumed.finishReason, "stop");
    assert.deepEqual(late.sql, []);
    assert.deepEqual(late.lastResults(), { call_1: TIMED_OUT_MESSAGE });
  } finally {
    tab.close();
  }
});

test("past `wait` the run stays suspended, and asking again collects the same request", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-wait";
  const world = new World([[call("call_1", "runSql", { query: "VACUUM" })], [DONE]]);
  const result = await world.agent.generate("Tidy");
  const tab = await gateway.tab(session);
  try {
    const first = whenPosted();
    await assert.rejects(
      approveToolCalls(world.agent, result, { url: gateway.url, session, wait: 0.2, onPosted: first.onPosted }),
      NotAnswered,
    );
    const shown = await nextRequest(tab);
    const second = whenPosted();
    const approving = approveToolCalls(world.agent, result, { url: gateway.url, session, onPosted: second.onPosted });
    assert.equal((await within(second.posted))[0]!.id, (await first.posted)[0]!.id, "the same request");
    tab.answer(String(shown["id"]), { decisions: [{ type: "approve" }] });
    assert.equal((await within(approving, 20_000, "the resumed run")).finishReason, "stop");
    assert.deepEqual(world.sql, [{ query: "VACUUM", limit: 10 }]);
  } finally {
    tab.close();
  }
});

test("aborting the signal withdraws the approval request and the call does not run", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-abort";
  const world = new World([[call("call_1", "runSql", { query: "DROP TABLE users" })], [DONE]]);
  const result = await world.agent.generate("Clean up");
  const tab = await gateway.tab(session);
  try {
    const controller = new AbortController();
    const approving = approveToolCalls(world.agent, result, { url: gateway.url, session, signal: controller.signal });
    const shown = await nextRequest(tab);
    controller.abort();
    await assert.rejects(within(approving), { name: "AbortError" });
    assert.equal((await tab.next("resolved", String(shown["id"])))["outcome"], "withdrawn");
    assert.deepEqual(world.sql, []);
  } finally {
    tab.close();
  }
});

test("askUserTool questions (text, one choice, several) are asked in turn and the model reads each answer", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-ask";
  const world = new World([
    [call("ask_1", "askUser", { question: "What should the release be called?" })],
    [
      call("ask_2", "askUser", {
        question: "Which environment?",
        options: [{ label: "prod", description: "The live site." }, { label: "staging" }],
      }),
    ],
    [
      call("ask_3", "askUser", {
        question: "Which platforms?",
        options: [{ label: "linux" }, { label: "macOS" }, { label: "Windows" }],
        selectionMode: "multi_select",
      }),
    ],
    [DONE],
  ]);
  const result = await world.agent.generate("Prepare the release");
  assert.ok(isAskUserSuspension(result) && !isApprovalSuspension(result));
  const tab = await gateway.tab(session);
  try {
    let current = result;
    const answering = (async () => {
      while (isAskUserSuspension(current)) {
        current = await answerAskUser(world.agent, current, { url: gateway.url, session, title: "Release" });
      }
      return current;
    })();

    const text = await nextRequest(tab);
    assert.equal(text["dialect"], "deepagents");
    assert.equal(text["title"], "Release");
    assert.deepEqual(text["questions"], [{ question: "What should the release be called?", type: "text", required: true }]);
    tab.answer(String(text["id"]), { answers: ["Kestrel"] });

    const single = await nextRequest(tab);
    assert.deepEqual(single["questions"], [
      {
        question: "Which environment?\n\n- prod: The live site.",
        type: "multiple_choice",
        choices: [{ value: "prod" }, { value: "staging" }],
        required: true,
      },
    ]);
    tab.answer(String(single["id"]), { answers: ["staging"] });

    const several = await nextRequest(tab);
    assert.equal((several["questions"] as Array<Record<string, unknown>>)[0]!["type"], "multi_select");
    tab.answer(String(several["id"]), { answers: [["Windows", "linux"]] });

    const resumed = await within(answering, 20_000, "the resumed run");
    assert.equal(resumed.finishReason, "stop");
    assert.equal(resumed.text, "done");
    const read = (id: string): unknown => world.lastResults()[id];
    assert.deepEqual(read("ask_1"), { content: "User answered: Kestrel", isError: false });
    assert.deepEqual(read("ask_2"), { content: "User answered: staging", isError: false });
    // The labels picked, in the order offered.
    assert.deepEqual(read("ask_3"), { content: "User answered: linux, Windows", isError: false });
  } finally {
    tab.close();
  }
});

test("a declined askUserTool question is answered with DECLINED_MESSAGE", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-ask-declined";
  const world = new World([[call("ask_1", "askUser", { question: "Proceed?" })], [DONE]]);
  const tab = await gateway.tab(session);
  try {
    const answering = answerAskUser(world.agent, await world.agent.generate("Go"), { url: gateway.url, session });
    tab.decline(String((await nextRequest(tab))["id"]));
    assert.equal((await within(answering, 20_000, "the resumed run")).finishReason, "stop");
    assert.deepEqual(world.lastResults(), { ask_1: { content: `User answered: ${DECLINED_MESSAGE}`, isError: false } });
  } finally {
    tab.close();
  }
});

test("a run that asks and then needs an approval is seen through by the two in a loop", { timeout: 60_000 }, async () => {
  const session = "ts-mastra-loop";
  const world = new World([
    [call("ask_1", "askUser", { question: "Which table?", options: [{ label: "logs" }, { label: "users" }] })],
    [call("call_1", "runSql", { query: "TRUNCATE logs" })],
    [DONE],
  ]);
  let result = await world.agent.generate("Truncate a table");
  const options = { url: gateway.url, session };
  // An approval suspension is not askUserTool's, and the other way round.
  await assert.rejects(approveToolCalls(world.agent, result, options), /suspended by askUser \(ask_1\) itself/);
  const tab = await gateway.tab(session);
  try {
    const deciding = (async () => {
      while (result.finishReason === "suspended") {
        result = isAskUserSuspension(result)
          ? await answerAskUser(world.agent, result, options)
          : await approveToolCalls(world.agent, result, options);
      }
      return result;
    })();
    tab.answer(String((await nextRequest(tab))["id"]), { answers: ["logs"] });
    const approval = await nextRequest(tab);
    assert.deepEqual((approval["calls"] as Array<Record<string, unknown>>)[0]!["args"], { query: "TRUNCATE logs" });
    tab.answer(String(approval["id"]), { decisions: [{ type: "approve" }] });
    const ended = await within(deciding, 20_000, "the run's end");
    assert.equal(ended.text, "done");
    assert.deepEqual(world.sql, [{ query: "TRUNCATE logs", limit: 10 }]);
    // A result that is not suspended is handed back as it is.
    assert.equal(await approveToolCalls(world.agent, ended, options), ended);
    assert.equal(await answerAskUser(world.agent, ended, options), ended);
  } finally {
    tab.close();
  }
});

test("an approval suspension is refused by answerAskUser before anything is asked", { timeout: 60_000 }, async () => {
  const world = new World([[call("call_1", "runSql", { query: "SELECT 1" })], [DONE]]);
  const result = await world.agent.generate("Look");
  await assert.rejects(
    answerAskUser(world.agent, result, { url: "http://127.0.0.1:9", session: "s" }),
    /suspended on runSql \(call_1\) for its approval/,
  );
});
