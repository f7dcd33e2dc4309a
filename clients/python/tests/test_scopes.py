"""A key bound to a session prefix (`--agent-key KEY:PREFIX`) on a session outside it: every
call ends at once with `Forbidden`, and nothing refused is sent again, since the same key is
refused every time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from gateway import Gateway

from askgate import ApiError, AskRejected, Client, Forbidden, Opened, _client, collect_results
from askgate._http import AsyncApi, SyncApi, ask_body

pytestmark = pytest.mark.anyio

QUESTIONS = [{"header": "Pick", "question": "Which?", "options": [{"label": "A"}, {"label": "B"}]}]

OUTSIDE = "team-b-1"


@pytest.fixture(scope="module")
def scoped_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway whose one key, `ka`, acts only on sessions starting `team-a-`."""
    gw = Gateway(tmp_path_factory.mktemp("scoped"), extra=["--agent-key", "ka:team-a-"]).start()
    try:
        yield gw
    finally:
        gw.stop()


def assert_forbidden(error: BaseException) -> None:
    assert isinstance(error, Forbidden), repr(error)
    assert error.session == OUTSIDE, repr(error)
    assert '"team-a-"' in error.message, "names the key's prefix: " + repr(error)
    assert "(forbidden)" in str(error), str(error)


def replayed(client: Client) -> list[dict[str, Any]]:
    """What the client would send on its next connection."""
    conn = _client._Connection()
    client._replay(conn)
    return [conn.queue.get_nowait() for _ in range(conn.queue.qsize())]


async def test_an_open_outside_the_keys_scope_is_forbidden(scoped_gateway: Gateway) -> None:
    async with Client(scoped_gateway.url, key="ka") as client:
        # Its refusal names no session: it must answer that open, not the ones around it.
        before, refused, after = await asyncio.wait_for(
            asyncio.gather(
                client.open("team-a-1"), client.open(OUTSIDE), client.open("team-a-2"), return_exceptions=True
            ),
            10,
        )
        assert isinstance(before, Opened) and before.session == "team-a-1", before
        assert isinstance(refused, BaseException), refused
        assert_forbidden(refused)
        assert isinstance(after, Opened) and after.session == "team-a-2", after
        assert {"type": "open", "session": OUTSIDE} not in replayed(client)


async def test_an_ask_outside_the_keys_scope_is_forbidden(scoped_gateway: Gateway) -> None:
    async with Client(scoped_gateway.url, key="ka") as client:
        with pytest.raises(AskRejected) as rejected:
            await asyncio.wait_for(client.ask(OUTSIDE, QUESTIONS, id="r"), 10)
        assert_forbidden(rejected.value)
        assert [(e.path, e.code) for e in rejected.value.errors] == [("session", "forbidden")]
        assert not any(frame.get("session") == OUTSIDE for frame in replayed(client))


async def test_a_refused_withdrawal_or_ack_is_not_sent_again(
    scoped_gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    async with Client(scoped_gateway.url, key="ka") as client:
        await asyncio.wait_for(client.open("team-a-1"), 10)
        client._withdraw((OUTSIDE, "w"), accepted=True)
        client._ack((OUTSIDE, "a"))
        async with asyncio.timeout(10):
            while any(frame.get("session") == OUTSIDE for frame in replayed(client)):
                await asyncio.sleep(0.01)
        assert "refused to withdraw request 'w' in session 'team-b-1' (forbidden)" in caplog.text
        assert "refused to acknowledge request 'a' in session 'team-b-1' (forbidden)" in caplog.text


async def test_http_calls_outside_the_keys_scope_are_forbidden(scoped_gateway: Gateway) -> None:
    body = ask_body(id="r", questions=QUESTIONS)
    api = AsyncApi(scoped_gateway.url, OUTSIDE, key="ka")
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: api.post(body),
        lambda: api.get("r"),
        lambda: api.delete("r"),
        lambda: api.ack("r"),
        lambda: collect_results(scoped_gateway.url, OUTSIDE, ["r"], key="ka", wait=5),
    ]
    for call in calls:
        with pytest.raises(ApiError) as refused:
            await asyncio.wait_for(call(), 10)
        assert refused.value.status == 403
        assert_forbidden(refused.value)
    sync = SyncApi(scoped_gateway.url, OUTSIDE, key="ka")
    for sync_call in (lambda: sync.post(body), lambda: sync.get("r"), lambda: sync.delete("r"), lambda: sync.ack("r")):
        with pytest.raises(ApiError) as refused:
            await asyncio.to_thread(sync_call)
        assert refused.value.status == 403
        assert_forbidden(refused.value)
