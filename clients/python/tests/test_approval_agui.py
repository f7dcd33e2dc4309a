"""AG-UI: pydantic-ai's AG-UI adapter ends a run with `tool_call` interrupts; a person decides in a
headless tab through the gateway; `resume` builds the `ResumeEntry`s; the next run, carrying them,
runs the tool (or not) as decided."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import pytest
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    ToolCall,
    UserMessage,
)
from approvals import Tabs, Tools, approve, decide, decided, edit, person, reject
from gateway import Gateway
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from scripted import tool_return_contents

from askgate import PostedRequest
from askgate.agui import DECLINED_MESSAGE, TIMED_OUT_MESSAGE, expiry_timeout, resume, resume_sync, tool_calls_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

CALLS = {
    "call_1": ("run_sql", {"query": "DROP TABLE users"}),
    "call_2": ("send_email", {"to": "ops@example.com", "body": "done"}),
}


class World(Tools):
    """A pydantic-ai agent served over AG-UI; its model streams `calls`, then "done"."""

    def __init__(self, *call_ids: str) -> None:
        super().__init__()
        self.call_ids = list(call_ids) or ["call_1"]
        self.requests: list[list[ModelMessage]] = []
        self.agent: Agent[None, str | DeferredToolRequests] = Agent(
            FunctionModel(stream_function=self.stream), output_type=[str, DeferredToolRequests]
        )
        for tool in (self.run_sql, self.send_email):
            self.agent.tool_plain(requires_approval=True)(tool)

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        self.requests.append(list(messages))
        if len(self.requests) == 1:
            yield {
                index: DeltaToolCall(name=CALLS[id][0], json_args=json.dumps(CALLS[id][1]), tool_call_id=id)
                for index, id in enumerate(self.call_ids)
            }
        else:
            yield "done"

    def tool_returns(self) -> dict[str, Any]:
        return tool_return_contents(self.requests[-1])

    async def run(self, run_input: RunAgentInput) -> list[BaseEvent]:
        return [event async for event in AGUIAdapter(self.agent, run_input).run_stream()]

    async def paused(self) -> tuple[list[BaseEvent], RunFinishedEvent]:
        self.first = RunAgentInput(thread_id="thread-1", run_id="run-1", messages=[UserMessage(id="u1", content="Clean up")])
        events = await self.run(self.first)
        finished = events[-1]
        assert isinstance(finished, RunFinishedEvent), finished
        assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
        assert [i.reason for i in finished.outcome.interrupts] == ["tool_call"] * len(self.call_ids)
        assert self.sql == [] and self.mail == []
        return events, finished

    async def resume(self, events: list[BaseEvent], entries: list[ResumeEntry]) -> list[BaseEvent]:
        """The next run on the thread: the client sends back the assistant's tool calls and `resume`."""
        assistant = AssistantMessage(
            id="a1",
            tool_calls=[
                ToolCall(id=id, function=FunctionCall(name=name, arguments=arguments))
                for id, (name, arguments) in tool_calls_of(events).items()
            ],
        )
        # The entries go over the wire as JSON: check they are what the package's model reads.
        wire = {
            **self.first.model_dump(by_alias=True),
            "runId": "run-2",
            "messages": [*self.first.messages, assistant],
            "resume": [entry.model_dump(mode="json", by_alias=True) for entry in entries],
        }
        run_input = RunAgentInput.model_validate(json.loads(json.dumps(wire, default=lambda m: m.model_dump(by_alias=True))))
        later = await self.run(run_input)
        finished = later[-1]
        assert isinstance(finished, RunFinishedEvent), finished
        assert finished.outcome is None or finished.outcome.type == "success", finished
        return later


def wire(entries: list[ResumeEntry]) -> list[dict[str, Any]]:
    return [entry.model_dump(mode="json", by_alias=True) for entry in entries]


async def answered(
    tabs: Tabs, gateway: Gateway, session: str, events: list[BaseEvent], *decisions: dict[str, Any]
) -> tuple[list[ResumeEntry], dict[str, Any]]:
    return await decided(
        tabs, lambda on_posted: resume(gateway.url, session, events[-1], events=events, on_posted=on_posted), *decisions
    )


async def test_approved_call_runs(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World("call_1")
    events, _ = await world.paused()
    entries, shown = await answered(tabs, gateway, session, events, approve())
    [call] = shown["calls"]
    assert call["name"] == "run_sql" and call["args"] == {"query": "DROP TABLE users"}
    assert call["description"] == 'Approve run_sql({"query":"DROP TABLE users"})?'
    assert call["decisions"] == ["approve", "edit", "reject"]
    assert shown["deadline_ms"] is None  # pydantic-ai sets no expiresAt
    assert wire(entries) == [{"interruptId": "int-call_1", "status": "resolved", "payload": {"approved": True}}]
    await world.resume(events, entries)
    assert world.sql == ["DROP TABLE users"]
    assert world.tool_returns() == {"call_1": "ran DROP TABLE users"}


async def test_edited_call_runs_with_the_edited_args(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World("call_1")
    events, _ = await world.paused()
    entries, _ = await answered(tabs, gateway, session, events, edit({"query": "SELECT 1"}))
    assert wire(entries) == [
        {"interruptId": "int-call_1", "status": "resolved", "payload": {"approved": True, "editedArgs": {"query": "SELECT 1"}}}
    ]
    await world.resume(events, entries)
    assert world.sql == ["SELECT 1"]


async def test_rejected_call_does_not_run_and_the_model_reads_the_reason(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    world = World("call_1", "call_2")
    events, _ = await world.paused()
    entries, shown = await answered(tabs, gateway, session, events, reject("Not on production."), approve())
    assert [c["name"] for c in shown["calls"]] == ["run_sql", "send_email"]
    assert wire(entries) == [
        {"interruptId": "int-call_1", "status": "resolved", "payload": {"approved": False, "reason": "Not on production."}},
        {"interruptId": "int-call_2", "status": "resolved", "payload": {"approved": True}},
    ]
    await world.resume(events, entries)
    assert world.sql == []
    assert world.mail == [("ops@example.com", "done")]
    assert world.tool_returns() == {"call_1": "Not on production.", "call_2": "sent to ops@example.com"}


async def test_declined_rejects_every_call(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World("call_1", "call_2")
    events, finished = await world.paused()
    posted: list[PostedRequest] = []
    resuming = asyncio.ensure_future(
        resume(gateway.url, session, finished, events=events, on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    assert (await tab.decline(shown["id"]))["outcome"] == "declined"
    entries = await asyncio.wait_for(resuming, 15)
    assert [e.payload for e in entries] == [{"approved": False, "reason": DECLINED_MESSAGE}] * 2
    await world.resume(events, entries)
    assert world.sql == [] and world.mail == []
    assert world.tool_returns() == {"call_1": DECLINED_MESSAGE, "call_2": DECLINED_MESSAGE}


async def test_entries_are_ready_before_the_interrupt_expires(gateway: Gateway, session: str, tabs: Tabs) -> None:
    """The gateway deadline is the earliest expiresAt less a margin: unanswered, the calls are
    rejected with "No answer in time." before the interrupt expires, and the resume is accepted."""
    world = World("call_1", "call_2")
    events, finished = await world.paused()
    assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
    soon = datetime.now(timezone.utc) + timedelta(seconds=2)
    later = soon + timedelta(seconds=60)
    interrupts = [
        finished.outcome.interrupts[0].model_copy(update={"expires_at": later.isoformat()}),
        finished.outcome.interrupts[1].model_copy(update={"expires_at": soon.isoformat().replace("+00:00", "Z")}),
    ]
    posted: list[PostedRequest] = []
    resuming = asyncio.ensure_future(
        resume(gateway.url, session, interrupts, events=events, on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    window = shown["deadline_ms"] / 1000 - soon.timestamp()
    assert -0.6 <= window < -0.3, window  # 0.5 s before the earliest expiry
    entries = await asyncio.wait_for(resuming, 15)
    assert time.time() < soon.timestamp(), "the entries must be ready before the interrupt expires"
    assert [e.payload for e in entries] == [{"approved": False, "reason": TIMED_OUT_MESSAGE}] * 2
    await world.resume(events, entries)
    assert world.sql == [] and world.mail == []
    assert world.tool_returns() == {"call_1": TIMED_OUT_MESSAGE, "call_2": TIMED_OUT_MESSAGE}


async def test_other_interrupts_are_cancelled(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World("call_1")
    events, finished = await world.paused()
    assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
    other = Interrupt(id="need-region", reason="input_required", message="Which region?")
    interrupts = [other, *finished.outcome.interrupts, {"id": "x:1", "reason": "acme:confirm"}]
    posted: list[PostedRequest] = []
    resuming = asyncio.ensure_future(
        resume(gateway.url, session, interrupts, events=events, on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    assert [c["name"] for c in shown["calls"]] == ["run_sql"]
    await decide(tab, shown, approve())
    entries = await asyncio.wait_for(resuming, 15)
    assert wire(entries) == [
        {"interruptId": "need-region", "status": "cancelled"},
        {"interruptId": "int-call_1", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "x:1", "status": "cancelled"},
    ]


async def test_blocking_twin_with_messages(gateway: Gateway, session: str, tabs: Tabs) -> None:
    """The tool calls found in AG-UI messages (as a client keeps them), as JSON."""
    world = World("call_1")
    events, finished = await world.paused()
    messages = [
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [{"id": "call_1", "type": "function", "function": {"name": "run_sql", "arguments": '{"query": "DROP TABLE users"}'}}],
        }
    ]
    tab = await tabs(gateway.viewer_url(session))

    async def answer() -> None:
        shown = await tab.next_request()
        assert shown["calls"][0]["args"] == {"query": "DROP TABLE users"}
        await decide(tab, shown, reject())

    answering = asyncio.ensure_future(answer())
    outcome = finished.model_dump(mode="json", by_alias=True)["outcome"]
    entries = await anyio.to_thread.run_sync(
        lambda: resume_sync(gateway.url, session, outcome["interrupts"], messages=messages, wait=15)
    )
    await asyncio.wait_for(answering, 5)
    assert wire(entries) == [{"interruptId": "int-call_1", "status": "resolved", "payload": {"approved": False}}]
    await world.resume(events, entries)
    assert world.sql == []
    assert world.tool_returns() == {"call_1": "The tool call was denied."}


# ---- without a gateway -------------------------------------------------------------------


async def test_no_tool_call_interrupt_asks_nothing() -> None:
    entries = await resume("http://127.0.0.1:9", "nobody", [{"id": "i1", "reason": "confirmation"}])
    assert wire(entries) == [{"interruptId": "i1", "status": "cancelled"}]
    done = RunFinishedEvent(thread_id="t", run_id="r")
    assert await resume("http://127.0.0.1:9", "nobody", done) == []
    with pytest.raises(ValueError, match="expected the RUN_FINISHED event"):
        await resume("http://127.0.0.1:9", "nobody", RunStartedEvent(thread_id="t", run_id="r"))


async def test_refusals_before_asking() -> None:
    expired = Interrupt(id="int-call_1", reason="tool_call", tool_call_id="call_1", expires_at="2020-01-01T00:00:00Z")
    call = AssistantMessage(id="a1", tool_calls=[ToolCall(id="call_1", function=FunctionCall(name="t", arguments="{}"))])
    with pytest.raises(ValueError, match="expired at 2020-01-01T00:00:00Z"):
        await resume("http://127.0.0.1:9", "nobody", [expired], messages=[call])
    unknown = Interrupt(id="int-call_9", reason="tool_call", tool_call_id="call_9")
    with pytest.raises(ValueError, match="in neither events nor messages"):
        await resume("http://127.0.0.1:9", "nobody", [unknown], messages=[])


def test_expiry_margin() -> None:
    at = Interrupt(id="i", reason="tool_call", expires_at="2030-01-01T00:00:10+00:00")
    start = datetime(2030, 1, 1, tzinfo=timezone.utc).timestamp()
    assert expiry_timeout([at], now=start - 90) == pytest.approx(98.0)  # 100 s left: at most 2 s
    assert expiry_timeout([at], now=start) == pytest.approx(9.0)  # 10 s left: 10 %
    assert expiry_timeout([at], now=start + 8) == pytest.approx(1.5)  # 2 s left: at least 0.5 s
    assert expiry_timeout([at], now=start + 9.6) == pytest.approx(0.2)  # 0.4 s left: half
    assert expiry_timeout([Interrupt(id="j", reason="tool_call")]) is None
