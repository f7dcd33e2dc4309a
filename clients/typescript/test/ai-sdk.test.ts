/** `askgate/ai-sdk` with the real AI SDK (`ai` 7) and its own test model: a generation paused
 * on `toolApproval` calls, decided by a person in a tab through the real gateway, and resumed
 * with the message `approveToolCalls` builds; and `askUserTool`, answered by a tab. Each test
 * checks what ran and what the model read on its next call. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import type { LanguageModelV4Content, LanguageModelV4Prompt } from "@ai-sdk/provider";
import { type ModelMessage, type ToolSet, generateText, isStepCount, jsonSchema, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";

import { Client, NotAnswered, type PostedRequest, RequestWithdrawn } from "../src/index.js";
import {
  ASK_USER_DECLINED,
  ASK_USER_TIMED_OUT,
  ASK_USER_TOOL_NAME,
  DECLINED_MESSAGE,
  TIMED_OUT_MESSAGE,
  approveToolCalls,
  askUserTool,
} from "../src/ai-sdk/index.js";
import { FakeGateway, Gateway, Tab, within, USAGE } from "./support.js";

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

/** A model reply that calls the tools `calls` (`[id, tool, input]`). */
function calling(...calls: Array<[string, string, Record<string, unknown>]>) {
  const content: LanguageModelV4Content[] = calls.map(([toolCallId, toolName, input]) => ({
    type: "tool-call",
    toolCallId,
    toolName,
    input: JSON.stringify(input),
  }));
  return { content, finishReason: { unified: "tool-calls" as const, raw: undefined }, usage: USAGE, warnings: [] };
}

/** A model reply that says `text` and stops. */
function saying(text: string) {
  const content: LanguageModelV4Content[] = [{ type: "text", text }];
  return { content, finishReason: { unified: "stop" as const, raw: undefined }, usage: USAGE, warnings: [] };
}

/** The tool outputs the model read in its `index`th call, by tool call id. */
function outputsSeen(model: MockLanguageModelV4, index: number): Record<string, unknown> {
  const prompt: LanguageModelV4Prompt | undefined = model.doGenerateCalls[index]?.prompt;
  assert.ok(prompt, `the model was not called a ${index + 1}th time`);
  const seen: Record<string, unknown> = {};
  for (const message of prompt) {
    if (message.role === "tool") {
      for (const part of message.content) {
        if (part.type === "tool-result") {
          seen[part.toolCallId] = part.output;
        }
      }
    }
  }
  return seen;
}

/** A file system of two tools, and what they did. */
function files(): { tools: ToolSet; ran: string[] } {
  const ran: string[] = [];
  const path = jsonSchema<{ path: string }>({
    type: "object",
    properties: { path: { type: "string" } },
    required: ["path"],
  });
  const tools = {
    deleteFile: tool({
      description: "Delete a file.",
      inputSchema: path,
      execute: async ({ path }) => {
        ran.push(`delete ${path}`);
        return `deleted ${path}`;
      },
    }),
    readFile: tool({
      description: "Read a file.",
      inputSchema: path,
      execute: async ({ path }) => {
        ran.push(`read ${path}`);
        return `read ${path}`;
      },
    }),
  };
  return { tools, ran };
}

/** The next request a tab is shown. */
async function shown(tab: Tab): Promise<Record<string, unknown> & { id: string }> {
  const request = (await tab.next("request"))["request"] as Record<string, unknown>;
  return { ...request, id: String(request["id"]) };
}

const USER: ModelMessage = { role: "user", content: "Tidy up /tmp" };

test("an approved call runs when the generation is resumed, and the model reads its result", { timeout: 60_000 }, async () => {
  const session = "ts-ai-approve";
  const tab = await gateway.tab(session);
  try {
    const { tools, ran } = files();
    const model = new MockLanguageModelV4({
      doGenerate: [calling(["call-1", "deleteFile", { path: "/tmp/a" }]), saying("all done")],
    });
    const toolApproval = { deleteFile: { type: "user-approval" as const, reason: "it deletes" } };
    const messages: ModelMessage[] = [USER];
    const paused = await generateText({ model, tools, toolApproval, messages });
    assert.equal(paused.stoppedBy, "approval");
    assert.deepEqual(ran, []);

    const posted: PostedRequest[] = [];
    const deciding = approveToolCalls(
      paused.content,
      { url: gateway.url, session, title: "Tidy", onPosted: (requests) => posted.push(...requests) },
      { tools },
    );
    const request = await shown(tab);
    assert.equal(request["title"], "Tidy");
    assert.equal(request["dialect"], "approval");
    assert.deepEqual(request["calls"], [
      {
        name: "deleteFile",
        args: { path: "/tmp/a" },
        description: "Delete a file.\n\nAsked because: it deletes",
        decisions: ["approve", "reject"],
        edit_check: "object",
      },
    ]);
    // The SDK cannot run an edited call: the gateway refuses an edit.
    tab.answer(request.id, { decisions: [{ type: "edit", args: { path: "/tmp/b" } }] });
    const refused = await tab.next("answer_rejected", request.id);
    assert.match(JSON.stringify(refused), /response\.decisions\[0\]\.type/);
    tab.answer(request.id, { decisions: [{ type: "approve" }] });
    const message = await within(deciding);
    assert.deepEqual(posted.map((p) => p.id), [request.id]);
    assert.deepEqual(message, {
      role: "tool",
      content: [{ type: "tool-approval-response", approvalId: approvalIdOf(paused.content, "call-1"), approved: true }],
    });

    messages.push(...paused.responseMessages, message);
    const resumed = await generateText({ model, tools, toolApproval, messages });
    assert.deepEqual(ran, ["delete /tmp/a"]);
    assert.deepEqual(outputsSeen(model, 1), { "call-1": { type: "text", value: "deleted /tmp/a" } });
    assert.equal(resumed.text, "all done");
  } finally {
    tab.close();
  }
});

/** The approval id of the request for tool call `toolCallId` in `content`. */
function approvalIdOf(content: ReadonlyArray<{ type: string }>, toolCallId: string): string {
  const part = content.find(
    (p) =>
      p.type === "tool-approval-request" &&
      (p as unknown as { toolCall: { toolCallId: string } }).toolCall.toolCallId === toolCallId,
  ) as { approvalId: string } | undefined;
  assert.ok(part, `no approval request for ${toolCallId}`);
  return part.approvalId;
}

test("several calls go in one request; a rejected one does not run and the model reads the reason", { timeout: 60_000 }, async () => {
  const session = "ts-ai-batch";
  const tab = await gateway.tab(session);
  try {
    const { tools, ran } = files();
    const model = new MockLanguageModelV4({
      doGenerate: [
        calling(["call-1", "deleteFile", { path: "/tmp/a" }], ["call-2", "deleteFile", { path: "/etc/passwd" }]),
        saying("did what I could"),
      ],
    });
    const toolApproval = { deleteFile: "user-approval" as const };
    const messages: ModelMessage[] = [USER];
    const paused = await generateText({ model, tools, toolApproval, messages });
    const posted: PostedRequest[] = [];
    const deciding = approveToolCalls(paused.content, {
      url: gateway.url,
      session,
      onPosted: (requests) => posted.push(...requests),
    });
    const request = await shown(tab);
    const calls = request["calls"] as Array<Record<string, unknown>>;
    assert.deepEqual(
      calls.map((call) => call["args"]),
      [{ path: "/tmp/a" }, { path: "/etc/passwd" }],
    );
    // Without `tools`, nothing describes the calls.
    assert.equal(calls[0]?.["description"], undefined);
    tab.answer(request.id, { decisions: [{ type: "approve" }, { type: "reject", message: "Not system files." }] });
    const message = await within(deciding);
    assert.equal(posted.length, 1, "both calls go in one request");
    assert.deepEqual(message.content, [
      { type: "tool-approval-response", approvalId: approvalIdOf(paused.content, "call-1"), approved: true },
      {
        type: "tool-approval-response",
        approvalId: approvalIdOf(paused.content, "call-2"),
        approved: false,
        reason: "Not system files.",
      },
    ]);

    messages.push(...paused.responseMessages, message);
    await generateText({ model, tools, toolApproval, messages });
    assert.deepEqual(ran, ["delete /tmp/a"]);
    assert.deepEqual(outputsSeen(model, 1), {
      "call-1": { type: "text", value: "deleted /tmp/a" },
      "call-2": { type: "execution-denied", reason: "Not system files." },
    });
  } finally {
    tab.close();
  }
});

test("a declined request rejects every call with the declined message", { timeout: 60_000 }, async () => {
  const session = "ts-ai-declined";
  const tab = await gateway.tab(session);
  try {
    const { tools, ran } = files();
    const model = new MockLanguageModelV4({
      doGenerate: [
        calling(["call-1", "deleteFile", { path: "/tmp/a" }], ["call-2", "readFile", { path: "/tmp/b" }]),
        saying("fine"),
      ],
    });
    const toolApproval = { deleteFile: "user-approval" as const, readFile: "user-approval" as const };
    const messages: ModelMessage[] = [USER];
    const paused = await generateText({ model, tools, toolApproval, messages });
    const deciding = approveToolCalls(paused.content, { url: gateway.url, session });
    const request = await shown(tab);
    tab.decline(request.id);
    const message = await within(deciding);
    assert.deepEqual(
      message.content.map((part) => part.type === "tool-approval-response" && [part.approved, part.reason]),
      [
        [false, DECLINED_MESSAGE],
        [false, DECLINED_MESSAGE],
      ],
    );
    messages.push(...paused.responseMessages, message);
    await generateText({ model, tools, toolApproval, messages });
    assert.deepEqual(ran, []);
    assert.deepEqual(outputsSeen(model, 1), {
      "call-1": { type: "execution-denied", reason: "The person declined." },
      "call-2": { type: "execution-denied", reason: "The person declined." },
    });
  } finally {
    tab.close();
  }
});

test("a request whose deadline passes rejects every call with the timed-out message", { timeout: 60_000 }, async () => {
  const { tools, ran } = files();
  const model = new MockLanguageModelV4({
    doGenerate: [calling(["call-1", "deleteFile", { path: "/tmp/a" }]), saying("ok")],
  });
  const toolApproval = { deleteFile: "user-approval" as const };
  const messages: ModelMessage[] = [USER];
  const paused = await generateText({ model, tools, toolApproval, messages });
  // Nobody answers: the gateway's deadline ends the request.
  const message = await within(
    approveToolCalls(paused.content, { url: gateway.url, session: "ts-ai-timeout", timeoutS: 0.5 }),
  );
  messages.push(...paused.responseMessages, message);
  await generateText({ model, tools, toolApproval, messages });
  assert.deepEqual(ran, []);
  assert.deepEqual(outputsSeen(model, 1), { "call-1": { type: "execution-denied", reason: TIMED_OUT_MESSAGE } });
});

test("calls the SDK decided itself are not asked about", { timeout: 60_000 }, async () => {
  const session = "ts-ai-automatic";
  const tab = await gateway.tab(session);
  try {
    const { tools, ran } = files();
    const model = new MockLanguageModelV4({
      doGenerate: [
        calling(
          ["call-1", "readFile", { path: "/tmp/a" }],
          ["call-2", "deleteFile", { path: "/tmp/b" }],
          ["call-3", "deleteFile", { path: "/" }],
        ),
        saying("done"),
      ],
    });
    // Reads run at once, deleting the root is refused at once, other deletes are asked.
    const toolApproval = ({ toolCall }: { toolCall: { toolName: string; input: unknown } }) =>
      toolCall.toolName === "readFile"
        ? ("approved" as const)
        : (toolCall.input as { path: string }).path === "/"
          ? { type: "denied" as const, reason: "never the root" }
          : ("user-approval" as const);
    const messages: ModelMessage[] = [USER];
    const paused = await generateText({ model, tools, toolApproval, messages });
    assert.equal(paused.content.filter((part) => part.type === "tool-approval-request").length, 3);
    assert.deepEqual(ran, ["read /tmp/a"]);

    const deciding = approveToolCalls(paused.content, { url: gateway.url, session });
    const request = await shown(tab);
    assert.deepEqual(
      (request["calls"] as Array<Record<string, unknown>>).map((call) => call["args"]),
      [{ path: "/tmp/b" }],
    );
    tab.answer(request.id, { decisions: [{ type: "approve" }] });
    const message = await within(deciding);
    assert.deepEqual(message.content, [
      { type: "tool-approval-response", approvalId: approvalIdOf(paused.content, "call-2"), approved: true },
    ]);

    messages.push(...paused.responseMessages, message);
    await generateText({ model, tools, toolApproval, messages });
    assert.deepEqual(ran, ["read /tmp/a", "delete /tmp/b"]);
    assert.deepEqual(outputsSeen(model, 1), {
      "call-1": { type: "text", value: "read /tmp/a" },
      "call-2": { type: "text", value: "deleted /tmp/b" },
      "call-3": { type: "execution-denied", reason: "never the root" },
    });
  } finally {
    tab.close();
  }
});

test("content without approval requests asks nothing", { timeout: 60_000 }, async () => {
  // A stand-in gateway that records every call (and refuses it): none may come.
  const recorder = await new FakeGateway((hit) => hit.respond(500, {})).start();
  try {
    const message = await approveToolCalls([{ type: "text", text: "hello" }], {
      url: recorder.url,
      session: "ts-ai-nothing",
    });
    assert.deepEqual(message, { role: "tool", content: [] });
    assert.deepEqual(recorder.hits.map((hit) => `${hit.method} ${hit.path}`), [], "the gateway was not contacted");
  } finally {
    await recorder.close();
  }
});

test("aborting the approval withdraws its request", { timeout: 60_000 }, async () => {
  const session = "ts-ai-abort";
  const tab = await gateway.tab(session);
  try {
    const { tools } = files();
    const model = new MockLanguageModelV4({ doGenerate: [calling(["call-1", "deleteFile", { path: "/tmp/a" }])] });
    const paused = await generateText({
      model,
      tools,
      toolApproval: { deleteFile: "user-approval" },
      messages: [USER],
    });
    const controller = new AbortController();
    const deciding = approveToolCalls(paused.content, { url: gateway.url, session }, { signal: controller.signal });
    deciding.catch(() => undefined);
    const request = await shown(tab);
    controller.abort();
    await assert.rejects(within(deciding), { name: "AbortError" });
    const resolved = await tab.next("resolved", request.id);
    assert.equal(resolved["outcome"], "withdrawn");
  } finally {
    tab.close();
  }
});

test("a request withdrawn by someone else throws RequestWithdrawn", { timeout: 60_000 }, async () => {
  const session = "ts-ai-withdrawn";
  const tab = await gateway.tab(session);
  try {
    const { tools } = files();
    const model = new MockLanguageModelV4({ doGenerate: [calling(["call-1", "deleteFile", { path: "/tmp/a" }])] });
    const paused = await generateText({
      model,
      tools,
      toolApproval: { deleteFile: "user-approval" },
      messages: [USER],
    });
    const deciding = approveToolCalls(paused.content, { url: gateway.url, session });
    deciding.catch(() => undefined);
    const request = await shown(tab);
    const withdrawn = await fetch(`${gateway.url}/v1/sessions/${session}/requests/${request.id}`, { method: "DELETE" });
    assert.equal(withdrawn.status, 200);
    await assert.rejects(within(deciding), RequestWithdrawn);

    // The withdrawal was acknowledged (it held no answer): asking again about the same calls
    // asks anew, under the same id, instead of being handed the withdrawal again.
    const again = approveToolCalls(paused.content, { url: gateway.url, session, wait: 10 });
    const asked = await tab.next("request", request.id);
    assert.equal((asked["request"] as Record<string, unknown>)["id"], request.id);
    tab.answer(request.id, { decisions: [{ type: "approve" }] });
    const message = await within(again);
    assert.deepEqual(message.content, [
      { type: "tool-approval-response", approvalId: approvalIdOf(paused.content, "call-1"), approved: true },
    ]);
  } finally {
    tab.close();
  }
});

test("two generations reusing a tool call id are asked about apart, each collected again by its content", { timeout: 60_000 }, async () => {
  const session = "ts-ai-reused-id";
  const tab = await gateway.tab(session);
  try {
    const { tools } = files();
    const toolApproval = { deleteFile: "user-approval" as const };
    // Providers and test models number their calls: two generations both call theirs call-1.
    const pause = async (path: string) =>
      generateText({
        model: new MockLanguageModelV4({ doGenerate: [calling(["call-1", "deleteFile", { path }])] }),
        tools,
        toolApproval,
        messages: [USER],
      });
    const first = await pause("/tmp/a");
    const second = await pause("/tmp/b");
    assert.notEqual(approvalIdOf(first.content, "call-1"), approvalIdOf(second.content, "call-1"));

    // The first is left open (past `wait`), and the second asked while it is.
    await assert.rejects(approveToolCalls(first.content, { url: gateway.url, session, wait: 0.2 }), NotAnswered);
    const firstRequest = await shown(tab);
    const deciding = approveToolCalls(second.content, { url: gateway.url, session, wait: 10 });
    const secondRequest = await shown(tab);
    assert.notEqual(secondRequest.id, firstRequest.id);
    assert.deepEqual((secondRequest["calls"] as Array<Record<string, unknown>>)[0]!["args"], { path: "/tmp/b" });
    tab.answer(secondRequest.id, { decisions: [{ type: "reject", message: "not b" }] });
    assert.deepEqual((await within(deciding)).content, [
      {
        type: "tool-approval-response",
        approvalId: approvalIdOf(second.content, "call-1"),
        approved: false,
        reason: "not b",
      },
    ]);

    // The first generation's content still collects its own request.
    const collecting = approveToolCalls(first.content, { url: gateway.url, session, wait: 10 });
    tab.answer(firstRequest.id, { decisions: [{ type: "approve" }] });
    assert.deepEqual((await within(collecting)).content, [
      { type: "tool-approval-response", approvalId: approvalIdOf(first.content, "call-1"), approved: true },
    ]);
  } finally {
    tab.close();
  }
});

// ---- askUserTool -------------------------------------------------------------------------

const QUESTIONS = {
  questions: [
    {
      header: "Environment",
      question: "Where should it deploy?",
      options: [{ label: "staging", description: "The test cluster" }, { label: "production" }],
    },
    {
      header: "Notify",
      question: "Who should hear about it?",
      options: [{ label: "ops" }, { label: "everyone" }],
      multi_select: true,
    },
  ],
};

test("askUserTool puts the model's questions to a person and the model reads their answers", { timeout: 60_000 }, async () => {
  const session = "ts-ai-ask";
  const tab = await gateway.tab(session);
  try {
    const model = new MockLanguageModelV4({
      doGenerate: [calling(["call-q1", ASK_USER_TOOL_NAME, QUESTIONS]), saying("deploying")],
    });
    const running = generateText({
      model,
      tools: { [ASK_USER_TOOL_NAME]: askUserTool({ url: gateway.url, session, title: "Deploy" }) },
      messages: [USER],
      stopWhen: isStepCount(3),
    });
    const request = await shown(tab);
    assert.equal(request["dialect"], "harness");
    assert.equal(request["title"], "Deploy");
    assert.equal(request.id, "ask-user-call-q1");
    const questions = request["questions"] as Array<Record<string, unknown>>;
    assert.deepEqual(
      questions.map((q) => [q["header"], q["multi_select"]]),
      [
        ["Environment", false],
        ["Notify", true],
      ],
    );
    tab.answer(request.id, {
      answers: [
        { header: "Environment", custom_answer: "canary" },
        { header: "Notify", selected: ["ops", "everyone"] },
      ],
    });
    const result = await within(running);
    assert.equal(result.text, "deploying");
    const answers = { Environment: ["canary"], Notify: ["ops", "everyone"] };
    assert.deepEqual(
      result.steps[0]?.toolResults.map((r) => r.output),
      [answers],
    );
    assert.deepEqual(outputsSeen(model, 1), { "call-q1": { type: "json", value: answers } });
  } finally {
    tab.close();
  }
});

test("a declined question reads to the model as the harness's declined sentence", { timeout: 60_000 }, async () => {
  const session = "ts-ai-ask-declined";
  const tab = await gateway.tab(session);
  try {
    const model = new MockLanguageModelV4({
      doGenerate: [calling(["call-q1", ASK_USER_TOOL_NAME, QUESTIONS]), saying("choosing staging")],
    });
    const running = generateText({
      model,
      tools: { [ASK_USER_TOOL_NAME]: askUserTool({ url: gateway.url, session }) },
      messages: [USER],
      stopWhen: isStepCount(3),
    });
    const request = await shown(tab);
    tab.decline(request.id);
    await within(running);
    assert.deepEqual(outputsSeen(model, 1), { "call-q1": { type: "text", value: ASK_USER_DECLINED } });
  } finally {
    tab.close();
  }
});

test("a question whose deadline passes reads to the model as the harness's timed-out sentence", { timeout: 60_000 }, async () => {
  const model = new MockLanguageModelV4({
    doGenerate: [calling(["call-q1", ASK_USER_TOOL_NAME, QUESTIONS]), saying("choosing staging")],
  });
  // Nobody answers: the gateway's deadline ends the question.
  await within(
    generateText({
      model,
      tools: { [ASK_USER_TOOL_NAME]: askUserTool({ url: gateway.url, session: "ts-ai-ask-timeout", timeoutS: 0.5 }) },
      messages: [USER],
      stopWhen: isStepCount(3),
    }),
  );
  assert.deepEqual(outputsSeen(model, 1), { "call-q1": { type: "text", value: ASK_USER_TIMED_OUT } });
});

test("questions the gateway refuses reach the model as the call's error, with the path", { timeout: 60_000 }, async () => {
  const bad = { questions: [{ header: "Env", question: "Where?", options: [{ label: "only one" }] }] };
  const model = new MockLanguageModelV4({
    doGenerate: [calling(["call-q1", ASK_USER_TOOL_NAME, bad]), saying("I will ask better")],
  });
  await generateText({
    model,
    tools: { [ASK_USER_TOOL_NAME]: askUserTool({ url: gateway.url, session: "ts-ai-ask-bad" }) },
    messages: [USER],
    stopWhen: isStepCount(3),
  });
  const seen = outputsSeen(model, 1)["call-q1"] as { type: string; value: string };
  assert.equal(seen.type, "error-text");
  assert.match(seen.value, /questions\[0\]\.options/);
});

test("aborting the generation withdraws the question", { timeout: 60_000 }, async () => {
  const session = "ts-ai-ask-abort";
  const tab = await gateway.tab(session);
  try {
    const model = new MockLanguageModelV4({ doGenerate: [calling(["call-q1", ASK_USER_TOOL_NAME, QUESTIONS])] });
    const controller = new AbortController();
    const running = generateText({
      model,
      tools: { [ASK_USER_TOOL_NAME]: askUserTool({ url: gateway.url, session }) },
      messages: [USER],
      abortSignal: controller.signal,
      // The SDK checks the signal before each further step: one more is allowed, so the
      // aborted ask fails the generation.
      stopWhen: isStepCount(3),
    });
    running.catch(() => undefined);
    const request = await shown(tab);
    controller.abort();
    const resolved = await tab.next("resolved", request.id);
    assert.equal(resolved["outcome"], "withdrawn");
    await assert.rejects(within(running), { name: "AbortError" });
    assert.equal(model.doGenerateCalls.length, 1, "the model is not called after the abort");
  } finally {
    tab.close();
  }
});
