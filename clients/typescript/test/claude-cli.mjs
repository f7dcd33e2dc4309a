#!/usr/bin/env node
/**
 * A scripted Claude Code CLI, for the tests and the README's example: given to the Agent SDK's
 * `query()` as `pathToClaudeCodeExecutable` (the SDK runs a `.mjs` path with Node), it speaks
 * the CLI's half of the stream-json control protocol with no model and no network.
 *
 * - it answers the SDK's `initialize` control request;
 * - once the prompt (a `user` message) comes, it asks the host for permission for each tool
 *   call of its script in turn (a `can_use_tool` control request, as the CLI sends it), and
 *   keeps each `control_response`;
 * - on an `interrupt` control request it cancels the permission request still open (a
 *   `control_cancel_request`, as the CLI does when a turn is interrupted) and ends the turn;
 * - it ends the turn with a `result` message whose `result` text is the JSON
 *   `{"permissions": [...]}`: for each call, in order, `{tool_use_id, response}` (what the host
 *   answered: `{behavior, updatedInput | message, toolUseID}`), `{tool_use_id, error}` (the
 *   host's callback failed) or `{tool_use_id, cancelled: true}`;
 * - it exits when the SDK closes its stdin.
 *
 * The script is `$ASKGATE_CLAUDE_SCRIPT` (JSON: a list of `{tool_name, input, tool_use_id,
 * title?, description?}`); without it, an `AskUserQuestion` about a release, then a `Bash`
 * call that publishes it (the README's example).
 */

import { createInterface } from "node:readline";

const DEFAULT_SCRIPT = [
  {
    tool_name: "AskUserQuestion",
    tool_use_id: "toolu_readme_question",
    input: {
      questions: [
        {
          question: "Which channel should the release go to?",
          header: "Channel",
          options: [
            { label: "stable", description: "Everyone gets it" },
            { label: "beta", description: "Opted-in users only" },
          ],
          multiSelect: false,
        },
        {
          question: "Which notes should go with it?",
          header: "Notes",
          options: [
            { label: "Changelog", description: "The full list of changes" },
            { label: "Blog post", description: "A short announcement" },
            { label: "Email", description: "To the mailing list" },
          ],
          multiSelect: true,
        },
      ],
    },
  },
  {
    tool_name: "Bash",
    tool_use_id: "toolu_readme_publish",
    title: "Claude wants to run npm publish --tag beta",
    input: { command: "npm publish --tag beta", description: "Publish the release" },
  },
];

const script = process.env["ASKGATE_CLAUDE_SCRIPT"]
  ? JSON.parse(process.env["ASKGATE_CLAUDE_SCRIPT"])
  : DEFAULT_SCRIPT;

/** What the host answered, one entry per call asked about so far. */
const permissions = [];
/** The open permission request: its control request id and its call. */
let open = null;
let next = 0;
let ended = false;

function send(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

/** Asks for the next call of the script, or ends the turn once every call has been asked. */
function askNext() {
  if (next >= script.length) {
    endTurn();
    return;
  }
  const call = script[next];
  const requestId = `perm-${next + 1}`;
  next += 1;
  open = { requestId, call };
  const request = {
    subtype: "can_use_tool",
    tool_name: call.tool_name,
    input: call.input,
    tool_use_id: call.tool_use_id,
    permission_suggestions: [],
  };
  if (call.title !== undefined) {
    request.title = call.title;
  }
  if (call.description !== undefined) {
    request.description = call.description;
  }
  send({ type: "control_request", request_id: requestId, request });
}

function endTurn() {
  if (ended) {
    return;
  }
  ended = true;
  send({
    type: "result",
    subtype: "success",
    duration_ms: 1,
    duration_api_ms: 0,
    is_error: false,
    num_turns: 1,
    result: JSON.stringify({ permissions }),
    session_id: "scripted-session",
    uuid: "00000000-0000-4000-8000-000000000001",
    total_cost_usd: 0,
    usage: { input_tokens: 0, output_tokens: 0 },
    permission_denials: [],
  });
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) {
    return;
  }
  const message = JSON.parse(line);
  if (message.type === "control_request") {
    const subtype = message.request?.subtype;
    if (subtype === "initialize") {
      send({
        type: "control_response",
        response: { subtype: "success", request_id: message.request_id, response: { commands: [] } },
      });
    } else if (subtype === "interrupt") {
      // The CLI withdraws its open permission prompt, then ends the turn.
      if (open !== null) {
        send({ type: "control_cancel_request", request_id: open.requestId });
        permissions.push({ tool_use_id: open.call.tool_use_id, cancelled: true });
        open = null;
      }
      send({ type: "control_response", response: { subtype: "success", request_id: message.request_id, response: {} } });
      endTurn();
    } else {
      send({
        type: "control_response",
        response: { subtype: "error", request_id: message.request_id, error: `the scripted CLI does not do ${subtype}` },
      });
    }
  } else if (message.type === "user" && next === 0) {
    askNext();
  } else if (message.type === "control_response" && open !== null && message.response?.request_id === open.requestId) {
    const { response } = message;
    permissions.push(
      response.subtype === "success"
        ? { tool_use_id: open.call.tool_use_id, response: response.response }
        : { tool_use_id: open.call.tool_use_id, error: response.error },
    );
    open = null;
    askNext();
  }
  // Anything else (a late answer to a cancelled request, keep-alives) is not the script's.
});
lines.on("close", () => process.exit(0));
