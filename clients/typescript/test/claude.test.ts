/** `askgate/claude` with the real Claude Agent SDK: `query()` runs a scripted CLI
 * (`claude-cli.mjs`, given as `pathToClaudeCodeExecutable`) that speaks the CLI's stream-json
 * control protocol and asks `can_use_tool` for the tool calls of its script; the adapter's
 * callback puts them to a person through the real gateway, a tab answers, and the CLI's result
 * echoes the control responses it got, which the tests assert on. */

import assert from "node:assert/strict";
import { resolve } from "node:path";
import { after, before, test } from "node:test";

import { type CanUseTool, type Options, type Query, query } from "@anthropic-ai/claude-agent-sdk";

import { requestId } from "../src/approval.js";
import { type PostedRequest } from "../src/asking.js";
import {
  ASK_USER_QUESTION,
  DECLINED_MESSAGE,
  QUESTION_DECLINED_MESSAGE,
  REJECTED_MESSAGE,
  TIMED_OUT_MESSAGE,
  WITHDRAWN_MESSAGE,
  type ClaudeOptions,
  canUseTool,
  derivedId,
} from "../src/claude/index.js";
import { NotAnswered } from "../src/errors.js";
import { withdraw } from "../src/http.js";
import { Client } from "../src/index.js";
import { Gateway, Tab, within } from "./support.js";

/** The scripted CLI, beside this file in the sources (the build holds only compiled `.ts`). */
const CLI = resolve(import.meta.dirname, "..", "..", "test", "claude-cli.mjs");

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

/** One tool call of the scripted CLI's script. */
interface ScriptedCall {
  tool_name: string;
  input: Record<string, unknown>;
  tool_use_id: string;
  title?: string;
}

/** What the scripted CLI got for one call: the host's answer, its error, or a cancel. */
interface Permission {
  tool_use_id: string;
  response?: Record<string, unknown>;
  error?: string;
  cancelled?: true;
}

/** A `query()` over the scripted CLI, and what the CLI got for each call once the run ends. */
function run(script: ScriptedCall[], callback: CanUseTool): { query: Query; permissions: Promise<Permission[]> } {
  let stderr = "";
  const options: Options = {
    pathToClaudeCodeExecutable: CLI,
    canUseTool: callback,
    env: { ...process.env, ASKGATE_CLAUDE_SCRIPT: JSON.stringify(script) },
    stderr: (data) => (stderr += data),
  };
  const running = query({ prompt: "Go", options });
  const permissions = (async () => {
    let text: string | undefined;
    for await (const message of running) {
      if (message.type === "result" && message.subtype === "success") {
        text = message.result;
      }
    }
    if (text === undefined) {
      throw new Error(`the scripted CLI ended without a result; it said ${JSON.stringify(stderr)}`);
    }
    return (JSON.parse(text) as { permissions: Permission[] }).permissions;
  })();
  return { query: running, permissions };
}

/** The requests the callback posted, in order. */
class Posted {
  readonly requests: PostedRequest[] = [];
  private readonly waiters: Array<() => void> = [];

  readonly onPosted = (posted: PostedRequest[]): void => {
    this.requests.push(...posted);
    for (const wake of this.waiters.splice(0)) {
      wake();
    }
  };

  /** The `index`th posted request, once it is posted. */
  async nth(index: number): Promise<PostedRequest> {
    return within(
      (async () => {
        while (this.requests.length <= index) {
          await new Promise<void>((wake) => this.waiters.push(wake));
        }
        return this.requests[index]!;
      })(),
      20_000,
      `posted request ${index}`,
    );
  }
}

/** The next request the tab shows (its `request` object). */
async function shown(tab: Tab): Promise<Record<string, unknown>> {
  return (await tab.next("request"))["request"] as Record<string, unknown>;
}

/** The callback's options for `session`, with `posted` told of every request. */
function optionsFor(session: string, posted: Posted, extra: Partial<ClaudeOptions> = {}): ClaudeOptions {
  return { url: gateway.url, session, onPosted: posted.onPosted, ...extra };
}

const DATABASE = "Which database should the service use?";
const EXTRAS = "Which extras do you want?";

const QUESTIONS = [
  {
    question: DATABASE,
    header: "Database",
    options: [
      { label: "Postgres", description: "Relational, the team knows it" },
      { label: "SQLite", description: "One file, no server" },
    ],
    multiSelect: false,
  },
  {
    question: EXTRAS,
    header: "Extras",
    options: [
      { label: "Backups", description: "Nightly" },
      { label: "Metrics", description: "Prometheus" },
      { label: "Tracing", description: "OpenTelemetry", preview: "otel.yaml" },
    ],
    multiSelect: true,
  },
];

const BASH = { command: "rm -rf build/", description: "Clean the build directory" };

function question(toolUseId: string, input: Record<string, unknown> = { questions: QUESTIONS }): ScriptedCall {
  return { tool_name: ASK_USER_QUESTION, input, tool_use_id: toolUseId };
}

function bash(toolUseId: string, input: Record<string, unknown> = BASH): ScriptedCall {
  return { tool_name: "Bash", input, tool_use_id: toolUseId, title: `Claude wants to run ${String(input["command"])}` };
}

test("AskUserQuestion is answered by a person: a label, and a multi-select joined with \", \"", { timeout: 60_000 }, async () => {
  const session = "ts-claude-answer";
  const tab = await gateway.tab(session);
  try {
    const posted = new Posted();
    // The callback is the SDK's own `CanUseTool` type: this line is the type check.
    const callback: CanUseTool = canUseTool(optionsFor(session, posted, { title: "Setup" }));
    const input = { questions: QUESTIONS, metadata: { source: "setup" } };
    const { permissions } = run([question("toolu_answer", input)], callback);
    const request = await shown(tab);
    assert.equal(request["dialect"], "claude");
    assert.equal(request["title"], "Setup");
    assert.deepEqual(request["questions"], QUESTIONS);
    // The request id comes from the tool call: the same call is the same request.
    assert.equal(request["id"], derivedId("claude", "toolu_answer"));
    assert.equal((await posted.nth(0)).id, request["id"]);
    tab.answer(String(request["id"]), { answers: { [DATABASE]: "Postgres", [EXTRAS]: ["Backups", "Tracing"] } });
    const [permission] = await within(permissions);
    assert.deepEqual(permission, {
      tool_use_id: "toolu_answer",
      response: {
        behavior: "allow",
        // The rest of the input is kept as the CLI sent it.
        updatedInput: { ...input, answers: { [DATABASE]: "Postgres", [EXTRAS]: "Backups, Tracing" } },
        toolUseID: "toolu_answer",
      },
    });
  } finally {
    tab.close();
  }
});

test("free text instead of picking comes back as the tool's response", { timeout: 60_000 }, async () => {
  const session = "ts-claude-free-text";
  const tab = await gateway.tab(session);
  try {
    const callback = canUseTool(optionsFor(session, new Posted()));
    const { permissions } = run([question("toolu_free_text")], callback);
    const request = await shown(tab);
    tab.answer(String(request["id"]), { answers: {}, response: "Whatever is cheapest" });
    const [permission] = await within(permissions);
    assert.deepEqual(permission?.response?.["updatedInput"], {
      questions: QUESTIONS,
      answers: {},
      response: "Whatever is cheapest",
    });
  } finally {
    tab.close();
  }
});

test("an AskUserQuestion declined, or not answered in time, is denied with what happened", { timeout: 60_000 }, async () => {
  const session = "ts-claude-question-declined";
  const tab = await gateway.tab(session);
  try {
    const declined = run([question("toolu_declined")], canUseTool(optionsFor(session, new Posted())));
    const request = await shown(tab);
    tab.decline(String(request["id"]));
    assert.equal((await tab.next("resolved", String(request["id"])))["outcome"], "declined");
    const [permission] = await within(declined.permissions);
    assert.deepEqual(permission?.response, {
      behavior: "deny",
      message: QUESTION_DECLINED_MESSAGE,
      toolUseID: "toolu_declined",
    });

    const late = run([question("toolu_late")], canUseTool(optionsFor(session, new Posted(), { timeoutS: 1 })));
    const lateRequest = await shown(tab);
    assert.equal((await tab.next("resolved", String(lateRequest["id"])))["outcome"], "timed_out");
    const [latePermission] = await within(late.permissions);
    assert.deepEqual(latePermission?.response, { behavior: "deny", message: TIMED_OUT_MESSAGE, toolUseID: "toolu_late" });
  } finally {
    tab.close();
  }
});

test("with approveTools a person approves, edits and rejects other tools' calls", { timeout: 60_000 }, async () => {
  const session = "ts-claude-approve";
  const tab = await gateway.tab(session);
  try {
    const posted = new Posted();
    const edited = { command: "rm -rf build/tmp/", description: "Clean only the temporary files" };
    const callback = canUseTool(optionsFor(session, posted, { approveTools: true }));
    const { permissions } = run(
      [bash("toolu_approve"), bash("toolu_edit"), bash("toolu_reject"), bash("toolu_reject_silent")],
      callback,
    );

    const first = await shown(tab);
    assert.equal(first["dialect"], "approval");
    assert.equal(first["id"], requestId(["toolu_approve"]));
    const [call] = first["calls"] as Array<Record<string, unknown>>;
    assert.equal(call?.["name"], "Bash");
    assert.deepEqual(call?.["args"], BASH);
    assert.equal(call?.["description"], "Claude wants to run rm -rf build/");
    assert.deepEqual(call?.["decisions"], ["approve", "edit", "reject"]);
    // The SDK gives no input schema: edits are checked as a JSON object only.
    assert.equal(call?.["args_schema"], undefined);
    assert.equal(call?.["edit_check"], "object");
    tab.answer(String(first["id"]), { decisions: [{ type: "approve" }] });

    const second = await shown(tab);
    tab.answer(String(second["id"]), { decisions: [{ type: "edit", args: edited }] });
    const third = await shown(tab);
    tab.answer(String(third["id"]), { decisions: [{ type: "reject", message: "Not on a Friday" }] });
    const fourth = await shown(tab);
    tab.answer(String(fourth["id"]), { decisions: [{ type: "reject" }] });

    assert.deepEqual(
      (await within(permissions)).map((permission) => permission.response),
      [
        { behavior: "allow", updatedInput: BASH, toolUseID: "toolu_approve" },
        { behavior: "allow", updatedInput: edited, toolUseID: "toolu_edit" },
        { behavior: "deny", message: "Not on a Friday", toolUseID: "toolu_reject" },
        { behavior: "deny", message: REJECTED_MESSAGE, toolUseID: "toolu_reject_silent" },
      ],
    );
    assert.equal(posted.requests.length, 4);
  } finally {
    tab.close();
  }
});

test("approveTools as a list asks about the tools it names and allows the others", { timeout: 60_000 }, async () => {
  const session = "ts-claude-approve-list";
  const tab = await gateway.tab(session);
  try {
    const posted = new Posted();
    const read = { file_path: "/etc/hostname" };
    const callback = canUseTool(optionsFor(session, posted, { approveTools: ["Bash"] }));
    const { permissions } = run(
      [{ tool_name: "Read", input: read, tool_use_id: "toolu_read" }, bash("toolu_listed")],
      callback,
    );
    const request = await shown(tab);
    assert.equal(((request["calls"] as Array<Record<string, unknown>>)[0] ?? {})["name"], "Bash");
    tab.answer(String(request["id"]), { decisions: [{ type: "approve" }] });
    assert.deepEqual(
      (await within(permissions)).map((permission) => permission.response),
      [
        { behavior: "allow", updatedInput: read, toolUseID: "toolu_read" },
        { behavior: "allow", updatedInput: BASH, toolUseID: "toolu_listed" },
      ],
    );
    // Only the Bash call was put to the person.
    assert.deepEqual(
      posted.requests.map((one) => one.id),
      [requestId(["toolu_listed"])],
    );
  } finally {
    tab.close();
  }
});

test("without approveTools other tools are allowed untouched and nobody is asked", { timeout: 60_000 }, async () => {
  const posted = new Posted();
  const { permissions } = run([bash("toolu_free")], canUseTool(optionsFor("ts-claude-unasked", posted)));
  assert.deepEqual(await within(permissions), [
    { tool_use_id: "toolu_free", response: { behavior: "allow", updatedInput: BASH, toolUseID: "toolu_free" } },
  ]);
  assert.deepEqual(posted.requests, []);
});

test("a tool call declined, or not decided in time, is denied with what happened", { timeout: 60_000 }, async () => {
  const session = "ts-claude-approval-declined";
  const tab = await gateway.tab(session);
  try {
    const declined = run([bash("toolu_call_declined")], canUseTool(optionsFor(session, new Posted(), { approveTools: true })));
    const request = await shown(tab);
    tab.decline(String(request["id"]));
    const [permission] = await within(declined.permissions);
    assert.deepEqual(permission?.response, {
      behavior: "deny",
      message: DECLINED_MESSAGE,
      toolUseID: "toolu_call_declined",
    });

    const late = run(
      [bash("toolu_call_late")],
      canUseTool(optionsFor(session, new Posted(), { approveTools: true, timeoutS: 1 })),
    );
    const lateRequest = await shown(tab);
    assert.equal((await tab.next("resolved", String(lateRequest["id"])))["outcome"], "timed_out");
    const [latePermission] = await within(late.permissions);
    assert.deepEqual(latePermission?.response, {
      behavior: "deny",
      message: TIMED_OUT_MESSAGE,
      toolUseID: "toolu_call_late",
    });
  } finally {
    tab.close();
  }
});

test("a permission request the CLI cancels is withdrawn at the gateway", { timeout: 60_000 }, async () => {
  const session = "ts-claude-cancelled";
  const tab = await gateway.tab(session);
  try {
    const { query: running, permissions } = run([question("toolu_cancelled")], canUseTool(optionsFor(session, new Posted())));
    const request = await shown(tab);
    // Interrupting the turn makes the CLI cancel its open permission request
    // (`control_cancel_request`), which aborts the callback's signal.
    await within(running.interrupt(), 20_000, "the interrupt's answer");
    const resolved = await tab.next("resolved", String(request["id"]));
    assert.equal(resolved["outcome"], "withdrawn");
    assert.deepEqual(await within(permissions), [{ tool_use_id: "toolu_cancelled", cancelled: true }]);
  } finally {
    tab.close();
  }
});

test("a tool approval left open when the query is closed is withdrawn", { timeout: 60_000 }, async () => {
  const session = "ts-claude-closed";
  const tab = await gateway.tab(session);
  try {
    const callback = canUseTool(optionsFor(session, new Posted(), { approveTools: true }));
    const { query: running, permissions } = run([bash("toolu_closed")], callback);
    permissions.catch(() => undefined);
    const request = await shown(tab);
    assert.equal(request["id"], requestId(["toolu_closed"]));
    // Closing the query aborts every permission callback still running.
    running.close();
    const resolved = await tab.next("resolved", String(request["id"]));
    assert.equal(resolved["outcome"], "withdrawn");
  } finally {
    tab.close();
  }
});

test("a request someone else withdraws is denied as withdrawn", { timeout: 60_000 }, async () => {
  const session = "ts-claude-withdrawn";
  const tab = await gateway.tab(session);
  try {
    const callback = canUseTool(optionsFor(session, new Posted(), { approveTools: true }));
    const { permissions } = run([question("toolu_gone_question"), bash("toolu_gone_call")], callback);
    for (const kind of ["claude", "approval"]) {
      const request = await shown(tab);
      assert.equal(request["dialect"], kind);
      await withdraw(gateway.url, session, String(request["id"]));
    }
    assert.deepEqual(
      (await within(permissions)).map((permission) => permission.response),
      [
        { behavior: "deny", message: WITHDRAWN_MESSAGE, toolUseID: "toolu_gone_question" },
        { behavior: "deny", message: WITHDRAWN_MESSAGE, toolUseID: "toolu_gone_call" },
      ],
    );
  } finally {
    tab.close();
  }
});

test("a callback retried for the same tool call collects the same request", { timeout: 60_000 }, async () => {
  const session = "ts-claude-retried";
  const tab = await gateway.tab(session);
  try {
    const input = { questions: QUESTIONS.slice(0, 1) };
    const context = { signal: new AbortController().signal, toolUseID: "toolu_retried" };
    const posted = new Posted();
    // The first try gives up waiting (`wait`), leaving the request open at the gateway.
    const impatient = canUseTool(optionsFor(session, posted, { wait: 0.2 }));
    await assert.rejects(impatient(ASK_USER_QUESTION, input, context), NotAnswered);
    const request = await shown(tab);
    const patient = canUseTool(optionsFor(session, posted));
    const retried = patient(ASK_USER_QUESTION, input, context);
    assert.equal((await posted.nth(1)).id, request["id"]);
    tab.answer(String(request["id"]), { answers: { [DATABASE]: "SQLite" } });
    assert.deepEqual(await within(retried), {
      behavior: "allow",
      updatedInput: { ...input, answers: { [DATABASE]: "SQLite" } },
    });
  } finally {
    tab.close();
  }
});

test("approveTools that is neither a flag nor a list of names is refused", () => {
  assert.throws(
    () => canUseTool({ url: "http://127.0.0.1:1", session: "s", approveTools: "Bash" as unknown as string[] }),
    /approveTools must be true, false or a list of tool names, got "Bash"/,
  );
});
