"""A LangGraph graph paused by a deepagents-style `ask_user` interrupt, answered in a headless tab
through the gateway, and resumed with the `Command` the helper builds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

import anyio
import pytest
from gateway import Gateway
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Interrupt, interrupt
from tab import Tab

from askgate import NotAnswered, PostedRequest, answer_interrupts, answer_interrupts_sync, is_ask_user
from askgate.langgraph import collect_resume, post_interrupts

pytestmark = pytest.mark.anyio

Tabs = Callable[[str], Awaitable[Tab]]

QUESTIONS: list[dict[str, Any]] = [
    {"question": "What should the release be called?", "type": "text"},
    {
        "question": "Which channel?",
        "type": "multiple_choice",
        "choices": [{"value": "stable"}, {"value": "beta"}],
    },
    {
        "question": "Which platforms?",
        "type": "multi_select",
        "choices": [{"value": "linux"}, {"value": "macOS"}, {"value": "Windows"}],
    },
]


class State(TypedDict, total=False):
    resume: Any


def build_graph() -> Any:
    def ask(state: State) -> State:
        payload = interrupt({"type": "ask_user", "questions": QUESTIONS, "tool_call_id": "call_ask_1"})
        return {"resume": payload}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=InMemorySaver())


def paused(graph: Any, thread: str) -> tuple[dict[str, Any], list[Interrupt]]:
    config = {"configurable": {"thread_id": thread}}
    result = graph.invoke({"resume": None}, config)
    interrupts = result["__interrupt__"]
    assert len(interrupts) == 1 and is_ask_user(interrupts[0])
    return config, interrupts


async def test_interrupted_graph_resumed_with_the_tabs_answer(gateway: Gateway, session: str, tabs: Tabs) -> None:
    graph = build_graph()
    config, interrupts = paused(graph, session)
    posted: list[PostedRequest] = []

    answering = asyncio.ensure_future(
        answer_interrupts(gateway.url, session, interrupts, title="Release", wait=15, on_posted=posted.extend)
    )
    while not posted:
        await asyncio.sleep(0.01)
    assert posted[0].id == interrupts[0].id
    tab = await tabs(posted[0].viewer_url)
    shown = await tab.next_request()
    assert shown["id"] == interrupts[0].id
    assert shown["dialect"] == "deepagents"
    assert shown["title"] == "Release"
    # A multi-select answer as a list; the gateway encodes it as deepagents' TUI does.
    resolved = await tab.answer(shown["id"], {"answers": ["Kestrel 2", "beta", ["Windows", "linux"]]})
    assert resolved["outcome"] == "answered"

    command = await asyncio.wait_for(answering, 15)
    expected = {"answers": ["Kestrel 2", "beta", json.dumps(["linux", "Windows"], ensure_ascii=False)]}
    assert isinstance(command, Command)
    assert command.resume == {interrupts[0].id: expected}

    result = graph.invoke(command, config)
    assert result["resume"] == expected
    assert "__interrupt__" not in result


async def test_declined_resumes_with_the_cancelled_payload(gateway: Gateway, session: str, tabs: Tabs) -> None:
    graph = build_graph()
    config, interrupts = paused(graph, session)
    posted = await post_interrupts(gateway.url, session, interrupts)
    tab = await tabs(posted[0].viewer_url)
    shown = await tab.next_request()
    await tab.decline(shown["id"])
    command = await collect_resume(gateway.url, session, posted, wait=10)
    expected = {"status": "cancelled", "answers": ["", "", ""]}
    assert command.resume == {interrupts[0].id: expected}
    assert graph.invoke(command, config)["resume"] == expected


async def test_wait_runs_out(gateway: Gateway, session: str) -> None:
    graph = build_graph()
    _, interrupts = paused(graph, session)
    posted = await post_interrupts(gateway.url, session, interrupts)
    with pytest.raises(NotAnswered):
        await collect_resume(gateway.url, session, posted, wait=0.2)


async def test_sync_helper(gateway: Gateway, session: str, tabs: Tabs) -> None:
    graph = build_graph()
    config, interrupts = paused(graph, session)
    viewer = gateway.viewer_url(session)
    tab = await tabs(viewer)

    async def answer() -> None:
        shown = await tab.next_request()
        await tab.answer(shown["id"], {"answers": ["x", "stable", '["macOS"]']})

    answering = asyncio.ensure_future(answer())
    command = await anyio.to_thread.run_sync(
        lambda: answer_interrupts_sync(gateway.url, session, interrupts, wait=10)
    )
    await asyncio.wait_for(answering, 5)
    assert graph.invoke(command, config)["resume"] == {"answers": ["x", "stable", '["macOS"]']}


def test_other_interrupts_are_refused() -> None:
    other = Interrupt(value={"action": "approve"}, id="i-1")
    assert not is_ask_user(other)
    with pytest.raises(ValueError, match="not an ask_user interrupt"):
        answer_interrupts_sync("http://127.0.0.1:9", "s", [other])
