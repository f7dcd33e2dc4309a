"""`Client.ask` refuses what it cannot send before anything is queued, so one bad ask cannot
stall or close the connection every other ask shares; acks and failed withdrawals are sent
again."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from gateway import Gateway
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
    client._withdrawing[("s", "r1")] = _client._Withdrawal(accepted=True, since=0.0)
    client._withdrawing[("s", "r2")] = _client._Withdrawal(accepted=False, since=0.0)
    client._receive('{"type":"error","code":"store_failed","message":"could not store"}')
    frame = await asyncio.wait_for(conn.queue.get(), 5)
    assert frame == {"type": "cancel", "session": "s", "id": "r1"}
    # Only withdrawals the gateway accepted are cancelled; the other waits for `accepted`.
    assert conn.queue.empty()
