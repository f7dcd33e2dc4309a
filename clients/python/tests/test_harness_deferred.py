"""Paused runs: `AskUser(answerer=None)`, questions posted over the HTTP API, resumed with
`DeferredToolResults`."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import anyio
import httpx
import pytest
from gateway import Gateway
from pydantic_ai import Agent, DeferredToolRequests
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

from askgate import (
    ApiError,
    NotAnswered,
    PostedRequest,
    collect_results,
    collect_results_sync,
    post_deferred,
    post_deferred_sync,
)
from askgate.harness import ack_posted

pytestmark = pytest.mark.anyio

Tabs = Callable[[str], Awaitable[Tab]]

COLOR = [
    {
        "header": "Color",
        "question": "Which colour should the button be?",
        "options": [{"label": "Red"}, {"label": "Blue", "description": "The brand colour"}],
    }
]
SIZES = [
    {
        "header": "Sizes",
        "question": "Which sizes?",
        "options": [{"label": "S"}, {"label": "M"}, {"label": "L"}],
        "multi_select": True,
    },
    {"header": "Fit", "question": "Which fit?", "options": [{"label": "Slim"}, {"label": "Regular"}]},
]


def paused_agent(script: Scripted) -> Agent[None, str | DeferredToolRequests]:
    return Agent(script.model, output_type=[str, DeferredToolRequests], capabilities=[AskUser(answerer=None)])


async def test_paused_run_answered_in_a_tab_and_resumed(gateway: Gateway, session: str, tabs: Tabs) -> None:
    # One call with args as JSON text (as OpenAI-style models send them), one with a dict.
    text_args = json.dumps({"questions": SIZES})
    calls = [ask_call(text_args, "call_text"), ask_call(COLOR, "call_dict")]
    script = Scripted(calls)
    agent = paused_agent(script)
    paused = await agent.run("go")
    assert isinstance(paused.output, DeferredToolRequests)
    assert [c.tool_call_id for c in paused.output.calls] == ["call_text", "call_dict"]

    posted = await post_deferred(gateway.url, session, paused.output, title="Paused run")
    assert [p.id for p in posted] == ["call_text", "call_dict"]
    assert all(f"/s/{session}#k=" in p.viewer_url and p.deadline_ms is None for p in posted)
    # Posting again (a host that crashed before saving) is harmless.
    assert await post_deferred(gateway.url, session, paused.output) == posted

    tab = await tabs(posted[0].viewer_url)
    shown = {r["id"]: r for r in [await tab.next_request(), await tab.next_request()]}
    assert set(shown) == {"call_text", "call_dict"}
    assert shown["call_text"]["title"] == "Paused run"
    assert shown["call_text"]["questions"] == [
        q.model_dump(mode="json") for q in AskUserRequest.from_tool_call(calls[0]).questions
    ]
    answers = [{"header": "Fit", "selected": ["Regular"]}, {"header": "Sizes", "selected": ["L", "S"]}]
    assert (await tab.answer("call_text", answers))["outcome"] == "answered"
    assert (await tab.decline("call_dict"))["outcome"] == "declined"

    results = await collect_results(gateway.url, session, posted, wait=10)
    expected_text = ask_user_result(
        AskUserRequest.from_tool_call(calls[0]),
        AskUserResponse(
            answers=(AskUserAnswer(header="Fit", selected=("Regular",)), AskUserAnswer(header="Sizes", selected=("L", "S")))
        ),
    )
    assert results.calls == {"call_text": expected_text, "call_dict": DECLINED}

    resumed = await agent.run(message_history=paused.all_messages(), deferred_tool_results=results)
    assert resumed.output == "done"
    returns = script.tool_returns(call=1)
    assert returns["call_text"].content == expected_text == {"Fit": ["Regular"], "Sizes": ["L", "S"]}
    assert returns["call_text"].model_response_str() == '{"Fit":["Regular"],"Sizes":["L","S"]}'
    assert returns["call_dict"].content == DECLINED

    # Collected with ack=True: the gateway has forgotten both.
    async with httpx.AsyncClient() as http:
        for id in ("call_text", "call_dict"):
            gone = await http.get(f"{gateway.url}/v1/sessions/{session}/requests/{id}", timeout=10)
            assert gone.status_code == 404


async def test_collect_waits_runs_out_then_collects_later(gateway: Gateway, session: str, tabs: Tabs) -> None:
    script = Scripted([ask_call(COLOR, "call_later")])
    agent = paused_agent(script)
    paused = await agent.run("go")
    assert isinstance(paused.output, DeferredToolRequests)
    posted = await post_deferred(gateway.url, session, paused.output)

    with pytest.raises(NotAnswered) as raised:
        await collect_results(gateway.url, session, posted, wait=0.3)
    assert raised.value.pending == ("call_later",)

    # A durable worker keeps the posted requests as data and collects in another process.
    saved = json.dumps([p.to_json() for p in posted])
    restored = [PostedRequest.from_json(v) for v in json.loads(saved)]
    collecting = asyncio.ensure_future(collect_results(gateway.url, session, restored, wait=10, ack=False))
    tab = await tabs(posted[0].viewer_url)
    shown = await tab.next_request()
    await tab.answer(shown["id"], [{"header": "Color", "selected": ["Blue"]}])
    results = await asyncio.wait_for(collecting, 15)
    assert results.calls == {"call_later": {"Color": ["Blue"]}}
    # Not acknowledged yet: collecting again gives the same, then ack.
    again = await collect_results(gateway.url, session, restored, wait=1, ack=False)
    assert again.calls == results.calls
    await ack_posted(gateway.url, session, restored)
    with pytest.raises(ApiError) as missing:
        await collect_results(gateway.url, session, restored, wait=0)
    assert missing.value.status == 404

    await agent.run(message_history=paused.all_messages(), deferred_tool_results=results)
    assert script.tool_returns(call=1)["call_later"].model_response_str() == '{"Color":["Blue"]}'


async def test_gateway_deadline_resumes_as_timed_out(gateway: Gateway, session: str, tabs: Tabs) -> None:
    script = Scripted([ask_call(COLOR, "call_deadline")])
    agent = paused_agent(script)
    paused = await agent.run("go")
    assert isinstance(paused.output, DeferredToolRequests)
    posted = await post_deferred(gateway.url, session, paused.output, timeout_s=0.3)
    assert posted[0].deadline_ms is not None
    results = await collect_results(gateway.url, session, posted, wait=10)
    assert results.calls == {"call_deadline": TIMED_OUT}
    await agent.run(message_history=paused.all_messages(), deferred_tool_results=results)
    assert script.tool_returns(call=1)["call_deadline"].content == TIMED_OUT


async def test_sync_helpers(gateway: Gateway, session: str, tabs: Tabs) -> None:
    script = Scripted([ask_call(COLOR, "call_sync")])
    agent = paused_agent(script)
    paused = await agent.run("go")
    requests = paused.output
    assert isinstance(requests, DeferredToolRequests)
    posted = await anyio.to_thread.run_sync(lambda: post_deferred_sync(gateway.url, session, requests))
    tab = await tabs(posted[0].viewer_url)

    async def answer() -> None:
        shown = await tab.next_request()
        await tab.answer(shown["id"], [{"header": "Color", "custom_answer": "Green, like the logo"}])

    answering = asyncio.ensure_future(answer())
    results = await anyio.to_thread.run_sync(lambda: collect_results_sync(gateway.url, session, posted, wait=10))
    await asyncio.wait_for(answering, 5)
    assert results.calls == {"call_sync": {"Color": ["Green, like the logo"]}}


async def test_other_deferred_calls_are_left_alone(gateway: Gateway, session: str) -> None:
    from pydantic_ai.messages import ToolCallPart

    requests = DeferredToolRequests(
        calls=[ToolCallPart(tool_name="deploy", args={}, tool_call_id="call_other"), ask_call(COLOR, "call_mine")]
    )
    posted = await post_deferred(gateway.url, session, requests)
    assert [p.id for p in posted] == ["call_mine"]


async def test_extra_top_level_keys_are_ignored_as_from_tool_call_ignores_them(gateway: Gateway, session: str) -> None:
    text = json.dumps({"questions": COLOR, "note": "not a field"})
    requests = DeferredToolRequests(calls=[ask_call(text, "call_extra")])
    posted = await post_deferred(gateway.url, session, requests)
    assert [p.id for p in posted] == ["call_extra"]


async def test_invalid_args_fail_before_posting(gateway: Gateway, session: str) -> None:
    from pydantic import ValidationError

    bad = DeferredToolRequests(calls=[ask_call([{"header": "X", "question": "?", "options": []}], "call_bad")])
    with pytest.raises(ValidationError):
        await post_deferred(gateway.url, session, bad)


class _FailingSecondAck(httpx.AsyncBaseTransport):
    """Passes every call through to the gateway, except the second acknowledgement, which
    fails as a dropped connection would."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.acks = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/ack"):
            self.acks += 1
            if self.acks == 2:
                raise httpx.ConnectError("connection reset", request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_an_ack_that_fails_after_collecting_loses_no_answer(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    script = Scripted([ask_call(COLOR, "call_a"), ask_call(COLOR, "call_b")])
    paused = await paused_agent(script).run("go")
    assert isinstance(paused.output, DeferredToolRequests)
    posted = await post_deferred(gateway.url, session, paused.output)
    tab = await tabs(posted[0].viewer_url)
    for _ in posted:
        shown = await tab.next_request()
        await tab.answer(shown["id"], [{"header": "Color", "selected": ["Red"]}])

    transport = _FailingSecondAck()
    async with httpx.AsyncClient(transport=transport) as client:
        results = await collect_results(gateway.url, session, posted, wait=10, client=client)
    # The first was acknowledged, the second's failed: both answers are returned all the same,
    # and the unacknowledged one can still be collected.
    assert results.calls == {"call_a": {"Color": ["Red"]}, "call_b": {"Color": ["Red"]}}
    assert transport.acks == 2
    again = await collect_results(gateway.url, session, [posted[1]], wait=0)
    assert again.calls == {"call_b": {"Color": ["Red"]}}


class _Watched(httpx.AsyncBaseTransport):
    """Passes every call through to the gateway, counting the calls still in flight."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.in_flight = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.in_flight += 1
        try:
            return await self.inner.handle_async_request(request)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("helper", ["collect_results", "collect_resume"])
async def test_a_collect_that_fails_stops_its_other_long_polls(gateway: Gateway, session: str, helper: str) -> None:
    from askgate.langgraph import collect_resume

    collect = collect_results if helper == "collect_results" else collect_resume
    requests = DeferredToolRequests(calls=[ask_call(COLOR, "call_open")])
    posted = await post_deferred(gateway.url, session, requests)
    transport = _Watched()
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(ApiError) as missing:
            await collect(gateway.url, session, [posted[0], "call_never_posted"], wait=10, client=client)
        assert missing.value.status == 404
        # The long-poll for the open question was cancelled, not left running on its own.
        assert transport.in_flight == 0


_TRANSIENT = [
    httpx.ConnectError("connection refused"),
    httpx.ReadError("connection reset by peer"),
    httpx.RemoteProtocolError("server disconnected without sending a response"),
]


class _Flaky(httpx.AsyncBaseTransport):
    """Fails the first `failures` long-polls as a gateway restart or a proxy reset would, then
    passes every call through to the gateway."""

    def __init__(self, failures: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.failures = failures
        self.polls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.polls += 1
            if self.polls <= self.failures:
                error = _TRANSIENT[(self.polls - 1) % len(_TRANSIENT)]
                raise type(error)(str(error), request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _FlakySync(httpx.BaseTransport):
    """`_Flaky` for the blocking client."""

    def __init__(self, failures: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.failures = failures
        self.polls = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.polls += 1
            if self.polls <= self.failures:
                error = _TRANSIENT[(self.polls - 1) % len(_TRANSIENT)]
                raise type(error)(str(error), request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


async def test_a_long_poll_outlasts_transient_transport_errors(gateway: Gateway, session: str, tabs: Tabs) -> None:
    requests = DeferredToolRequests(calls=[ask_call(COLOR, "call_flaky")])
    posted = await post_deferred(gateway.url, session, requests)
    tab = await tabs(posted[0].viewer_url)
    await tab.next_request()
    await tab.answer("call_flaky", [{"header": "Color", "selected": ["Red"]}])

    transport = _Flaky(failures=3)
    async with httpx.AsyncClient(transport=transport) as client:
        results = await collect_results(gateway.url, session, posted, wait=10, ack=False, client=client)
    assert results.calls == {"call_flaky": {"Color": ["Red"]}}
    assert transport.polls == 4

    sync_transport = _FlakySync(failures=3)
    with httpx.Client(transport=sync_transport) as sync_client:
        results = await anyio.to_thread.run_sync(
            lambda: collect_results_sync(gateway.url, session, posted, wait=10, client=sync_client)
        )
    assert results.calls == {"call_flaky": {"Color": ["Red"]}}
    assert sync_transport.polls == 4


async def test_a_long_poll_that_keeps_failing_gives_up_at_the_deadline(gateway: Gateway, session: str) -> None:
    requests = DeferredToolRequests(calls=[ask_call(COLOR, "call_unreachable")])
    posted = await post_deferred(gateway.url, session, requests)
    transport = _Flaky(failures=1_000_000)
    async with httpx.AsyncClient(transport=transport) as client:
        started = time.monotonic()
        with pytest.raises(httpx.TransportError):
            await collect_results(gateway.url, session, posted, wait=1.0, client=client)
        elapsed = time.monotonic() - started
    assert transport.polls > 1  # retried ...
    # ... until the caller's deadline, and then stops: a loop that ignored it would go on for a
    # million failures. The upper bound is generous so that a busy machine cannot miss it.
    assert 0.9 <= elapsed < 30, elapsed
