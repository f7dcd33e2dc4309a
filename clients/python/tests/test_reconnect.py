"""The client's connection: reconnects, re-sends, never loses an outcome, stops on a bad key."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest
from gateway import Gateway, free_port
from pydantic_ai import DeferredToolRequests
from pydantic_ai_harness.ask_user import AskUserAnswer, AskUserRequest, AskUserResponse
from scripted import ask_call
from tab import Tab

from askgate import Client, ClientClosed, GatewayAnswerer, GatewayClosed, collect_results, post_deferred

pytestmark = pytest.mark.anyio

Tabs = Callable[[str], Awaitable[Tab]]

PICK = [{"header": "Pick", "question": "Pick one", "options": [{"label": "A"}, {"label": "B"}]}]


def pick_request(id: str) -> AskUserRequest:
    return AskUserRequest(questions=AskUserRequest.from_tool_call(ask_call(PICK, "x")).questions, id=id)


def picked(label: str) -> AskUserResponse:
    return AskUserResponse(answers=(AskUserAnswer(header="Pick", selected=(label,)),))


class Proxy:
    """A TCP proxy in front of the gateway that can be cut (connections dropped without a close
    frame, new ones refused) and restored on the same port."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").rsplit(":", 1)
        self.target = (host, int(port))
        self.port = 0
        self.server: asyncio.Server | None = None
        self.links: set[asyncio.StreamWriter] = set()
        self.accepted = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._link, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.close()
        for writer in list(self.links):
            writer.transport.abort()
        self.links.clear()
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.links |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self.links -= {writer, up_writer}


@pytest.fixture
async def proxy(gateway: Gateway) -> AsyncIterator[Proxy]:
    p = Proxy(gateway.url)
    await p.start()
    yield p
    await p.cut()


async def test_outcome_given_while_the_agent_is_away_is_delivered(
    gateway: Gateway, proxy: Proxy, session: str, tabs: Tabs
) -> None:
    answerer = GatewayAnswerer(proxy.url, session)
    try:
        viewer = gateway.viewer_url(session)
        tab = await tabs(viewer)  # the tab talks to the gateway directly
        asking = asyncio.ensure_future(answerer(pick_request("away-1")))
        shown = await tab.next_request()
        assert shown["id"] == "away-1"

        await proxy.cut()  # the agent's connection drops; reconnects are refused for now
        for _ in range(200):
            if not answerer.client.connected:
                break
            await asyncio.sleep(0.01)
        assert not answerer.client.connected
        assert (await tab.answer("away-1", [{"header": "Pick", "selected": ["B"]}]))["outcome"] == "answered"
        await asyncio.sleep(0.3)
        assert not asking.done()

        await proxy.start()  # the client comes back, re-asks, and gets the stored outcome
        assert await asyncio.wait_for(asking, 15) == picked("B")
        # ... and acknowledged it: the gateway forgets the request.
        async with httpx.AsyncClient() as http:
            for _ in range(100):
                status = (await http.get(f"{gateway.url}/v1/sessions/{session}/requests/away-1", timeout=5)).status_code
                if status == 404:
                    break
                await asyncio.sleep(0.05)
        assert status == 404
        # Later asks use the new connection.
        again = asyncio.ensure_future(answerer(pick_request("away-2")))
        shown = await tab.next_request()
        await tab.answer(shown["id"], [{"header": "Pick", "selected": ["A"]}])
        assert await asyncio.wait_for(again, 10) == picked("A")
    finally:
        await answerer.aclose()


async def test_ask_made_while_disconnected_is_sent_on_reconnect(
    gateway: Gateway, proxy: Proxy, session: str, tabs: Tabs
) -> None:
    await proxy.cut()
    answerer = GatewayAnswerer(proxy.url, session)
    try:
        asking = asyncio.ensure_future(answerer(pick_request("late-1")))
        await asyncio.sleep(0.3)  # a few refused connection attempts
        await proxy.start()
        tab = await tabs(gateway.viewer_url(session))
        shown = await tab.next_request()
        assert shown["id"] == "late-1"
        await tab.answer("late-1", [{"header": "Pick", "selected": ["A"]}])
        assert await asyncio.wait_for(asking, 10) == picked("A")
    finally:
        await answerer.aclose()


async def test_withdrawal_while_disconnected_is_sent_on_reconnect(
    gateway: Gateway, proxy: Proxy, session: str, tabs: Tabs
) -> None:
    answerer = GatewayAnswerer(proxy.url, session)
    try:
        tab = await tabs(gateway.viewer_url(session))
        asking = asyncio.ensure_future(answerer(pick_request("wd-1")))
        await tab.next_request()
        for _ in range(100):  # wait for `accepted`
            if answerer.client._asks.get((session, "wd-1")) and answerer.client._asks[(session, "wd-1")].accepted:
                break
            await asyncio.sleep(0.01)
        await proxy.cut()
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        await asyncio.sleep(0.2)
        await proxy.start()
        resolved = await tab.wait_resolved("wd-1")
        assert resolved["outcome"] == "withdrawn"
        for _ in range(200):
            if not answerer.client._withdrawing and not answerer.client._unacked:
                break
            await asyncio.sleep(0.02)
        assert not answerer.client._withdrawing and not answerer.client._unacked
    finally:
        await answerer.aclose()


@pytest.fixture
def durable_gateway(tmp_path: Path) -> Iterator[Gateway]:
    gw = Gateway(tmp_path / "durable", store="embedded").start()
    try:
        yield gw
    finally:
        gw.stop()


async def test_gateway_restart_keeps_the_question_and_delivers_the_answer(
    durable_gateway: Gateway, session: str
) -> None:
    gw = durable_gateway
    answerer = GatewayAnswerer(gw.url, session)
    tab: Tab | None = None
    try:
        viewer = await answerer.open()
        tab = await Tab.connect(viewer)
        asking = asyncio.ensure_future(answerer(pick_request("restart-1")))
        await tab.next_request()
        await tab.close()
        await asyncio.to_thread(gw.stop)  # SIGTERM: sockets close with 1001, going away
        await asyncio.to_thread(gw.start)  # same port, same data directory
        tab = await Tab.connect(viewer)
        shown = await tab.next_request()
        assert shown["id"] == "restart-1"
        await tab.answer("restart-1", [{"header": "Pick", "selected": ["B"]}])
        assert await asyncio.wait_for(asking, 15) == picked("B")
    finally:
        if tab is not None:
            await tab.close()
        await answerer.aclose()


@pytest.fixture
def keyed_gateway(tmp_path: Path) -> Iterator[Gateway]:
    gw = Gateway(tmp_path / "keyed", extra=["--agent-key", "right-key"]).start()
    try:
        yield gw
    finally:
        gw.stop()


async def test_wrong_key_fails_instead_of_reconnecting(keyed_gateway: Gateway, session: str) -> None:
    answerer = GatewayAnswerer(keyed_gateway.url, session, key="wrong-key")
    try:
        with pytest.raises(GatewayClosed) as closed:
            await asyncio.wait_for(answerer(pick_request("k-1")), 10)
        assert closed.value.code == 4401
        with pytest.raises(GatewayClosed):
            await answerer(pick_request("k-2"))
    finally:
        await answerer.aclose()


async def test_right_key_works(keyed_gateway: Gateway, session: str) -> None:
    async with GatewayAnswerer(keyed_gateway.url, session, key="right-key") as answerer:
        assert answerer.viewer_url is not None
        tab = await Tab.connect(answerer.viewer_url)
        try:
            asking = asyncio.ensure_future(answerer(pick_request("k-3")))
            shown = await tab.next_request()
            await tab.answer(shown["id"], [{"header": "Pick", "selected": ["A"]}])
            assert await asyncio.wait_for(asking, 10) == picked("A")
        finally:
            await tab.close()


async def test_client_asks_in_several_sessions(gateway: Gateway, tabs: Tabs) -> None:
    async with Client(gateway.url) as client:
        await client.wait_connected(10)
        assert client.connected
        first, second = await client.open("multi-a"), await client.open(None)
        assert second.session.startswith("s-")
        tab_a, tab_b = await tabs(first.viewer_url), await tabs(second.viewer_url)
        a = asyncio.ensure_future(client.ask("multi-a", PICK, id="same-id", timeout_s=30))
        b = asyncio.ensure_future(client.ask(second.session, PICK, id="same-id", title="second"))
        shown_a, shown_b = await tab_a.next_request(), await tab_b.next_request()
        assert shown_a["deadline_ms"] is not None and shown_b["title"] == "second"
        await tab_b.decline("same-id")
        await tab_a.answer("same-id", [{"header": "Pick", "selected": ["B"]}])
        outcome_a, outcome_b = await asyncio.wait_for(asyncio.gather(a, b), 10)
    assert (outcome_a.outcome, outcome_a.model_text, outcome_a.session) == ("answered", '{"Pick":["B"]}', "multi-a")
    assert outcome_b.outcome == "declined" and outcome_b.by is not None


def test_answerer_survives_a_new_event_loop(gateway: Gateway, session: str) -> None:
    """`asyncio.run` twice (as scripts calling `agent.run_sync` in fresh loops do)."""
    answerer = GatewayAnswerer(gateway.url, session)

    async def exchange(id: str, label: str) -> AskUserResponse:
        viewer = await answerer.open()
        tab = await Tab.connect(viewer)
        try:
            asking = asyncio.ensure_future(answerer(pick_request(id)))
            shown = await tab.next_request()
            await tab.answer(shown["id"], [{"header": "Pick", "selected": [label]}])
            return await asyncio.wait_for(asking, 10)
        finally:
            await tab.close()

    assert asyncio.run(exchange("loop-1", "A")) == picked("A")
    assert asyncio.run(exchange("loop-2", "B")) == picked("B")
    asyncio.run(answerer.aclose())


async def test_open_times_out_when_no_gateway_listens() -> None:
    answerer = GatewayAnswerer(f"http://127.0.0.1:{free_port()}", "nobody")
    try:
        with pytest.raises(TimeoutError):
            await answerer.open(timeout=0.5)
        assert not answerer.client.connected
    finally:
        await answerer.aclose()


async def test_a_failed_async_with_leaves_no_connection_task(session: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    answerer = GatewayAnswerer(url, session)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            async with answerer:
                pytest.fail("nothing listens, so the answerer cannot have opened")
    # Without `__aexit__`, only `__aenter__` can have stopped the client that kept reconnecting.
    reconnecting = [t for t in asyncio.all_tasks() if t.get_name() == f"askgate client {Client(url).url}"]
    assert reconnecting == []


class _Announcing(httpx.AsyncBaseTransport):
    """Passes every call through, and says when a long-poll has been sent."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.polling = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            self.polling.set()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_paused_run_collects_its_answer_across_a_gateway_crash(durable_gateway: Gateway, session: str) -> None:
    gw = durable_gateway
    posted = await post_deferred(gw.url, session, DeferredToolRequests(calls=[ask_call(PICK, "call-crash")]))
    transport = _Announcing()
    async with httpx.AsyncClient(transport=transport) as client:
        collecting = asyncio.ensure_future(collect_results(gw.url, session, posted, wait=30, client=client))
        try:
            await asyncio.wait_for(transport.polling.wait(), 10)
            await asyncio.to_thread(gw.kill)  # the long-poll's connection is reset
            await asyncio.to_thread(gw.start)  # same port, same data directory
            tab = await Tab.connect(posted[0].viewer_url)
            try:
                shown = await tab.next_request()
                await tab.answer(shown["id"], [{"header": "Pick", "selected": ["B"]}])
            finally:
                await tab.close()
            results = await asyncio.wait_for(collecting, 15)
        finally:
            collecting.cancel()
    assert results.calls == {"call-crash": {"Pick": ["B"]}}


async def test_aclose_leaves_asks_open_for_a_later_ask_of_the_same_id(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    """What the README says of `aclose()`: it withdraws nothing."""
    tab = await tabs(gateway.viewer_url(session))
    first = Client(gateway.url)
    asking = asyncio.ensure_future(first.ask(session, PICK, id="kept"))
    assert (await tab.next_request())["id"] == "kept"
    await first.aclose()
    with pytest.raises(ClientClosed):
        await asyncio.wait_for(asking, 10)
    assert (await tab.answer("kept", [{"header": "Pick", "selected": ["A"]}]))["outcome"] == "answered"
    async with Client(gateway.url) as second:
        outcome = await asyncio.wait_for(second.ask(session, PICK, id="kept"), 10)
    assert (outcome.outcome, outcome.model_text) == ("answered", '{"Pick":["A"]}')
