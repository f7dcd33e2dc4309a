"""`GatewayAnswerer` with a real `pydantic_ai.Agent` and the real gateway, answered in a headless tab."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from gateway import Gateway
from pydantic_ai import Agent
from pydantic_ai_harness import AskUser
from pydantic_ai_harness.ask_user import (
    DECLINED,
    TIMED_OUT,
    AskUserAnswer,
    AskUserRequest,
    AskUserResponse,
    ask_user_result,
)
from scripted import Scripted, ask_call
from tab import Tab

from askgate import GatewayAnswerer, RequestWithdrawn
from askgate.harness import first_options

pytestmark = pytest.mark.anyio

Tabs = Callable[[str], Awaitable[Tab]]

QUESTIONS: list[dict[str, Any]] = [
    {
        "header": "Size",
        "question": "Which sizes should the first batch come in?\nPick any.",
        "options": [
            {"label": "S", "description": "Small"},
            {"label": "M"},
            {"label": "L", "description": "Large: 10 % more fabric"},
        ],
        "multi_select": True,
    },
    {
        "header": "Farbe",
        "question": "Welche Farbe? 色は?",
        "options": [{"label": "Grün"}, {"label": "Blau"}],
    },
]


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def run_with(agent: Agent[None, str]) -> asyncio.Task[Any]:
    return asyncio.ensure_future(agent.run("go"))


async def finish(task: asyncio.Task[Any], timeout: float = 15.0) -> Any:
    return await asyncio.wait_for(task, timeout)


async def test_answer_reaches_the_model_exactly_as_the_harness_renders_it(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    script = Scripted([ask_call(QUESTIONS, "call-1")])
    async with GatewayAnswerer(gateway.url, session, title="Ordering shirts") as answerer:
        assert answerer.viewer_url is not None and f"/s/{session}#k=" in answerer.viewer_url
        tab = await tabs(answerer.viewer_url)
        agent = Agent(script.model, capabilities=[AskUser(answerer=answerer)])
        run = await run_with(agent)

        shown = await tab.next_request()
        assert shown["title"] == "Ordering shirts"
        assert shown["dialect"] == "harness"
        assert shown["deadline_ms"] is None
        assert len(shown["id"]) == 32  # the harness's uuid4 hex request id
        request = AskUserRequest.from_tool_call(ask_call(QUESTIONS, "call-1"))
        assert shown["questions"] == [q.model_dump(mode="json") for q in request.questions]

        answers = [
            {"header": "Farbe", "custom_answer": "Türkis, bitte"},
            {"header": "Size", "selected": ["M", "S"]},
        ]
        resolved = await tab.answer(shown["id"], answers)
        assert resolved["outcome"] == "answered"
        result = await finish(run)
        assert result.output == "done"

    response = AskUserResponse(
        answers=(
            AskUserAnswer(header="Farbe", custom_answer="Türkis, bitte"),
            AskUserAnswer(header="Size", selected=("M", "S")),
        )
    )
    expected = ask_user_result(request, response)
    assert expected == {"Farbe": ["Türkis, bitte"], "Size": ["M", "S"]}
    got = script.tool_returns()["call-1"]
    assert got.content == expected
    assert got.model_response_str() == compact(expected) == '{"Farbe":["Türkis, bitte"],"Size":["M","S"]}'

    # The same exchange with an in-process answerer gives the model the very same return.
    async def local(req: AskUserRequest) -> AskUserResponse:
        return response

    reference = Scripted([ask_call(QUESTIONS, "call-1")])
    await Agent(reference.model, capabilities=[AskUser(answerer=local)]).run("go")
    want = reference.tool_returns()["call-1"]
    assert (got.content, got.model_response_str()) == (want.content, want.model_response_str())


async def test_declined_reads_declined(gateway: Gateway, session: str, tabs: Tabs) -> None:
    script = Scripted([ask_call(QUESTIONS[:1], "call-d")])
    async with GatewayAnswerer(gateway.url, session) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        run = await run_with(Agent(script.model, capabilities=[AskUser(answerer=answerer, timeout=30)]))
        shown = await tab.next_request()
        resolved = await tab.decline(shown["id"])
        assert resolved["outcome"] == "declined"
        await finish(run)
    got = script.tool_returns()["call-d"]
    assert got.content == DECLINED
    assert got.model_response_str() == DECLINED


async def test_gateway_deadline_reads_timed_out(gateway: Gateway, session: str, tabs: Tabs) -> None:
    """AskUser(timeout=1.5): the tab's deadline is a little earlier than the harness's, the
    gateway times the question out, the answerer waits for the harness, the model reads TIMED_OUT."""
    script = Scripted([ask_call(QUESTIONS[:1], "call-t")])
    async with GatewayAnswerer(gateway.url, session) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        started = time.monotonic()
        run = await run_with(Agent(script.model, capabilities=[AskUser(answerer=answerer, timeout=1.5)]))
        shown = await tab.next_request()
        window_ms = shown["deadline_ms"] - shown["asked_at_ms"]
        assert 1200 <= window_ms < 1500, window_ms  # 10 % margin before the harness deadline
        resolved = await tab.wait_resolved(shown["id"])
        assert resolved["outcome"] == "timed_out"
        # Too late: the gateway refuses the answer, so the tab never shows "answered" for a
        # question the model was told went unanswered.
        await tab.answer(shown["id"], [{"header": "Size", "selected": ["S"]}], wait=False)
        rejection = await tab.next_rejection()
        assert rejection["id"] == shown["id"]
        await finish(run)
        elapsed = time.monotonic() - started
    got = script.tool_returns()["call-t"]
    assert got.content == TIMED_OUT
    assert got.model_response_str() == TIMED_OUT
    # Not before the deadline, and ended by it rather than by anything later (the upper bound
    # is generous, so that a busy machine cannot miss it).
    assert 1.4 <= elapsed < 20, elapsed
    assert not answerer.client._asks and not answerer.client._withdrawing


async def test_a_default_is_what_the_model_reads_when_nobody_answers(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    """`GatewayAnswerer(default=first_options)` with `AskUser(timeout=1.5)`: nobody answers, the
    gateway gives the first option of each question just before the harness's deadline, and the
    model reads that answer as pydantic-ai-harness renders it, not TIMED_OUT."""
    script = Scripted([ask_call(QUESTIONS[:1], "call-f")])
    async with GatewayAnswerer(gateway.url, session, default=first_options) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        run = await run_with(Agent(script.model, capabilities=[AskUser(answerer=answerer, timeout=1.5)]))
        shown = await tab.next_request()
        first = shown["questions"][0]
        assert shown["default"] == {"answers": [{"header": first["header"], "selected": [first["options"][0]["label"]]}]}
        resolved = await tab.wait_resolved(shown["id"])
        assert (resolved["outcome"], resolved["via"]) == ("answered", "default")
        await finish(run)
    request = AskUserRequest.from_tool_call(ask_call(QUESTIONS[:1], "call-f"))
    picked = AskUserResponse(
        answers=(AskUserAnswer(header=first["header"], selected=(first["options"][0]["label"],)),)
    )
    expected = ask_user_result(request, picked)
    got = script.tool_returns()["call-f"]
    assert got.content == expected
    assert got.model_response_str() == compact(expected)


async def test_answerer_cap_without_harness_timeout_reads_declined(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    """Only the answerer's own `timeout`: the harness is not timing out, so the model reads
    DECLINED (the documented fallback)."""
    script = Scripted([ask_call(QUESTIONS[:1], "call-c")])
    async with GatewayAnswerer(gateway.url, session, timeout=0.8) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        run = await run_with(Agent(script.model, capabilities=[AskUser(answerer=answerer)]))
        shown = await tab.next_request()
        assert 700 <= shown["deadline_ms"] - shown["asked_at_ms"] <= 800
        assert (await tab.wait_resolved(shown["id"]))["outcome"] == "timed_out"
        await finish(run)
    assert script.tool_returns()["call-c"].content == DECLINED


async def test_cancelled_run_withdraws_the_question(gateway: Gateway, session: str, tabs: Tabs) -> None:
    script = Scripted([ask_call(QUESTIONS[:1], "call-x")])
    async with GatewayAnswerer(gateway.url, session) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        run = await run_with(Agent(script.model, capabilities=[AskUser(answerer=answerer, timeout=60)]))
        shown = await tab.next_request()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await finish(run)
        resolved = await tab.wait_resolved(shown["id"])
        assert resolved["outcome"] == "withdrawn"
        # The withdrawal's outcome came back and was acknowledged: nothing is left over.
        for _ in range(100):
            if not answerer.client._withdrawing and not answerer.client._unacked:
                break
            await asyncio.sleep(0.02)
        assert not answerer.client._asks and not answerer.client._withdrawing and not answerer.client._unacked


@pytest.mark.parametrize("order", ["in order", "reversed"])
async def test_two_questions_in_one_response(gateway: Gateway, session: str, tabs: Tabs, order: str) -> None:
    first = [{"header": "Database", "question": "Which database?", "options": [{"label": "PostgreSQL"}, {"label": "SQLite"}]}]
    second = [{"header": "Region", "question": "Which region?", "options": [{"label": "eu-west"}, {"label": "us-east"}]}]
    script = Scripted([ask_call(first, "call-a"), ask_call(second, "call-b")])
    async with GatewayAnswerer(gateway.url, session) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        run = await run_with(Agent(script.model, capabilities=[AskUser(answerer=answerer, timeout=30)]))
        shown = [await tab.next_request(), await tab.next_request()]
        by_header = {s["questions"][0]["header"]: s for s in shown}
        assert set(by_header) == {"Database", "Region"}
        picks = [("Database", "SQLite"), ("Region", "eu-west")]
        if order == "reversed":
            picks.reverse()
        for header, label in picks:
            resolved = await tab.answer(by_header[header]["id"], [{"header": header, "selected": [label]}])
            assert resolved["outcome"] == "answered"
        await finish(run)
    returns = script.tool_returns()
    assert returns["call-a"].content == {"Database": ["SQLite"]}
    assert returns["call-b"].content == {"Region": ["eu-west"]}
    assert returns["call-a"].model_response_str() == '{"Database":["SQLite"]}'


async def test_many_concurrent_asks_share_one_connection(gateway: Gateway, session: str, tabs: Tabs) -> None:
    questions = [{"header": "Pick", "question": "Pick one", "options": [{"label": "A"}, {"label": "B"}]}]
    async with GatewayAnswerer(gateway.url, session) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        request = AskUserRequest.from_tool_call(ask_call(questions, "x"))
        asks = [
            asyncio.ensure_future(answerer(AskUserRequest(questions=request.questions, id=f"r{i}"))) for i in range(20)
        ]
        seen = [await tab.next_request() for _ in asks]
        for shown in reversed(seen):
            label = "A" if int(shown["id"][1:]) % 2 else "B"
            await tab.answer(shown["id"], [{"header": "Pick", "selected": [label]}], wait=False)
        responses = await asyncio.wait_for(asyncio.gather(*asks), 15)
    for i, response in enumerate(responses):
        assert response == AskUserResponse(answers=(AskUserAnswer(header="Pick", selected=("A" if i % 2 else "B",)),))


async def test_withdrawn_by_someone_else_raises(gateway: Gateway, session: str, tabs: Tabs) -> None:
    import httpx

    questions = [{"header": "Pick", "question": "Pick one", "options": [{"label": "A"}, {"label": "B"}]}]
    request = AskUserRequest.from_tool_call(ask_call(questions, "x"))
    async with GatewayAnswerer(gateway.url, session) as answerer:
        assert answerer.viewer_url is not None
        tab = await tabs(answerer.viewer_url)
        ask = asyncio.ensure_future(answerer(AskUserRequest(questions=request.questions, id="gone")))
        await tab.next_request()
        async with httpx.AsyncClient() as http:
            deleted = await http.delete(f"{gateway.url}/v1/sessions/{session}/requests/gone", timeout=10)
        assert deleted.status_code == 200 and deleted.json()["outcome"] == "withdrawn"
        with pytest.raises(RequestWithdrawn):
            await asyncio.wait_for(ask, 10)
