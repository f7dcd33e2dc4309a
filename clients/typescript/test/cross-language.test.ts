/** One session asked from TypeScript and from Python (the `askgate` Python package in the
 * repository's client virtualenv) at once, answered by one tab in the same way: both clients
 * must hand their agents the same outcome, field for field. */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";

import { Client } from "../src/index.js";
import { Gateway, Tab, within } from "./support.js";

const REPO = resolve(import.meta.dirname, "..", "..", "..", "..");

/** `$ASKGATE_PYTHON`, else the virtualenv `clients/python/scripts/setup.sh` builds. */
function python(): string {
  const path = process.env["ASKGATE_PYTHON"] ?? join(REPO, ".venv", "client", "bin", "python");
  if (!existsSync(path)) {
    throw new Error(
      `no Python with the askgate package at ${path}: run clients/python/scripts/setup.sh or set ASKGATE_PYTHON`,
    );
  }
  return path;
}

const HARNESS = [
  {
    header: "Channel",
    question: "Which channel gets the release?",
    options: [{ label: "stable" }, { label: "beta" }],
  },
];
const CALLS = [{ name: "deploy", args: { env: "prod" }, decisions: ["approve", "edit", "reject"] }];

/** The Python side: asks the same two requests under its own ids, prints each outcome. */
const PYTHON_AGENT = `
import asyncio, json, sys
from dataclasses import asdict
from askgate import Client

async def main() -> None:
    url, session = sys.argv[1], sys.argv[2]
    async with Client(url) as client:
        await client.open(session)
        print("ready", flush=True)
        harness, approval = await asyncio.gather(
            client.ask(session, ${JSON.stringify(HARNESS)}, id="py-harness"),
            client.ask(session, ${JSON.stringify(CALLS)}, id="py-approval", dialect="approval"),
        )
        for outcome in (harness, approval):
            print(json.dumps(asdict(outcome)), flush=True)

asyncio.run(main())
`;

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

test("an ask from TypeScript and one from Python get the same outcome", { timeout: 60_000 }, async () => {
  const session = "cross-language";
  const client = new Client(gateway.url);
  const { viewerUrl } = await client.open(session);
  const tab = await Tab.join(viewerUrl);
  const child = spawn(python(), ["-c", PYTHON_AGENT, gateway.url, session], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  const heard: Array<() => void> = [];
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    for (const wake of heard.splice(0)) {
      wake();
    }
  });
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on("exit", done));
  try {
    const fromTs = Promise.all([
      client.ask(session, { id: "ts-harness", questions: HARNESS }),
      client.ask(session, { id: "ts-approval", dialect: "approval", calls: CALLS }),
    ]);
    // Each request answered the same way once it is shown, whoever asked it.
    const answers: Record<string, unknown> = {
      harness: { answers: [{ header: "Channel", selected: ["beta"] }] },
      approval: { decisions: [{ type: "edit", args: { env: "staging" } }] },
    };
    for (let shown = 0; shown < 4; shown += 1) {
      const request = await tab.next("request");
      const id = String((request["request"] as Record<string, unknown>)["id"]);
      tab.answer(id, answers[id.split("-")[1] ?? ""]);
    }
    const [tsHarness, tsApproval] = await within(fromTs, 20_000, "the TypeScript outcomes");
    const code = await within(exited, 20_000, "the Python agent's exit");
    assert.equal(code, 0, err);
    const [pyHarness, pyApproval] = out
      .trim()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.ok(pyHarness && pyApproval, out);
    for (const [ts, py] of [
      [tsHarness, pyHarness],
      [tsApproval, pyApproval],
    ] as const) {
      assert.equal(ts.kind, "answered");
      assert.deepEqual(
        {
          session: ts.session,
          outcome: ts.kind,
          response: ts.response,
          result: ts.result,
          model_text: ts.modelText,
          by: ts.by,
          user: ts.user,
          via: ts.via,
          voters: ts.voters,
        },
        {
          session: py["session"],
          outcome: py["outcome"],
          response: py["response"],
          result: py["result"],
          model_text: py["model_text"],
          by: py["by"],
          user: py["user"],
          via: py["via"],
          voters: py["voters"],
        },
      );
      assert.equal(typeof ts.atMs, "number");
      assert.equal(typeof py["at_ms"], "number");
    }
    assert.deepEqual((tsApproval.response as { decisions: unknown[] }).decisions, [
      { type: "edit", args: { env: "staging" } },
    ]);
  } finally {
    child.kill();
    tab.close();
    client.close();
  }
});
