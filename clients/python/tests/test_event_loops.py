"""Several event loops: a `Client` serves one at a time and refuses a second while the first
still has its connection; a `GatewayAnswerer` keeps one `Client` per loop, so threads that each
run their own loop (`agent.run_sync` in a thread pool) can share it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest
from gateway import Gateway
from pydantic_ai import Agent
from pydantic_ai_harness import AskUser
from scripted import Scripted, ask_call
from tab import Tab

from askgate import Client, ClientClosed, GatewayAnswerer, Outcome

pytestmark = pytest.mark.anyio

Tabs = Callable[[str], Awaitable[Tab]]

PICK = [{"header": "Pick", "question": "Pick one", "options": [{"label": "A"}, {"label": "B"}]}]

_T = TypeVar("_T")


async def within(seconds: float, coroutine: Coroutine[Any, Any, _T]) -> _T:
    """`coroutine`, given up after `seconds`: a thread running it always ends."""
    return await asyncio.wait_for(coroutine, seconds)


def in_new_loop(seconds: float, make: Callable[[], Coroutine[Any, Any, _T]]) -> Awaitable[_T]:
    """Run `make()` with `asyncio.run` in a thread of its own (a second event loop)."""
    return asyncio.to_thread(lambda: asyncio.run(within(seconds, make())))


async def test_a_client_refuses_a_second_loop_while_the_first_has_its_connection(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    client = Client(gateway.url)
    try:
        tab = await tabs(gateway.viewer_url(session))
        first = asyncio.ensure_future(in_new_loop(15, lambda: client.ask(session, PICK, id="loop-a")))
        assert (await tab.next_request())["id"] == "loop-a"

        with pytest.raises(RuntimeError, match="one Client per event loop"):
            await in_new_loop(5, lambda: client.ask(session, PICK, id="loop-b"))

        # The refusal took nothing from the first loop: its answer still arrives.
        await tab.answer("loop-a", [{"header": "Pick", "selected": ["B"]}])
        outcome = await asyncio.wait_for(first, 15)
        assert (outcome.outcome, outcome.model_text) == ("answered", '{"Pick":["B"]}')

        # That loop has ended (asyncio.run closed it): the client starts over on this one.
        again = asyncio.ensure_future(client.ask(session, PICK, id="loop-c"))
        assert (await tab.next_request())["id"] == "loop-c"
        await tab.answer("loop-c", [{"header": "Pick", "selected": ["A"]}])
        assert (await asyncio.wait_for(again, 15)).model_text == '{"Pick":["A"]}'
    finally:
        await client.aclose()


async def test_an_answerer_is_shared_by_threads_that_run_their_own_loops(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    answerer = GatewayAnswerer(gateway.url, session)
    tab = await tabs(gateway.viewer_url(session))
    scripts = {n: Scripted([ask_call(PICK, f"call-{n}")]) for n in ("1", "2")}
    loops: list[asyncio.AbstractEventLoop] = []
    failures: list[BaseException] = []

    def run(script: Scripted) -> None:
        try:
            # pydantic-ai's run_sync runs the agent on this thread's own event loop.
            Agent(script.model, capabilities=[AskUser(answerer=answerer, timeout=10)]).run_sync("go")
            loops.append(asyncio.get_event_loop())
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(script,)) for script in scripts.values()]
    for thread in threads:
        thread.start()
    try:
        shown = [await tab.next_request(), await tab.next_request()]
        for request, label in zip(shown, ("A", "B"), strict=True):
            await tab.answer(request["id"], [{"header": "Pick", "selected": [label]}])
        for thread in threads:
            await asyncio.to_thread(thread.join, 15)
        assert not any(thread.is_alive() for thread in threads)
        assert not failures
        returns = sorted(str(s.tool_returns()[f"call-{n}"].content) for n, s in scripts.items())
        assert returns == ["{'Pick': ['A']}", "{'Pick': ['B']}"]

        # Each thread's loop had its own client; closing the answerer here closes them all,
        # though their threads are gone and their loops idle.
        clients = list(answerer._clients.values())
        assert len(clients) == 2 and len(loops) == 2
        assert all(client._task is not None and not client._task.done() for client in clients)
    finally:
        await answerer.aclose()
        for loop in loops:
            loop.close()
    assert all(client._task is None and not client.connected for client in clients)


async def test_closing_an_answerer_closes_the_client_of_a_loop_running_in_another_thread(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    answerer = GatewayAnswerer(gateway.url, session)
    tab = await tabs(gateway.viewer_url(session))

    async def ask() -> Outcome:
        return await answerer.client.ask(session, PICK, id="elsewhere")

    asking = asyncio.ensure_future(in_new_loop(15, ask))
    assert (await tab.next_request())["id"] == "elsewhere"
    await answerer.aclose()
    with pytest.raises(ClientClosed):
        await asyncio.wait_for(asking, 15)


async def test_an_answerer_lets_go_of_the_client_of_a_thread_that_ended(gateway: Gateway, session: str) -> None:
    # A worker thread that ran the agent on a loop of its own (as run_sync does) and then
    # retired: its loop is never closed, so only the thread's end says nothing will run it again.
    answerer = GatewayAnswerer(gateway.url, session)
    loops: list[asyncio.AbstractEventLoop] = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        loops.append(loop)
        loop.run_until_complete(within(15, answerer.open()))

    thread = threading.Thread(target=run)
    thread.start()
    await asyncio.to_thread(thread.join, 15)
    assert not thread.is_alive()
    (ended,) = answerer._clients.values()
    assert ended._task is not None and not ended._task.done()
    try:
        # The first use on another loop lets the ended thread's client go, and closes it.
        await answerer.open()
        assert list(answerer._clients) == [asyncio.get_running_loop()]
        async with asyncio.timeout(10):
            while ended._task is not None or ended.connected:
                await asyncio.sleep(0.01)
    finally:
        await answerer.aclose()
        # Closed means the ended thread's loop is no longer being run to close its client.
        assert not any(loop.is_running() for loop in loops)
        for loop in loops:
            loop.close()
