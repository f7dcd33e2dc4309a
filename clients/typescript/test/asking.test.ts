/** What every adapter's ask shares (`askMany`, `askOne`), against the real gateway and, for
 * what it does not do on demand (a post it never answers, a proxy's 502, a dropped
 * connection), a stand-in that records every call: requests posted partway are withdrawn, posts
 * and acknowledgements are bounded, a caller's abort ends a post or a back-off at once, polls
 * outlast a proxy's or restarting gateway's 502/503/504, and the errors name the request. */

import assert from "node:assert/strict";
import { after, afterEach, before, test } from "node:test";

import { askMany, askOne, limits } from "../src/asking.js";
import { Client, GatewayError, ack, collect, postRequest, withdraw } from "../src/index.js";
import type { Outcome } from "../src/outcome.js";
import { FakeGateway, Gateway, type Hit, Tab, within } from "./support.js";

const QUESTIONS = [
  { header: "Color", question: "Which color?", options: [{ label: "Red" }, { label: "Blue" }] },
];
const OTHER_QUESTIONS = [
  { header: "Size", question: "Which size?", options: [{ label: "S" }, { label: "L" }] },
];
const BLUE = { answers: [{ header: "Color", selected: ["Blue"] }] };

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

const DEFAULT_LIMITS = { ...limits };

afterEach(() => {
  // Back to plain values (a test may have put a getter in one's place).
  for (const [name, value] of Object.entries(DEFAULT_LIMITS)) {
    Object.defineProperty(limits, name, { value, writable: true, configurable: true, enumerable: true });
  }
});

/** The request id a call to the stand-in is about. */
function idOf(hit: Hit): string {
  const fromPath = /\/requests\/([^/?]+)/.exec(hit.path)?.[1];
  return fromPath ?? String((hit.body as { id?: unknown } | null)?.id);
}

/** A stand-in gateway that answers as the real one would (every request answered at once),
 * but for the calls `override` takes over (it returns true for those). */
function fake(override: (hit: Hit) => boolean = () => false): Promise<FakeGateway> {
  return new FakeGateway((hit) => {
    if (override(hit)) {
      return;
    }
    const id = idOf(hit);
    if (hit.method === "POST" && hit.path.endsWith("/ack")) {
      hit.respond(204);
    } else if (hit.method === "POST") {
      hit.respond(201, { state: "pending", id, deadline_ms: null, viewer_url: null });
    } else if (hit.method === "GET") {
      hit.respond(200, { state: "resolved", id, outcome: "answered", response: { answers: ["yes"] } });
    } else if (hit.method === "DELETE") {
      hit.respond(200, { id, outcome: "withdrawn" });
    } else {
      hit.respond(404, {});
    }
  }).start();
}

const isAck = (hit: Hit): boolean => hit.method === "POST" && hit.path.endsWith("/ack");
const isPost = (hit: Hit): boolean => hit.method === "POST" && !hit.path.endsWith("/ack");
const kinds = (outcomes: Outcome[]): string[] => outcomes.map((outcome) => outcome.kind);

test("a post refused partway withdraws the requests posted before it, and asking them again asks anew", { timeout: 60_000 }, async () => {
  const session = "ts-ask-partial";
  const tab = await gateway.tab(session);
  try {
    await assert.rejects(
      askMany({ url: gateway.url, session }, [{ id: "d-1", questions: QUESTIONS }, { id: "d-2", questions: "nope" }], kinds),
      (error: unknown) => {
        assert.ok(error instanceof GatewayError);
        assert.equal(error.status, 422);
        assert.match(error.message, /^posting request d-2 to session ts-ask-partial: HTTP 422: questions/);
        return true;
      },
    );
    await tab.next("request", "d-1");
    assert.equal((await tab.next("resolved", "d-1"))["outcome"], "withdrawn", "nobody is left a request nobody waits for");
    // The withdrawal was acknowledged: asked again, d-1 is a request anew, answered as usual.
    const again = askOne({ url: gateway.url, session }, { id: "d-1", questions: QUESTIONS }, (outcome) => outcome);
    await tab.next("request", "d-1");
    tab.answer("d-1", BLUE);
    assert.equal((await within(again)).kind, "answered");
  } finally {
    tab.close();
  }
});

test("a post that fails on the network withdraws what was posted, itself included", { timeout: 60_000 }, async () => {
  const stand = await fake((hit) => {
    if (isPost(hit) && idOf(hit) === "n-2") {
      hit.drop();
      return true;
    }
    return false;
  });
  try {
    await assert.rejects(
      within(askMany({ url: stand.url, session: "s" }, [{ id: "n-1" }, { id: "n-2" }], kinds)),
      TypeError,
    );
    // n-2 may have been stored before the connection dropped: withdrawn too. Each withdrawal
    // came back `withdrawn`, and was acknowledged.
    assert.deepEqual(stand.matching("DELETE", /./).map(idOf).sort(), ["n-1", "n-2"]);
    assert.deepEqual(stand.hits.filter(isAck).map(idOf).sort(), ["n-1", "n-2"]);
  } finally {
    await stand.close();
  }
});

test("a post the gateway does not answer fails within its bound, and is withdrawn", { timeout: 60_000 }, async () => {
  limits.postMs = 300;
  const stand = await fake(isPost);
  try {
    await assert.rejects(
      within(askOne({ url: stand.url, session: "s" }, { id: "t-1" }, (outcome) => outcome), 10_000, "the post's failure"),
      (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.equal(error.name, "TimeoutError");
        assert.equal(error.message, "posting request t-1 to session s: the gateway did not answer within 0.3 s");
        return true;
      },
    );
    assert.deepEqual(stand.matching("DELETE", /./).map(idOf), ["t-1"]);
  } finally {
    await stand.close();
  }
});

test("aborting while a post is unanswered rejects at once with an AbortError, and withdraws it", { timeout: 60_000 }, async () => {
  const stand = await fake(isPost);
  try {
    const controller = new AbortController();
    const asking = askOne({ url: stand.url, session: "s" }, { id: "t-2" }, (outcome) => outcome, controller.signal);
    asking.catch(() => undefined);
    await stand.received("POST", /\/requests$/);
    controller.abort();
    await assert.rejects(within(asking, 10_000, "the abort"), { name: "AbortError" });
    assert.deepEqual(stand.matching("DELETE", /./).map(idOf), ["t-2"]);
  } finally {
    await stand.close();
  }
});

test("outcomes are acknowledged in parallel", { timeout: 60_000 }, async () => {
  // Each acknowledgement is held until both have come: one at a time, the first would wait
  // for its bound (10 s).
  const held: Hit[] = [];
  const stand = await fake((hit) => {
    if (!isAck(hit)) {
      return false;
    }
    held.push(hit);
    if (held.length === 2) {
      for (const waiting of held) {
        waiting.respond(204);
      }
    }
    return true;
  });
  try {
    const asked = askMany({ url: stand.url, session: "s" }, [{ id: "p-1" }, { id: "p-2" }], kinds);
    assert.deepEqual(await within(asked, 5_000, "both acknowledgements"), ["answered", "answered"]);
    assert.deepEqual(held.map(idOf).sort(), ["p-1", "p-2"]);
  } finally {
    await stand.close();
  }
});

test("an acknowledgement the gateway does not answer is given up within its bound", { timeout: 60_000 }, async () => {
  limits.settleMs = 300;
  const stand = await fake(isAck);
  try {
    const outcome = await within(
      askOne({ url: stand.url, session: "s" }, { id: "k-1" }, (done) => done),
      10_000,
      "the ask, its acknowledgement unanswered",
    );
    assert.equal(outcome.kind, "answered");
    assert.deepEqual(stand.hits.filter(isAck).map(idOf), ["k-1"]);
  } finally {
    await stand.close();
  }
});

test("polls answered 502, 503 or 504 are tried again, a few times in a row at most", { timeout: 60_000 }, async () => {
  limits.backoffMs = 1;
  const statuses: number[] = [];
  const stand = await fake((hit) => {
    const status = hit.method === "GET" ? statuses.shift() : undefined;
    if (status === undefined) {
      return false;
    }
    hit.respond(status, { errors: [{ path: "", message: "restarting", code: "unavailable" }] });
    return true;
  });
  try {
    statuses.push(502, 503, 504);
    const outcome = await within(askOne({ url: stand.url, session: "s" }, { id: "f-1" }, (done) => done));
    assert.equal(outcome.kind, "answered");
    assert.equal(stand.matching("GET", /f-1/).length, 4);

    statuses.push(503, 503, 503, 503, 503);
    await assert.rejects(within(askOne({ url: stand.url, session: "s" }, { id: "f-2" }, (done) => done)), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.message, "collecting request f-2 of session s: HTTP 503: restarting");
      return true;
    });
    assert.equal(stand.matching("GET", /f-2/).length, 5);

    // Any other refusal is not tried again.
    statuses.push(500);
    await assert.rejects(within(askOne({ url: stand.url, session: "s" }, { id: "f-3" }, (done) => done)), { status: 500 });
    assert.equal(stand.matching("GET", /f-3/).length, 1);
  } finally {
    await stand.close();
  }
});

test("aborting during the pause between polls rejects at once, and withdraws the request", { timeout: 60_000 }, async () => {
  // The pause is a minute long, and its length is read as it starts.
  let pausing: () => void = () => undefined;
  const paused = new Promise<void>((resolve) => (pausing = resolve));
  Object.defineProperty(limits, "backoffMs", {
    get: () => {
      pausing();
      return 30_000;
    },
    configurable: true,
  });
  const stand = await fake((hit) => {
    if (hit.method !== "GET") {
      return false;
    }
    hit.respond(503, {});
    return true;
  });
  try {
    const controller = new AbortController();
    const asking = askOne({ url: stand.url, session: "s" }, { id: "b-1" }, (done) => done, controller.signal);
    asking.catch(() => undefined);
    await within(paused, 10_000, "the pause after a 503");
    controller.abort();
    await assert.rejects(within(asking, 5_000, "the abort"), { name: "AbortError" });
    assert.deepEqual(stand.matching("DELETE", /./).map(idOf), ["b-1"]);
  } finally {
    await stand.close();
  }
});

test("a request withdrawn by an abort is asked anew when asked again", { timeout: 60_000 }, async () => {
  const session = "ts-ask-abort-again";
  const tab = await gateway.tab(session);
  try {
    const controller = new AbortController();
    const asking = askOne({ url: gateway.url, session }, { id: "a-1", questions: QUESTIONS }, (o) => o, controller.signal);
    asking.catch(() => undefined);
    await tab.next("request", "a-1");
    controller.abort();
    await assert.rejects(within(asking), { name: "AbortError" });
    assert.equal((await tab.next("resolved", "a-1"))["outcome"], "withdrawn");
    const again = askOne({ url: gateway.url, session }, { id: "a-1", questions: QUESTIONS }, (outcome) => outcome);
    await tab.next("request", "a-1");
    tab.answer("a-1", BLUE);
    assert.equal((await within(again)).kind, "answered");
  } finally {
    tab.close();
  }
});

test("the gateway's refusals name the call, the request and its session", { timeout: 60_000 }, async () => {
  const session = "ts-ask-named";
  await postRequest(gateway.url, session, { id: "i-1", questions: QUESTIONS });
  const refused = (pattern: RegExp) => (error: unknown) => {
    assert.ok(error instanceof GatewayError);
    assert.match(error.message, pattern);
    return true;
  };
  await assert.rejects(
    postRequest(gateway.url, session, { id: "i-1", questions: OTHER_QUESTIONS }),
    refused(/^posting request i-1 to session ts-ask-named: HTTP 409/),
  );
  await assert.rejects(ack(gateway.url, session, "i-1"), refused(/^acknowledging request i-1 of session ts-ask-named: HTTP 409/));
  await assert.rejects(collect(gateway.url, session, "nope"), refused(/^collecting request nope of session ts-ask-named: HTTP 404/));
  await assert.rejects(withdraw(gateway.url, session, "nope"), refused(/^withdrawing request nope of session ts-ask-named: HTTP 404/));
  await withdraw(gateway.url, session, "i-1");
});
