"""LangChain `HumanInTheLoopMiddleware`, batched and per-call: an agent paused on tool calls,
decided by a person in a headless tab through the gateway, resumed with the `Command` that
`answer_hitl` builds."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from approvals import Tabs, approve, decide, decided, edit, person, reject, respond
from gateway import Gateway
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Interrupt
from pydantic import Field

from askgate import AskgateError, PostedRequest
from askgate._approval import ApprovalCall, CallDecision
from askgate.langchain import (
    DECLINED_MESSAGE,
    TIMED_OUT_MESSAGE,
    answer_hitl,
    answer_hitl_sync,
    hitl_decision,
    is_hitl,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


class FakeChat(GenericFakeChatModel):
    """Plays its messages in order, ignores the tools it is bound to, and records its inputs."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


SQL = {"name": "run_sql", "args": {"query": "DROP TABLE users"}, "id": "call_1"}
MAIL = {"name": "send_email", "args": {"to": "ops@example.com", "body": "done"}, "id": "call_2"}


class World:
    """An agent whose model calls `calls`, then says "done"; records what its tools ran."""

    def __init__(self, *calls: dict[str, Any], mode: str = "batched", mail: Any = None, thread: str = "t") -> None:
        self.sql: list[tuple[str, int]] = []
        self.mail: list[tuple[str, str]] = []

        @tool
        def run_sql(query: str, limit: int = 10) -> str:
            """Run a SQL statement."""
            self.sql.append((query, limit))
            return f"ran {query}"

        @tool
        def send_email(to: str, body: str) -> str:
            """Send an email."""
            self.mail.append((to, body))
            return f"sent to {to}"

        self.tools: list[BaseTool] = [run_sql, send_email]
        messages: Iterator[AIMessage] = iter(
            [AIMessage(content="", tool_calls=list(calls or [SQL])), AIMessage(content="done")]
        )
        self.model = FakeChat(messages=messages)
        middleware = HumanInTheLoopMiddleware(
            interrupt_on={
                "run_sql": True,
                "send_email": mail if mail is not None else {"allowed_decisions": ["approve", "reject"]},
            },
            interrupt_mode=mode,  # type: ignore[arg-type]
        )
        self.agent = create_agent(self.model, tools=self.tools, middleware=[middleware], checkpointer=InMemorySaver())
        self.config: Any = {"configurable": {"thread_id": thread}}

    def paused(self) -> list[Interrupt]:
        result = self.agent.invoke({"messages": [{"role": "user", "content": "Clean up"}]}, self.config)
        interrupts: list[Interrupt] = result["__interrupt__"]
        assert interrupts and all(is_hitl(i) for i in interrupts)
        assert self.sql == [] and self.mail == []
        return interrupts

    def resume(self, command: Command[Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.agent.invoke(command, self.config)
        assert "__interrupt__" not in result, result.get("__interrupt__")
        assert result["messages"][-1].content == "done"
        return result

    def tool_results(self) -> dict[str, str]:
        """What the model read for each tool call on its last turn, by call id."""
        return {m.tool_call_id: str(m.content) for m in self.model.seen[-1] if isinstance(m, ToolMessage)}


async def ask(
    tabs: Tabs, gateway: Gateway, session: str, interrupts: list[Interrupt], *decisions: dict[str, Any], **kwargs: Any
) -> tuple[Command[Any], dict[str, Any]]:
    return await decided(
        tabs, lambda on_posted: answer_hitl(gateway.url, session, interrupts, on_posted=on_posted, **kwargs), *decisions
    )


# ---- batched -----------------------------------------------------------------------------


async def test_batched_edit_and_reject(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, MAIL, thread=session)
    [interrupt] = world.paused()
    command, shown = await ask(
        tabs,
        gateway,
        session,
        [interrupt],
        edit({"query": "SELECT 1"}),
        reject("Not today."),
        tools=world.tools,
    )
    first, second = shown["calls"]
    assert first["name"] == "run_sql" and first["args"] == {"query": "DROP TABLE users"}
    assert first["description"].startswith("Tool execution requires approval")
    assert first["decisions"] == ["approve", "edit", "reject", "respond"]
    assert first["args_schema"]["properties"]["query"]["type"] == "string"
    assert first["edit_check"] == "schema"
    assert second["decisions"] == ["approve", "reject"]
    assert command.resume == {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "run_sql", "args": {"query": "SELECT 1"}}},
            {"type": "reject", "message": "Not today."},
        ]
    }
    world.resume(command)
    assert world.sql == [("SELECT 1", 10)]
    assert world.mail == []
    results = world.tool_results()
    assert results["call_1"].endswith("ran SELECT 1")
    assert results["call_2"] == "User rejected the tool call for `send_email` with reason: Not today."


async def test_batched_approve(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, thread=session)
    interrupts = world.paused()
    command, shown = await ask(tabs, gateway, session, interrupts, approve())
    assert "args_schema" not in shown["calls"][0]  # batched interrupts carry none, and no tools= was given
    assert shown["calls"][0]["edit_check"] == "object"
    assert command.resume == {"decisions": [{"type": "approve"}]}
    world.resume(command)
    assert world.sql == [("DROP TABLE users", 10)]
    assert world.tool_results() == {"call_1": "ran DROP TABLE users"}


async def test_batched_respond_skips_the_tool(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, thread=session)
    command, _ = await ask(tabs, gateway, session, world.paused(), respond("The table is already empty."))
    world.resume(command)
    assert world.sql == []
    assert world.tool_results() == {"call_1": "The table is already empty."}


async def test_batched_declined_rejects_every_call(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, MAIL, thread=session)
    posted: list[PostedRequest] = []
    deciding = asyncio.ensure_future(answer_hitl(gateway.url, session, world.paused(), on_posted=posted.extend))
    tab, shown = await person(tabs, posted)
    assert (await tab.decline(shown["id"]))["outcome"] == "declined"
    command = await asyncio.wait_for(deciding, 15)
    world.resume(command)
    assert world.sql == [] and world.mail == []
    assert world.tool_results() == {
        "call_1": f"User rejected the tool call for `run_sql` with reason: {DECLINED_MESSAGE}",
        "call_2": f"User rejected the tool call for `send_email` with reason: {DECLINED_MESSAGE}",
    }


# ---- per call ----------------------------------------------------------------------------


async def test_per_call_edit_checked_against_the_tools_schema(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, MAIL, mode="per_call", thread=session)
    interrupts = world.paused()
    assert len(interrupts) == 2 and all(i.value["type"] == "tool_approval" for i in interrupts)
    by_name = {i.value["name"]: i for i in interrupts}
    posted: list[PostedRequest] = []
    deciding = asyncio.ensure_future(answer_hitl(gateway.url, session, interrupts, on_posted=posted.extend))
    tab, shown = await person(tabs, posted)
    assert len(posted) == 1, "both interrupts go in one request"
    calls = {c["name"]: c for c in shown["calls"]}
    # The decisions and the argument schema come from each interrupt's response_schema.
    assert calls["run_sql"]["decisions"] == ["approve", "edit", "reject", "respond"]
    schema = calls["run_sql"]["args_schema"]
    assert schema["properties"]["limit"]["type"] == "integer"
    assert schema["required"] == ["query"]
    assert "$ref" not in repr(schema) and "$defs" not in repr(schema)
    assert calls["run_sql"]["edit_check"] == "schema"
    assert calls["send_email"]["decisions"] == ["approve", "reject"]
    # An edit the tool's schema refuses never reaches the run.
    order = [c["name"] for c in shown["calls"]]
    wrong = {"run_sql": edit({"query": "SELECT 1", "limit": "ten"}), "send_email": reject()}
    await tab.answer(shown["id"], {"decisions": [wrong[n] for n in order]}, wait=False)
    refused = await tab.next_rejection()
    assert refused["errors"][0]["path"].endswith(".args.limit"), refused
    right = {"run_sql": edit({"query": "SELECT 1", "limit": 1}), "send_email": reject()}
    await decide(tab, shown, *[right[n] for n in order])
    command = await asyncio.wait_for(deciding, 15)
    assert command.resume == {
        by_name["run_sql"].id: {"type": "edit", "edited_action": {"name": "run_sql", "args": {"query": "SELECT 1", "limit": 1}}},
        by_name["send_email"].id: {"type": "reject"},
    }
    world.resume(command)
    assert world.sql == [("SELECT 1", 1)]
    assert world.mail == []
    results = world.tool_results()
    assert results["call_1"].endswith("ran SELECT 1")
    assert results["call_2"].startswith("User rejected the tool call for `send_email` with id call_2.")


async def test_per_call_approve_and_respond(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, MAIL, mode="per_call", mail=True, thread=session)
    interrupts = world.paused()
    posted: list[PostedRequest] = []
    deciding = asyncio.ensure_future(answer_hitl(gateway.url, session, interrupts, on_posted=posted.extend))
    tab, shown = await person(tabs, posted)
    answers = {"run_sql": approve(), "send_email": respond("I told them myself.")}
    await decide(tab, shown, *[answers[c["name"]] for c in shown["calls"]])
    world.resume(await asyncio.wait_for(deciding, 15))
    assert world.sql == [("DROP TABLE users", 10)]
    assert world.mail == []
    assert world.tool_results() == {"call_1": "ran DROP TABLE users", "call_2": "I told them myself."}


async def test_per_call_timed_out_rejects(gateway: Gateway, session: str) -> None:
    world = World(SQL, mode="per_call", thread=session)
    command = await answer_hitl(gateway.url, session, world.paused(), timeout_s=0.5, wait=10)
    world.resume(command)
    assert world.sql == []
    assert world.tool_results() == {
        "call_1": f"User rejected the tool call for `run_sql` with reason: {TIMED_OUT_MESSAGE}"
    }


async def test_blocking_twin(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, thread=session)
    interrupts = world.paused()
    tab = await tabs(gateway.viewer_url(session))

    async def answer() -> None:
        shown = await tab.next_request()
        await decide(tab, shown, reject("Ask the DBA."))

    answering = asyncio.ensure_future(answer())
    command = await anyio.to_thread.run_sync(lambda: answer_hitl_sync(gateway.url, session, interrupts, wait=15))
    await asyncio.wait_for(answering, 5)
    world.resume(command)
    assert world.sql == []
    assert world.tool_results() == {"call_1": "User rejected the tool call for `run_sql` with reason: Ask the DBA."}


# ---- without a gateway -------------------------------------------------------------------


def test_other_interrupts_are_refused() -> None:
    ask_user = Interrupt(value={"type": "ask_user", "questions": []}, id="i-1")
    assert not is_hitl(ask_user)
    with pytest.raises(ValueError, match="not a HumanInTheLoopMiddleware interrupt"):
        answer_hitl_sync("http://127.0.0.1:9", "s", [ask_user])


def test_a_decline_of_a_call_that_cannot_be_rejected() -> None:
    """A decline rejects every call; a call that allows no reject gets the message as a
    respond when it may, and otherwise nothing is sent."""
    declined = CallDecision(type="reject", message=DECLINED_MESSAGE, outcome="declined")
    responds = ApprovalCall(name="t", args={}, decisions=("approve", "respond"))
    assert hitl_decision(responds, declined) == {"type": "respond", "message": DECLINED_MESSAGE}
    neither = ApprovalCall(name="t", args={}, decisions=("approve", "edit"))
    with pytest.raises(AskgateError, match="allows only approve, edit"):
        hitl_decision(neither, declined)
