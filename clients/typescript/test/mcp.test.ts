/** `askgate/mcp` with the real MCP SDK: a server's form and URL elicitations, over an
 * in-memory transport, put to a person by the gateway and answered (or declined) by a tab;
 * the server reads MCP's own `ElicitResult`. */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";

import { Client } from "../src/index.js";
import { type ElicitationOptions, elicitationHandler } from "../src/mcp/index.js";
import { Gateway, Tab, within } from "./support.js";

let gateway: Gateway;

before(async () => {
  gateway = await new Gateway().start();
});

after(async () => {
  await gateway.dispose();
});

/** An MCP server and a client whose elicitations askgate session `session` answers. */
async function connected(
  session: string,
  more: Partial<ElicitationOptions> = {},
): Promise<{ server: Server; client: McpClient }> {
  const server = new Server({ name: "deployer", version: "1.0.0" }, { capabilities: {} });
  const client = new McpClient(
    { name: "agent", version: "1.0.0" },
    { capabilities: { elicitation: { form: {}, url: {} } } },
  );
  client.setRequestHandler(
    ElicitRequestSchema,
    elicitationHandler({ url: gateway.url, session, server: "deployer", title: "Deploy", ...more }),
  );
  const [toServer, toClient] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(toServer), client.connect(toClient)]);
  return { server, client };
}

test("a form elicitation is filled by a person and the server reads their content", { timeout: 60_000 }, async () => {
  const { server, client } = await connected("ts-mcp-form");
  const tab = await gateway.tab("ts-mcp-form");
  try {
    const asked: Promise<ElicitResult> = server.elicitInput({
      message: "Which environment?",
      requestedSchema: {
        type: "object",
        properties: { env: { type: "string", enum: ["staging", "prod"] }, replicas: { type: "integer" } },
        required: ["env"],
      },
    });
    const shown = await tab.next("request");
    const request = shown["request"] as Record<string, unknown>;
    assert.equal(request["message"], "Which environment?");
    assert.equal(request["server"], "deployer");
    assert.equal(request["title"], "Deploy");
    tab.answer(String(request["id"]), { content: { env: "prod", replicas: 3 } });
    const result = await within(asked);
    assert.deepEqual(result, { action: "accept", content: { env: "prod", replicas: 3 } });
  } finally {
    tab.close();
    await client.close();
  }
});

test("a URL elicitation is consented to, and a decline is a decline", { timeout: 60_000 }, async () => {
  const { server, client } = await connected("ts-mcp-url");
  const tab = await gateway.tab("ts-mcp-url");
  try {
    const consent = server.elicitInput({
      mode: "url",
      message: "Sign in to the deploy service",
      url: "https://auth.example.com/login?state=abc",
      elicitationId: "e-1",
    });
    const shown = (await tab.next("request"))["request"] as Record<string, unknown>;
    assert.equal(shown["url"], "https://auth.example.com/login?state=abc");
    tab.answer(String(shown["id"]), {});
    assert.deepEqual(await within(consent), { action: "accept" });

    const declined = server.elicitInput({
      message: "Proceed?",
      requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } },
    });
    const second = (await tab.next("request"))["request"] as Record<string, unknown>;
    tab.decline(String(second["id"]));
    assert.deepEqual(await within(declined), { action: "decline" });
  } finally {
    tab.close();
    await client.close();
  }
});

test("an elicitation left open when the MCP session closes is withdrawn", { timeout: 60_000 }, async () => {
  const { server, client } = await connected("ts-mcp-closed");
  const tab = await gateway.tab("ts-mcp-closed");
  try {
    const asked = server.elicitInput({
      message: "Still there?",
      requestedSchema: { type: "object", properties: {} },
    });
    asked.catch(() => undefined);
    const shown = (await tab.next("request"))["request"] as Record<string, unknown>;
    // The SDK aborts every request handler still running when its transport closes.
    await client.close();
    const resolved = await tab.next("resolved", String(shown["id"]));
    assert.equal(resolved["outcome"], "withdrawn");
  } finally {
    tab.close();
  }
});

test("past `wait` the elicitation is withdrawn and the server reads a cancel", { timeout: 60_000 }, async () => {
  const { server, client } = await connected("ts-mcp-wait", { wait: 0.3 });
  const tab = await gateway.tab("ts-mcp-wait");
  try {
    const asked = server.elicitInput({
      message: "Still there?",
      requestedSchema: { type: "object", properties: {} },
    });
    const shown = (await tab.next("request"))["request"] as Record<string, unknown>;
    // Nothing could collect it later (the server asks anew with a new elicitation): the card is
    // taken away, and the server is answered as for a passed deadline.
    assert.deepEqual(await within(asked), { action: "cancel" });
    const resolved = await tab.next("resolved", String(shown["id"]));
    assert.equal(resolved["outcome"], "withdrawn");
  } finally {
    tab.close();
    await client.close();
  }
});
