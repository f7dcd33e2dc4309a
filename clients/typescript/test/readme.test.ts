/** The README's example, run exactly as written: its code block saved as an `.mjs` file beside
 * a `node_modules/askgate` that is this package, run with Node against the gateway, and
 * answered by a tab. */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";

import { Gateway, Tab, within } from "./support.js";

const PACKAGE = resolve(import.meta.dirname, "..", "..");

/** Every ```js block of the README, in order. */
function jsBlocks(): string[] {
  const text = readFileSync(join(PACKAGE, "README.md"), "utf8");
  return [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
}

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

test("the README's example runs as written", { timeout: 60_000 }, async () => {
  const [example] = jsBlocks();
  assert.ok(example, "the README has a js example");
  const dir = mkdtempSync(join(tmpdir(), "askgate-ts-readme-"));
  let child: ReturnType<typeof spawn> | undefined;
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(PACKAGE, join(dir, "node_modules", "askgate"), "dir");
    writeFileSync(join(dir, "ask.mjs"), example);
    child = spawn(process.execPath, ["ask.mjs"], {
      cwd: dir,
      env: { ...process.env, ASKGATE_URL: gateway.url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const running = child;
    let out = "";
    let err = "";
    const heard: Array<() => void> = [];
    running.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      for (const wake of heard.splice(0)) {
        wake();
      }
    });
    running.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
    /** What the example has printed, once it matches `pattern`. */
    const printed = (pattern: RegExp): Promise<RegExpExecArray> =>
      within(
        (async () => {
          for (;;) {
            const found = pattern.exec(out);
            if (found) {
              return found;
            }
            await new Promise<void>((wake) => heard.push(wake));
          }
        })(),
        20_000,
        `${pattern} in the example's output`,
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}; it printed ${JSON.stringify(out)} and ${JSON.stringify(err)}`);
      });
    const [, viewerUrl] = await printed(/answer at (\S+)/);
    const tab = await Tab.join(viewerUrl ?? "");
    await tab.next("request", "deploy-when");
    tab.answer("deploy-when", { answers: [{ header: "When", selected: ["Monday"] }] });
    await printed(/answered \{"answers":\[\{"header":"When","selected":\["Monday"\]\}\],"cancelled":false\}/);
    const code = await within(
      new Promise<number | null>((done) => running.on("exit", (exit) => done(exit))),
      20_000,
      "the example's exit",
    );
    assert.equal(code, 0, err);
    tab.close();
  } finally {
    child?.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
