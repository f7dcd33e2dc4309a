/** The core client against the real gateway binary: asks answered by a tab, refusals with their
 * paths, a withdrawal by abort, an ask that outlives a restart of the gateway, and the HTTP API
 * for paused runs. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AskRejected, Client, GatewayError, ack, collect, postRequest } from "../src/index.js";
import { Gateway, Tab, within } from "./support.js";

const QUESTIONS = [
  { header: "Color", question: "Which color?", options: [{ label: "Red" }, { label: "Blue" }] },
];
const BLUE = { answers: [{ header: "Color", selected: ["Blue"] }] };
/** What pydantic-ai-harness reads back for it. */
const BLUE_READ = { ...BLUE, cancelled: false };

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

test("an ask is answered by a tab, and the outcome is the framework's", { timeout: 60_000 }, async () => {
  const client = new Client(gateway.url);
  try {
    const { viewerUrl } = await client.open("ts-answer");
    const tab = await Tab.join(viewerUrl);
    const asked = client.ask("ts-answer", { id: "q1", questions: QUESTIONS, title: "Paint" });
    const shown = await tab.next("request", "q1");
    assert.equal((shown["request"] as Record<string, unknown>)["title"], "Paint");
    tab.answer("q1", BLUE);
    const outcome = await within(asked, 20_000, "the outcome");
    assert.equal(outcome.kind, "answered");
    assert.deepEqual(outcome.response, BLUE_READ);
    assert.equal(outcome.modelText, '{"Color":["Blue"]}');
    assert.equal(outcome.session, "ts-answer");
    assert.equal(outcome.id, "q1");
    assert.ok(outcome.by, "the answering tab");
    tab.close();
  } finally {
    client.close();
  }
});

test("a bad ask is refused with the gateway's paths", { timeout: 60_000 }, async () => {
  const client = new Client(gateway.url);
  try {
    await assert.rejects(
      client.ask("ts-refused", { id: "bad", questions: [{ header: "Color" }] }),
      (error: unknown) => {
        assert.ok(error instanceof AskRejected);
        assert.ok(
          error.errors.some((e) => e.path.startsWith("questions[0]")),
          JSON.stringify(error.errors),
        );
        return true;
      },
    );
  } finally {
    client.close();
  }
});

test("aborting the signal withdraws the request", { timeout: 60_000 }, async () => {
  const client = new Client(gateway.url);
  try {
    const { viewerUrl } = await client.open("ts-abort");
    const tab = await Tab.join(viewerUrl);
    const controller = new AbortController();
    const asked = client.ask("ts-abort", { id: "q", questions: QUESTIONS }, { signal: controller.signal });
    await tab.next("request", "q");
    controller.abort();
    await assert.rejects(within(asked), { name: "AbortError" });
    const resolved = await tab.next("resolved", "q");
    assert.equal(resolved["outcome"], "withdrawn");
    tab.close();
  } finally {
    client.close();
  }
});

test("an ask outlives a restart of the gateway and is answered after it", { timeout: 60_000 }, async () => {
  const durable = await new Gateway("embedded").start();
  const client = new Client(durable.url, { backoff: { initialMs: 20, maxMs: 200 } });
  try {
    const { viewerUrl } = await client.open("ts-restart");
    const tab = await Tab.join(viewerUrl);
    const asked = client.ask("ts-restart", { id: "kept", questions: QUESTIONS });
    // Should a step below fail first, the close in `finally` rejects it: not a second failure.
    asked.catch(() => undefined);
    await tab.next("request", "kept");
    tab.close();
    await durable.stop();
    await durable.start();
    // The request was kept; the client, connecting again, asked it again.
    const again = await Tab.join(viewerUrl);
    const snapshot = await collect(durable.url, "ts-restart", "kept");
    assert.equal(snapshot.state, "pending");
    again.answer("kept", BLUE);
    const outcome = await within(asked, 20_000, "the outcome after the restart");
    assert.equal(outcome.kind, "answered");
    assert.deepEqual(outcome.response, BLUE_READ);
    again.close();
  } finally {
    client.close();
    await durable.dispose();
  }
});

test("a paused run posts, collects and acknowledges over HTTP", { timeout: 60_000 }, async () => {
  const posted = await postRequest(gateway.url, "ts-http", { id: "h1", questions: QUESTIONS });
  assert.equal(posted.state, "pending");
  const viewerUrl = posted.state === "pending" ? posted.viewerUrl : null;
  assert.ok(viewerUrl);
  const tab = await Tab.join(viewerUrl);
  await tab.next("request", "h1");
  tab.answer("h1", BLUE);
  const collected = await collect(gateway.url, "ts-http", "h1", { waitS: 20 });
  assert.equal(collected.state, "resolved");
  if (collected.state === "resolved") {
    assert.equal(collected.kind, "answered");
    assert.deepEqual(collected.response, BLUE_READ);
  }
  await ack(gateway.url, "ts-http", "h1");
  await assert.rejects(collect(gateway.url, "ts-http", "h1"), (error: unknown) => {
    assert.ok(error instanceof GatewayError);
    assert.equal(error.status, 404);
    return true;
  });
  await assert.rejects(
    postRequest(gateway.url, "ts-http", { id: "h2", questions: "nope" }),
    (error: unknown) => error instanceof GatewayError && error.errors.some((e) => e.path === "questions"),
  );
  tab.close();
});

test("an outcome is acknowledged, so the gateway forgets it", { timeout: 60_000 }, async () => {
  const client = new Client(gateway.url);
  try {
    const { viewerUrl } = await client.open("ts-ack");
    const tab = await Tab.join(viewerUrl);
    const asked = client.ask("ts-ack", { id: "once", questions: QUESTIONS });
    await tab.next("request", "once");
    tab.answer("once", BLUE);
    await within(asked);
    tab.close();
    // The ack follows the outcome on the socket: once the gateway has it, the id is unknown.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const gone = await collect(gateway.url, "ts-ack", "once").then(
        () => false,
        (error: unknown) => error instanceof GatewayError && error.status === 404,
      );
      if (gone) {
        break;
      }
      assert.ok(Date.now() < deadline, "the outcome was never acknowledged");
      await new Promise((resolveSoon) => setTimeout(resolveSoon, 20));
    }
  } finally {
    client.close();
  }
});

test("a session the gateway refuses to open rejects with its reason", { timeout: 60_000 }, async () => {
  const client = new Client(gateway.url);
  try {
    await assert.rejects(within(client.open("not a session id!")), (error: unknown) => {
      assert.ok(error instanceof AskRejected, String(error));
      assert.equal(error.errors[0]?.path, "session");
      return true;
    });
    // The connection goes on serving.
    const { viewerUrl } = await within(client.open("ts-after-refusal"));
    assert.ok(viewerUrl.includes("ts-after-refusal"));
  } finally {
    client.close();
  }
});

test("aborting while disconnected rejects at once, and closing while connecting leaves nothing", { timeout: 60_000 }, async () => {
  const nowhere = new Client("http://127.0.0.1:9", { backoff: { initialMs: 50, maxMs: 100 } });
  const controller = new AbortController();
  const asked = nowhere.ask("ts-nowhere", { id: "q", questions: QUESTIONS }, { signal: controller.signal });
  controller.abort();
  await assert.rejects(within(asked, 5_000), { name: "AbortError" });
  const never = nowhere.ask("ts-nowhere", { id: "r", questions: QUESTIONS });
  nowhere.close();
  await assert.rejects(within(never, 5_000), { name: "GatewayClosed" });
});
