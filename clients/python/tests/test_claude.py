"""Claude Agent SDK: `can_use_tool` from `askgate.claude`, driven by the SDK's own `query()` over
a scripted CLI (the SDK's `Transport` seam: no CLI process, no model), answered by a person in a
headless tab through the gateway. The scripted CLI answers `initialize`, asks `can_use_tool`
once the prompt arrives, and keeps the SDK's `control_response`."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from approvals import approve, edit, person, reject
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, query
from claude_cli import ScriptedCLI
from gateway import Gateway
from tab import Tabs

from askgate import PostedRequest
from askgate._ask import derived_id
from askgate.claude import REJECTED_MESSAGE, can_use_tool

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def run(cli: ScriptedCLI, **options: Any) -> list[Any]:
    """One `query()` run over the scripted CLI; its messages."""
    with anyio.fail_after(30):
        return [message async for message in query(prompt="Go", options=ClaudeAgentOptions(**options), transport=cli)]


QUESTIONS = [
    {
        "question": "Which database should the service use?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "Relational, the team knows it"},
            {"label": "SQLite", "description": "One file, no server"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Which extras do you want?",
        "header": "Extras",
        "options": [
            {"label": "Backups", "description": "Nightly"},
            {"label": "Metrics", "description": "Prometheus"},
            {"label": "Tracing", "description": "OpenTelemetry", "preview": "otel.yaml"},
        ],
        "multiSelect": True,
    },
]


async def test_ask_user_question_answered_by_question_text(gateway: Gateway, session: str, tabs: Tabs) -> None:
    cli = ScriptedCLI("AskUserQuestion", {"questions": QUESTIONS})
    posted: list[PostedRequest] = []
    callback = can_use_tool(gateway.url, session, title="Setup", on_posted=posted.extend)
    running = asyncio.ensure_future(run(cli, can_use_tool=callback))
    tab, shown = await person(tabs, posted, "claude")
    assert shown["title"] == "Setup"
    assert shown["questions"] == QUESTIONS
    answers = {"Which database should the service use?": "Postgres", "Which extras do you want?": ["Backups", "Tracing"]}
    resolved = await tab.answer(shown["id"], {"answers": answers})
    assert resolved["outcome"] == "answered"
    messages = await asyncio.wait_for(running, 15)
    assert isinstance(messages[-1], ResultMessage)
    assert cli.permission() == {"behavior": "allow", "updatedInput": {"questions": QUESTIONS, "answers": answers}}
    # The request id comes from the tool call: the same call is the same request.
    assert posted[0].id == derived_id("claude", "toolu_01")


async def test_free_text_instead_of_picking(gateway: Gateway, session: str, tabs: Tabs) -> None:
    # The rest of the tool's input is kept as the CLI sent it.
    input = {"questions": QUESTIONS, "metadata": {"source": "setup"}}
    cli = ScriptedCLI("AskUserQuestion", input, tool_use_id="toolu_free_text")
    posted: list[PostedRequest] = []
    running = asyncio.ensure_future(run(cli, can_use_tool=can_use_tool(gateway.url, session, on_posted=posted.extend)))
    tab, shown = await person(tabs, posted, "claude")
    await tab.answer(shown["id"], {"answers": {}, "response": "Whatever is cheapest"})
    await asyncio.wait_for(running, 15)
    assert cli.permission()["updatedInput"] == {**input, "answers": {}, "response": "Whatever is cheapest"}


async def test_ask_user_question_declined_is_denied(gateway: Gateway, session: str, tabs: Tabs) -> None:
    cli = ScriptedCLI("AskUserQuestion", {"questions": QUESTIONS[:1]}, tool_use_id="toolu_decline")
    posted: list[PostedRequest] = []
    running = asyncio.ensure_future(run(cli, can_use_tool=can_use_tool(gateway.url, session, on_posted=posted.extend)))
    tab, shown = await person(tabs, posted, "claude")
    resolved = await tab.decline(shown["id"])
    assert resolved["outcome"] == "declined"
    await asyncio.wait_for(running, 15)
    assert cli.permission() == {"behavior": "deny", "message": "The person declined to answer."}


async def test_ask_user_question_unanswered_in_time_is_denied(gateway: Gateway, session: str, tabs: Tabs) -> None:
    cli = ScriptedCLI("AskUserQuestion", {"questions": QUESTIONS[:1]}, tool_use_id="toolu_late")
    posted: list[PostedRequest] = []
    callback = can_use_tool(gateway.url, session, timeout_s=1, on_posted=posted.extend)
    running = asyncio.ensure_future(run(cli, can_use_tool=callback))
    tab, shown = await person(tabs, posted, "claude")
    assert (await tab.wait_resolved(shown["id"]))["outcome"] == "timed_out"
    await asyncio.wait_for(running, 15)
    assert cli.permission() == {"behavior": "deny", "message": "No answer in time."}


BASH = {"command": "rm -rf build/", "description": "Clean the build directory"}


async def approval(
    gateway: Gateway, session: str, tabs: Tabs, decision: dict[str, Any], tool_use_id: str
) -> tuple[ScriptedCLI, dict[str, Any]]:
    """A Bash call put to the person with `approve_tools=True`, decided with `decision`."""
    cli = ScriptedCLI("Bash", BASH, tool_use_id=tool_use_id, title="Claude wants to run rm -rf build/")
    posted: list[PostedRequest] = []
    callback = can_use_tool(gateway.url, session, approve_tools=True, on_posted=posted.extend)
    running = asyncio.ensure_future(run(cli, can_use_tool=callback))
    tab, shown = await person(tabs, posted, "approval")
    resolved = await tab.answer(shown["id"], {"decisions": [decision]})
    assert resolved["outcome"] == "answered", resolved
    await asyncio.wait_for(running, 15)
    return cli, shown


async def test_approve_tools_approve_runs_the_input_unchanged(gateway: Gateway, session: str, tabs: Tabs) -> None:
    cli, shown = await approval(gateway, session, tabs, approve(), "toolu_approve")
    [call] = shown["calls"]
    assert call["name"] == "Bash"
    assert call["args"] == BASH
    assert call["description"] == "Claude wants to run rm -rf build/"
    assert call["decisions"] == ["approve", "edit", "reject"]
    assert cli.permission() == {"behavior": "allow", "updatedInput": BASH}


async def test_approve_tools_edit_runs_the_edited_input(gateway: Gateway, session: str, tabs: Tabs) -> None:
    edited = {"command": "rm -rf build/tmp/", "description": "Clean only the temporary files"}
    cli, _ = await approval(gateway, session, tabs, edit(edited), "toolu_edit")
    assert cli.permission() == {"behavior": "allow", "updatedInput": edited}


async def test_approve_tools_reject_denies_with_the_message(gateway: Gateway, session: str, tabs: Tabs) -> None:
    cli, _ = await approval(gateway, session, tabs, reject("Not on a Friday"), "toolu_reject")
    assert cli.permission() == {"behavior": "deny", "message": "Not on a Friday"}
    cli, _ = await approval(gateway, session, tabs, reject(), "toolu_reject_silent")
    assert cli.permission() == {"behavior": "deny", "message": REJECTED_MESSAGE}


async def test_other_tools_pass_untouched_without_approve_tools(gateway: Gateway, session: str) -> None:
    cli = ScriptedCLI("Bash", BASH, tool_use_id="toolu_free")
    posted: list[PostedRequest] = []
    await run(cli, can_use_tool=can_use_tool(gateway.url, session, on_posted=posted.extend))
    assert cli.permission() == {"behavior": "allow", "updatedInput": BASH}
    assert posted == []


async def test_a_permission_request_the_cli_cancels_is_withdrawn(gateway: Gateway, session: str, tabs: Tabs) -> None:
    cli = ScriptedCLI("AskUserQuestion", {"questions": QUESTIONS[:1]}, tool_use_id="toolu_cancelled")
    posted: list[PostedRequest] = []
    running = asyncio.ensure_future(run(cli, can_use_tool=can_use_tool(gateway.url, session, on_posted=posted.extend)))
    tab, shown = await person(tabs, posted, "claude")
    await cli.cancel()
    assert (await tab.wait_resolved(shown["id"]))["outcome"] == "withdrawn"
    await asyncio.wait_for(running, 15)
    assert cli.answer is None, "the SDK does not answer a request the CLI cancelled"


async def test_the_sdk_client_takes_the_same_callback(gateway: Gateway, session: str, tabs: Tabs) -> None:
    cli = ScriptedCLI("AskUserQuestion", {"questions": QUESTIONS[:1]}, tool_use_id="toolu_client")
    posted: list[PostedRequest] = []
    options = ClaudeAgentOptions(can_use_tool=can_use_tool(gateway.url, session, on_posted=posted.extend))

    async def converse() -> list[Any]:
        async with ClaudeSDKClient(options=options, transport=cli) as client:
            await client.query("Go")
            return [message async for message in client.receive_response()]

    running = asyncio.ensure_future(converse())
    tab, shown = await person(tabs, posted, "claude")
    await tab.answer(shown["id"], {"answers": {"Which database should the service use?": "I do not mind"}})
    messages = await asyncio.wait_for(running, 15)
    assert isinstance(messages[-1], ResultMessage)
    assert cli.permission()["updatedInput"]["answers"] == {"Which database should the service use?": "I do not mind"}
