/** The README's examples, each run exactly as written: its code block saved as an `.mjs` file
 * in a folder whose `node_modules` holds this package and the frameworks (as a user who
 * installed them has it), run with Node against a gateway of its own, and answered by a tab.
 * A `js` block under a heading this file does not know fails the test, so none is skipped. */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";

import { Gateway, Tab, within } from "./support.js";

const PACKAGE = resolve(import.meta.dirname, "..", "..");

/** Each `## ` section's `js` blocks, by heading. */
function jsBlocks(): Map<string, string[]> {
  const text = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const blocks = new Map<string, string[]>();
  for (const section of text.split(/\n## /).slice(1)) {
    const heading = section.slice(0, section.indexOf("\n"));
    const found = [...section.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
    if (found.length > 0) {
      blocks.set(heading, found);
    }
  }
  return blocks;
}

/** What the example has printed, once it matches a pattern. */
type Printed = (pattern: RegExp) => Promise<RegExpExecArray>;

/** How one section's example is answered, and what it must print. */
interface Example {
  env?: Record<string, string>;
  answer: (printed: Printed) => Promise<void>;
}

/** A tab on the viewer link the example printed next, with the request it shows. */
async function nextRequest(printed: Printed, after = 0): Promise<{ tab: Tab; id: string; request: Record<string, unknown> }> {
  const seen = await printed(new RegExp(`(?:[\\s\\S]*?answer at (\\S+)){${after + 1}}`));
  const viewerUrl = seen[1] ?? "";
  const tab = await Tab.join(viewerUrl);
  const request = await tab.next("request");
  const id = String(request["id"] ?? (request["request"] as Record<string, unknown> | undefined)?.["id"]);
  return { tab, id, request };
}

const APPROVE = { decisions: [{ type: "approve" }] };

const EXAMPLES: Record<string, Example> = {
  "Ask over the agent socket": {
    answer: async (printed) => {
      const { tab } = await nextRequest(printed);
      tab.answer("deploy-when", { answers: [{ header: "When", selected: ["Monday"] }] });
      await printed(/answered \{"answers":\[\{"header":"When","selected":\["Monday"\]\}\],"cancelled":false\}/);
      tab.close();
    },
  },
  "Claude Agent SDK (`askgate/claude`)": {
    env: { CLAUDE_CLI: join(PACKAGE, "test", "claude-cli.mjs") },
    answer: async (printed) => {
      const question = await nextRequest(printed);
      question.tab.answer(question.id, {
        answers: {
          "Which channel should the release go to?": "beta",
          "Which notes should go with it?": ["Changelog", "Email"],
        },
      });
      const approval = await nextRequest(printed, 1);
      approval.tab.answer(approval.id, APPROVE);
      await printed(/result success: .*"Which notes should go with it\?":"Changelog, Email"/);
      question.tab.close();
      approval.tab.close();
    },
  },
  "AI SDK (`askgate/ai-sdk`)": {
    answer: async (printed) => {
      const { tab, id } = await nextRequest(printed);
      tab.answer(id, APPROVE);
      await printed(/deleteFile: \{"type":"text","value":"deleted \/tmp\/build\.log"\}\nCleanup finished\./);
      tab.close();
    },
  },
  "OpenAI Agents (`askgate/openai-agents`)": {
    answer: async (printed) => {
      const { tab, id } = await nextRequest(printed);
      tab.answer(id, { decisions: [{ type: "reject", message: "keep the logs" }] });
      await printed(/The tool said: keep the logs/);
      tab.close();
    },
  },
  "LangGraph and LangChain agents (`askgate/langgraph`)": {
    answer: async (printed) => {
      const { tab, id } = await nextRequest(printed);
      tab.answer(id, { decisions: [{ type: "edit", args: { query: "DELETE FROM logs WHERE age > 30" } }] });
      await printed(/the model read: ran DELETE FROM logs WHERE age > 30\nthe agent said: Done\./);
      tab.close();
    },
  },
  "Mastra (`askgate/mastra`)": {
    answer: async (printed) => {
      const { tab, id } = await nextRequest(printed);
      tab.answer(id, APPROVE);
      await printed(/the model read: ran DELETE FROM logs\nthe agent said: Done\./);
      tab.close();
    },
  },
};

/** A folder laid out as a user's project: `node_modules/askgate` is this package, and each
 * package this one has installed (the frameworks) is there too. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), "askgate-ts-readme-"));
  const modules = join(dir, "node_modules");
  mkdirSync(modules);
  symlinkSync(PACKAGE, join(modules, "askgate"), "dir");
  for (const name of readdirSync(join(PACKAGE, "node_modules"))) {
    if (!name.startsWith(".")) {
      symlinkSync(join(PACKAGE, "node_modules", name), join(modules, name), "dir");
    }
  }
  return dir;
}

test("every js block of the README is an example this test runs", () => {
  const unknown = [...jsBlocks().keys()].filter((heading) => !(heading in EXAMPLES));
  assert.deepEqual(unknown, [], "sections with a js block this test does not know how to answer");
  for (const [heading, blocks] of jsBlocks()) {
    assert.equal(blocks.length, 1, `one example under ${heading}`);
  }
  assert.deepEqual([...jsBlocks().keys()].sort(), Object.keys(EXAMPLES).sort(), "every example is in the README");
});

for (const [heading, example] of Object.entries(EXAMPLES)) {
  test(`the README's example under "${heading}" runs as written`, { timeout: 90_000 }, async () => {
    const [source] = jsBlocks().get(heading) ?? [];
    assert.ok(source, `the README has a js example under ${heading}`);
    const gateway = await new Gateway().start();
    const dir = project();
    let child: ReturnType<typeof spawn> | undefined;
    try {
      writeFileSync(join(dir, "example.mjs"), source);
      child = spawn(process.execPath, ["example.mjs"], {
        cwd: dir,
        env: { ...process.env, ASKGATE_URL: gateway.url, ...example.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const running = child;
      let out = "";
      let err = "";
      const heard: Array<() => void> = [];
      const wakeAll = (): void => {
        for (const wake of heard.splice(0)) {
          wake();
        }
      };
      running.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        wakeAll();
      });
      running.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
      const exited = new Promise<number | null>((done) =>
        running.on("exit", (exit) => {
          wakeAll();
          done(exit);
        }),
      );
      const printed: Printed = (pattern) =>
        within(
          (async () => {
            for (;;) {
              const found = pattern.exec(out);
              if (found) {
                return found;
              }
              if (running.exitCode !== null) {
                throw new Error(`it exited (${running.exitCode}) without printing ${pattern}`);
              }
              await new Promise<void>((wake) => heard.push(wake));
            }
          })(),
          30_000,
          `${pattern} in the example's output`,
        ).catch((error: unknown) => {
          throw new Error(`${String(error)}; it printed ${JSON.stringify(out)} and ${JSON.stringify(err)}`);
        });
      await example.answer(printed);
      const code = await within(exited, 30_000, "the example's exit");
      assert.equal(code, 0, `${err}\n${out}`);
    } finally {
      child?.kill();
      rmSync(dir, { recursive: true, force: true });
      await gateway.dispose();
    }
  });
}

test("askgate and its subpaths load with no framework installed", { timeout: 30_000 }, async () => {
  // Only this package and its one dependency: every framework is an optional peer, loaded by
  // its own subpath alone (and askgate/mastra, askgate/claude not even then).
  const dir = mkdtempSync(join(tmpdir(), "askgate-ts-bare-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(PACKAGE, join(dir, "node_modules", "askgate"), "dir");
    symlinkSync(join(PACKAGE, "node_modules", "ws"), join(dir, "node_modules", "ws"), "dir");
    writeFileSync(
      join(dir, "bare.mjs"),
      'const core = await import("askgate");\n' +
        'const mastra = await import("askgate/mastra");\n' +
        'const claude = await import("askgate/claude");\n' +
        "console.log(typeof core.Client, typeof mastra.approveToolCalls, typeof claude.canUseTool);\n" +
        'for (const framework of ["askgate/ai-sdk", "askgate/langgraph", "askgate/openai-agents", "askgate/mcp"]) {\n' +
        "  await import(framework).then(() => console.log(`${framework} loaded`), (error) => console.log(`${framework}: ${error.code}`));\n" +
        "}\n",
    );
    const child = spawn(process.execPath, ["bare.mjs"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    const code = await within(
      new Promise<number | null>((done) => child.on("exit", done)),
      20_000,
      "the bare import's exit",
    );
    assert.equal(code, 0, err);
    const lines = out.trim().split("\n");
    assert.equal(lines[0], "function function function", out);
    // What needs its framework says which is missing, and nothing else fails.
    for (const line of lines.slice(1)) {
      assert.match(line, /: ERR_MODULE_NOT_FOUND$| loaded$/, out);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
