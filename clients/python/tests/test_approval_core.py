"""The framework-free half of the approval adapters: `import askgate` stays light, the socket
client sends `calls`, and the helpers that read outcomes and schemas."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from approvals import Tabs, approve, decide, edit
from gateway import Gateway

import askgate
from askgate import AskgateError, Client, Outcome, RequestWithdrawn
from askgate._approval import (
    ApprovalCall,
    CallDecision,
    args_object,
    decisions_from_outcome,
    request_id,
    resolve_refs,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

FRAMEWORKS = (
    "agents",
    "openai",
    "langchain",
    "langchain_core",
    "langgraph",
    "pydantic_ai",
    "pydantic_ai_harness",
    "ag_ui",
    "mcp",
    "mcp_types",
    "claude_agent_sdk",
)


def test_import_askgate_imports_no_framework() -> None:
    code = (
        "import sys, askgate\n"
        "askgate.Client, askgate.Outcome, askgate.PostedRequest\n"
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.parametrize(
    ("module", "framework", "others"),
    [
        # The Agents SDK imports mcp itself, and claude-agent-sdk does too.
        ("askgate.openai_agents", "agents", ("langchain", "pydantic_ai", "ag_ui", "claude_agent_sdk")),
        ("askgate.langchain", "langchain_core", ("agents", "pydantic_ai", "ag_ui", "mcp", "claude_agent_sdk")),
        ("askgate.pydantic_ai", "pydantic_ai", ("agents", "langchain", "ag_ui", "mcp", "claude_agent_sdk")),
        ("askgate.agui", "ag_ui", ("agents", "langchain", "pydantic_ai", "mcp", "claude_agent_sdk")),
        ("askgate.mcp", "mcp", ("agents", "langchain", "pydantic_ai", "ag_ui", "claude_agent_sdk")),
        ("askgate.claude", "claude_agent_sdk", ("agents", "langchain", "pydantic_ai", "ag_ui")),
    ],
)
def test_each_adapter_imports_its_own_framework_only(module: str, framework: str, others: tuple[str, ...]) -> None:
    code = f"import sys, {module}\nprint({framework!r} in sys.modules, sorted(m for m in {others!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "True []", out.stdout + out.stderr


async def test_the_socket_client_asks_for_approvals(gateway: Gateway, session: str, tabs: Tabs) -> None:
    calls = [
        ApprovalCall(
            name="run_sql",
            args={"query": "DROP TABLE users"},
            args_schema={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
            decisions=("approve", "edit", "reject"),
        ).to_json(),
        ApprovalCall(name="send_email", args={"to": "a@b.c"}).to_json(),
    ]
    async with Client(gateway.url) as client:
        opened = await client.open(session)
        tab = await tabs(opened.viewer_url)
        asking = asyncio.ensure_future(client.ask(session, calls, id="r1", dialect="approval", title="Two tools"))
        shown = await tab.next_request()
        assert shown["dialect"] == "approval" and shown["title"] == "Two tools"
        assert [c["decisions"] for c in shown["calls"]] == [["approve", "edit", "reject"], ["approve", "reject"]]
        await decide(tab, shown, edit({"query": "SELECT 1"}), approve())
        outcome = await asking
    assert outcome.outcome == "answered"
    assert decisions_from_outcome(outcome, 2) == [
        CallDecision(type="edit", args={"query": "SELECT 1"}),
        CallDecision(type="approve"),
    ]
    assert outcome.model_text == "run_sql: edited\nsend_email: approved"


def outcome(kind: str, response: object) -> Outcome:
    return Outcome.from_json({"session": "s", "id": "r", "outcome": kind, "response": response})


def test_decisions_from_outcome() -> None:
    declined = outcome("declined", {"decisions": [{"type": "reject", "message": "The person declined."}]})
    assert decisions_from_outcome(declined, 1) == [
        CallDecision(type="reject", message="The person declined.", outcome="declined")
    ]
    answered = outcome(
        "answered", {"decisions": [{"type": "reject"}, {"type": "respond", "message": "hi"}, {"type": "approve"}]}
    )
    assert [(d.type, d.message) for d in decisions_from_outcome(answered, 3)] == [
        ("reject", None),
        ("respond", "hi"),
        ("approve", None),
    ]
    with pytest.raises(RequestWithdrawn):
        decisions_from_outcome(outcome("withdrawn", None), 1)
    with pytest.raises(AskgateError, match="one decision per call"):
        decisions_from_outcome(outcome("answered", {"decisions": []}), 1)
    with pytest.raises(AskgateError, match="not one askgate knows"):
        decisions_from_outcome(outcome("answered", {"decisions": [{"type": "maybe"}]}), 1)
    with pytest.raises(AskgateError, match="edits without args"):
        decisions_from_outcome(outcome("answered", {"decisions": [{"type": "edit"}]}), 1)


def test_args_object() -> None:
    assert args_object('{"a": 1}') == {"a": 1}
    assert args_object("") == {}
    assert args_object(None) == {}
    assert args_object({"b": 2}) == {"b": 2}
    assert args_object("not json") == {"arguments": "not json"}
    assert args_object("[1, 2]") == {"arguments": [1, 2]}


def test_request_ids_are_stable_and_valid() -> None:
    assert request_id(["call_1", "call_2"]) == request_id(["call_1", "call_2"])
    assert request_id(["call_1", "call_2"]) != request_id(["call_2", "call_1"])
    assert request_id(["x" * 5000]).startswith("approval-") and len(request_id(["x" * 5000])) < 256


def test_resolve_refs() -> None:
    schema = {
        "$defs": {
            "Inner": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "Tag": {"type": "string", "enum": ["a", "b"]},
        },
        "type": "object",
        "properties": {
            "inner": {"$ref": "#/$defs/Inner", "description": "kept"},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
        },
    }
    assert resolve_refs(schema) == {
        "type": "object",
        "properties": {
            "inner": {"type": "object", "properties": {"n": {"type": "integer"}}, "description": "kept"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        },
    }
    recursive = {"$defs": {"Node": {"properties": {"next": {"$ref": "#/$defs/Node"}}}}, "$ref": "#/$defs/Node"}
    assert resolve_refs(recursive) is None
    assert resolve_refs({"$ref": "https://example.com/schema.json"}) is None
    assert resolve_refs({"$ref": "#/$defs/missing"}) is None
    assert resolve_refs("not a schema") is None
    # A branch of a larger document, resolved against its root.
    root = {"$defs": {"A": {"type": "integer"}}, "oneOf": [{"properties": {"x": {"$ref": "#/$defs/A"}}}]}
    assert resolve_refs(root["oneOf"][0], root) == {"properties": {"x": {"type": "integer"}}}  # type: ignore[index]


def test_call_json() -> None:
    call = ApprovalCall(name="t", args={"a": 1}, description="", decisions=("reject", "approve", "respond"))
    assert call.to_json() == {"name": "t", "args": {"a": 1}, "decisions": ["approve", "reject", "respond"]}
    assert "approval" in (askgate.__doc__ or "")
