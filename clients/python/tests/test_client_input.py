"""`Client.ask` refuses what it cannot send before anything is queued, so one bad ask cannot
stall or close the connection every other ask shares; acks and failed withdrawals are sent
again."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from gateway import Gateway, free_port
from tab import Tab

import askgate
from askgate import _client

pytestmark = pytest.mark.anyio

QUESTIONS = [{"header": "Pick", "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]


async def answered_after(client: askgate.Client, tab: Tab, session: str, id: str) -> None:
    """The client still works: an ask reaches the tab and its answer comes back."""
    asking = asyncio.ensure_future(client.ask(session, QUESTIONS, id=id))
    shown = await tab.next_request()
    assert shown["id"] == id
    await tab.answer(id, {"answers": [{"header": "Pick", "selected": ["B"]}]})
    outcome = await asyncio.wait_for(asking, 15)
    assert outcome.outcome == "answered"


@pytest.mark.parametrize(
    ("questions", "timeout_s", "message"),
    [
        ([{"header": "x", "options": {1, 2}}], None, "cannot be sent as JSON"),
        ([{"header": float("nan")}], None, "cannot be sent as JSON"),
        (QUESTIONS, math.inf, "timeout_s"),
        (QUESTIONS, math.nan, "timeout_s"),
        ([{"header": "x", "question": "y" * 1_100_000}], None, "max_frame_bytes"),
    ],
)
async def test_an_ask_that_cannot_be_sent_is_refused_and_the_client_goes_on(
    gateway: Gateway, session: str, questions: Any, timeout_s: float | None, message: str
) -> None:
    async with askgate.Client(gateway.url) as client:
        viewer = (await client.open(session)).viewer_url
        tab = await Tab.connect(viewer)
        try:
            with pytest.raises(ValueError, match=message):
                await asyncio.wait_for(client.ask(session, questions, id="bad", timeout_s=timeout_s), 5)
            await answered_after(client, tab, session, "good")
        finally:
            await tab.close()


def test_an_infinite_answerer_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout"):
        askgate.GatewayAnswerer("http://127.0.0.1:9", timeout=math.inf)


async def test_acks_written_lately_are_sent_again_after_a_reconnect() -> None:
    client = askgate.Client("http://127.0.0.1:9")
    client._loop = asyncio.get_running_loop()
    client._recent_acks.append(("s", "r1"))
    conn = _client._Connection()
    client._replay(conn)
    assert conn.queue.get_nowait() == {"type": "ack", "session": "s", "id": "r1"}


async def test_a_withdrawal_the_store_failed_on_is_sent_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_client, "_STORE_RETRY_S", 0.0)
    client = askgate.Client("http://127.0.0.1:9")
    client._loop = asyncio.get_running_loop()
    conn = _client._Connection()
    client._conn = conn
    client._withdrawing[("s", "r1")] = _client._Withdrawal(accepted=True)
    client._withdrawing[("s", "r2")] = _client._Withdrawal(accepted=False)
    client._receive('{"type":"error","code":"store_failed","message":"could not store"}')
    frame = await asyncio.wait_for(conn.queue.get(), 5)
    assert frame == {"type": "cancel", "session": "s", "id": "r1"}
    # Only withdrawals the gateway accepted are cancelled; the other waits for `accepted`.
    assert conn.queue.empty()


class _Later:
    """Stands in for the client's event loop, its clock `ahead` seconds on."""

    def __init__(self, loop: asyncio.AbstractEventLoop, ahead: float) -> None:
        self.loop = loop
        self.ahead = ahead

    def time(self) -> float:
        return self.loop.time() + self.ahead


def withdrawn(session: str, id: str) -> str:
    return json.dumps(
        {"type": "outcome", "session": session, "id": id, "outcome": "withdrawn", "response": None,
         "result": None, "model_text": None, "by": None, "at_ms": 1}
    )


async def cancelled_after_accepted(client: askgate.Client, session: str, id: str) -> None:
    """An ask the gateway accepted, then cancelled while no connection is up."""
    asking = asyncio.ensure_future(client.ask(session, QUESTIONS, id=id))
    await asyncio.sleep(0)  # let it queue its ask
    client._receive(json.dumps({"type": "accepted", "session": session, "id": id, "deadline_ms": None}))
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking


async def test_a_withdrawal_is_sent_until_the_gateway_confirms_it_however_long_offline() -> None:
    client = askgate.Client(f"http://127.0.0.1:{free_port()}")
    try:
        await cancelled_after_accepted(client, "s", "r1")
        loop = client._loop
        assert loop is not None
        # A day offline: the next connection still withdraws it (on a durable gateway the
        # question would otherwise stay open for ever).
        client._loop = _Later(loop, 86_400.0)  # type: ignore[assignment]
        conn = _client._Connection()
        try:
            client._replay(conn)
        finally:
            client._loop = loop
        frames = [conn.queue.get_nowait() for _ in range(conn.queue.qsize())]
        assert {"type": "cancel", "session": "s", "id": "r1"} in frames
        # Its outcome confirms it: only then is it forgotten.
        client._receive(withdrawn("s", "r1"))
        assert not client._withdrawing
    finally:
        await client.aclose()


async def test_past_the_bound_the_oldest_withdrawal_is_forgotten_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_client, "_WITHDRAWALS_KEPT", 2)
    client = askgate.Client(f"http://127.0.0.1:{free_port()}")
    try:
        for id in ("r1", "r2", "r3"):
            await cancelled_after_accepted(client, "s", id)
        assert list(client._withdrawing) == [("s", "r2"), ("s", "r3")]
        assert "forgetting the oldest, request 'r1'" in caplog.text
    finally:
        await client.aclose()


async def test_a_withdrawal_of_a_request_the_gateway_never_got_is_dropped(gateway: Gateway, session: str) -> None:
    # An ask cancelled before it reached the gateway leaves a withdrawal that the gateway
    # answers `not_found`, naming the request: the client drops it rather than re-send it for ever.
    async with askgate.Client(gateway.url) as client:
        await client.open(session)
        client._withdraw((session, "never-asked"), accepted=True)
        async with asyncio.timeout(10):
            while client._withdrawing:
                await asyncio.sleep(0.01)


async def test_a_re_ask_of_an_acked_id_goes_after_its_ack_until_accepted() -> None:
    # The ack of the first outcome may have been lost with its socket: were the re-ask sent
    # first, the gateway would answer it with the outcome the ack was for.
    client = askgate.Client(f"http://127.0.0.1:{free_port()}")
    try:
        client._recent_acks.append(("s", "r"))
        asking = asyncio.ensure_future(client.ask("s", QUESTIONS, id="r"))
        await asyncio.sleep(0)  # let it queue its ask

        def replayed() -> list[tuple[str, str]]:
            conn = _client._Connection()
            client._replay(conn)
            frames = [conn.queue.get_nowait() for _ in range(conn.queue.qsize())]
            return [(frame["type"], frame["id"]) for frame in frames]

        assert replayed() == [("ack", "r"), ("ask", "r")]
        # Accepted after that ack: the gateway took both, and an ack now would forget the new
        # request's outcome.
        client._receive(json.dumps({"type": "accepted", "session": "s", "id": "r", "deadline_ms": None}))
        assert replayed() == [("ask", "r")]
        asking.cancel()
    finally:
        await client.aclose()
