"""askgate for pydantic-ai-harness's `AskUser`: a live answerer, and helpers for paused runs.

Needs `pydantic-ai-harness` (`pip install 'askgate[pydantic-ai]'`).
"""

from __future__ import annotations

import asyncio
import math
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, cast

import anyio
import httpx
from pydantic_ai import DeferredToolRequests, DeferredToolResults
from pydantic_ai_harness.ask_user import (
    DECLINED,
    TIMED_OUT,
    TOOL_NAME,
    AskUserAnswer,
    AskUserRequest,
    AskUserResponse,
)

from ._client import Client
from ._errors import AskgateError, ClientClosed, RequestWithdrawn
from ._http import AsyncApi, PostedRequest, SyncApi, ask_body, request_ids
from ._wire import Outcome, agent_url, check_session_id

__all__ = [
    "GatewayAnswerer",
    "PostedRequest",
    "ack_posted",
    "ack_posted_sync",
    "collect_results",
    "collect_results_sync",
    "first_options",
    "gateway_timeout",
    "post_deferred",
    "post_deferred_sync",
    "response_from_json",
    "response_from_outcome",
    "result_from_outcome",
]

DIALECT = "harness"

_MARGIN_SHARE = 0.1
_MARGIN_MAX_S = 1.0


def gateway_timeout(harness_remaining: float | None, cap: float | None) -> tuple[float | None, bool]:
    """The deadline to give the gateway, in seconds from now, and whether it is the harness's.

    With a harness deadline `harness_remaining` seconds away, the gateway's deadline is a little
    earlier (10 % of the time left, at most 1 s), so an answer the gateway accepts always
    reaches the answerer before the harness gives up, and a question the gateway times out is
    one the harness is about to time out too. `cap` (the answerer's own `timeout`) bounds it
    further; when the cap is the shorter of the two the deadline is not the harness's.
    """
    from_harness: float | None = None
    if harness_remaining is not None and math.isfinite(harness_remaining):
        margin = min(_MARGIN_MAX_S, max(harness_remaining, 0.0) * _MARGIN_SHARE)
        from_harness = max(harness_remaining - margin, 0.001)
    if cap is not None and (from_harness is None or cap < from_harness):
        return cap, False
    return from_harness, from_harness is not None


def response_from_json(response: Mapping[str, Any]) -> AskUserResponse:
    """The `AskUserResponse` a harness `response` object describes
    (`{"answers": [{"header", "selected"} | {"header", "custom_answer"}], "cancelled": bool}`)."""
    answers: list[AskUserAnswer] = []
    items: list[Mapping[str, Any]] = list(response.get("answers") or ())
    for answer in items:
        custom = answer.get("custom_answer")
        selected: list[str] = list(answer.get("selected") or ())
        answers.append(
            AskUserAnswer(
                header=str(answer["header"]),
                selected=tuple(selected),
                custom_answer=custom if isinstance(custom, str) else None,
            )
        )
    return AskUserResponse(answers=tuple(answers), cancelled=bool(response.get("cancelled", False)))


def response_from_outcome(outcome: Outcome) -> AskUserResponse:
    """The `AskUserResponse` for an answered or declined outcome.

    `answered`: the tab's answers, in its order, with `selected` tuples or `custom_answer`.
    `declined` and `timed_out`: `AskUserResponse(cancelled=True)`. `withdrawn`: raises
    `RequestWithdrawn` (nobody answered; the asker or an operator withdrew it).
    """
    if outcome.outcome == "answered":
        response: Any = outcome.response
        if not isinstance(response, Mapping):
            raise AskgateError(f"answered outcome without a response object: {response!r}")
        return response_from_json(cast(Mapping[str, Any], response))
    if outcome.outcome in ("declined", "timed_out"):
        return AskUserResponse(cancelled=True)
    raise RequestWithdrawn(outcome.session, outcome.id)


def result_from_outcome(outcome: Outcome) -> dict[str, list[str]] | str:
    """The `ask_user_question` tool result for an outcome, to put in `DeferredToolResults.calls`:
    what `ask_user_result` returns for the answer (the gateway's `result`), `DECLINED` for a
    decline, `TIMED_OUT` when the gateway deadline passed. `withdrawn` raises `RequestWithdrawn`.
    """
    if outcome.outcome == "answered":
        value: Any = outcome.result
        if not isinstance(value, Mapping):
            raise AskgateError(f"answered outcome without a result object: {value!r}")
        result = cast(Mapping[str, list[Any]], value)
        return {str(header): [str(label) for label in labels] for header, labels in result.items()}
    if outcome.outcome == "declined":
        return DECLINED
    if outcome.outcome == "timed_out":
        return TIMED_OUT
    raise RequestWithdrawn(outcome.session, outcome.id)


def first_options(request: AskUserRequest) -> dict[str, Any]:
    """A `GatewayAnswerer` `default`: the first option of every question (harnesses put the
    recommended one first)."""
    return {
        "answers": [
            {"header": question.header, "selected": [question.options[0].label]} for question in request.questions
        ]
    }


class GatewayAnswerer:
    """An `Answerer` for `pydantic_ai_harness.AskUser` that puts each question to people through
    an askgate gateway and returns their answer.

    ```python
    answerer = GatewayAnswerer("http://127.0.0.1:8080", session="thread-42")
    print("answer at", await answerer.open())
    agent = Agent(model, capabilities=[AskUser(answerer=answerer, timeout=600)])
    ```

    Each `AskUserRequest` goes over the agent WebSocket with the request's `id` as the request id
    and its questions as `model_dump(mode="json")`. One answerer holds one connection per event
    loop, shared by every concurrent ask on that loop; it reconnects on its own and re-sends what
    is still waiting, so an answer given while the connection was down is not lost.

    **Event loops.** Each event loop that uses the answerer gets its own `Client`, so threads
    that each run their own loop (`agent.run_sync` in a thread pool) may share one answerer.
    `aclose()` closes them all: one whose loop is running in another thread is closed there, one
    whose loop is idle in a live thread when that loop next runs, one whose thread has ended at
    once. A `client` passed in is used on every loop instead, and serves one loop at a time (see
    `Client`).

    **Timeouts.** Give the deadline to `AskUser(timeout=...)`. The answerer reads it from the
    harness (`anyio.current_effective_deadline()`, the cancel scope the harness waits in) and
    gives the gateway a deadline slightly earlier (10 % of the time left, at most 1 s), so the
    tab shows the countdown and stops taking answers just before the harness gives up. When the
    gateway reports `timed_out`, the answerer keeps waiting until the harness cancels it, so the
    model reads `TIMED_OUT`, as with any answerer that runs out of time. When the harness cancels
    the answerer (its timeout, or the run was cancelled), the request is withdrawn from the tabs.

    **Defaults.** `default`, given the `AskUserRequest`, returns the answer the gateway gives if
    nobody answers before its deadline (`{"answers": [{"header": ..., "selected": [...]}]}`, as
    a tab answers; `None` for none), for example the first option of every question
    (`first_options`). The model then reads that answer, not `TIMED_OUT`. It needs a deadline.

    `timeout` here is only a cap for the gateway's deadline, for runs whose `AskUser` has none.
    When that cap ends the question first, the harness is not timing out and an answerer can
    only report a cancelled response, so the model reads `DECLINED`.

    Other outcomes: an answer becomes an `AskUserResponse` with `selected` tuples or a
    `custom_answer`; a decline is `AskUserResponse(cancelled=True)` (the model reads
    `DECLINED`); a request withdrawn by someone else raises `RequestWithdrawn`, and a rejected
    ask raises `AskRejected`, either of which fails the run.
    """

    def __init__(
        self,
        url: str,
        session: str | None = None,
        *,
        key: str | None = None,
        title: str | None = None,
        timeout: float | None = None,
        client: Client | None = None,
        default: Callable[[AskUserRequest], dict[str, Any] | None] | None = None,
    ) -> None:
        if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a positive number of seconds, or None, got {timeout!r}")
        agent_url(url)  # a malformed URL fails here, not at the first question
        self.url = url
        self._session = check_session_id(session) if session is not None else "s-" + secrets.token_hex(8)
        self.title = title
        self.timeout = timeout
        self.default = default
        self._key = key
        self._given = client
        self._clients: dict[asyncio.AbstractEventLoop, Client] = {}
        self._threads: dict[asyncio.AbstractEventLoop, threading.Thread] = {}
        """The thread each loop in `_clients` was first used in."""
        self._closing: set[asyncio.Task[None]] = set()
        """Closings of clients whose thread has ended, kept until done."""
        self._lock = threading.Lock()
        self._closed = False
        self._viewer_url: str | None = None

    @property
    def client(self) -> Client:
        """The `askgate.Client` serving the running event loop (made on its first use there), or
        the `client` passed in."""
        return self._client_here()

    def _client_here(self) -> Client:
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.get(loop)
            if client is None:
                if self._closed:
                    raise ClientClosed("the GatewayAnswerer was closed")
                self._forget_ended_loops()
                client = self._clients[loop] = Client(self.url, key=self._key)
                self._threads[loop] = threading.current_thread()
            return client

    def _forget_ended_loops(self) -> None:
        """Lets go of the clients of loops that will not run again: one `asyncio.run` closed
        (it stopped the connection), or one whose thread has ended (a worker thread retired
        after `run_sync`: its loop is never closed, and its socket would stay open). Called
        with the lock held, on a running loop, which closes the latter."""
        for ended in [old for old in self._clients if old.is_closed() or not self._threads[old].is_alive()]:
            client = self._clients.pop(ended)
            del self._threads[ended]
            if not ended.is_closed():
                closing = asyncio.get_running_loop().create_task(client.aclose())
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)

    def _all_clients(self) -> list[Client]:
        if self._given is not None:
            return [self._given]
        with self._lock:
            return list(self._clients.values())

    @property
    def session(self) -> str:
        """The session every question is asked in (a generated `s-...` one if none was given)."""
        return self._session

    @property
    def viewer_url(self) -> str | None:
        """The link people answer at, once known (after `open()` or the first accepted ask)."""
        if self._viewer_url is None:
            for client in self._all_clients():
                self._viewer_url = client.viewer_url(self._session)
                if self._viewer_url is not None:
                    break
        return self._viewer_url

    async def open(self, *, timeout: float | None = 30.0) -> str:
        """Connect, open the session, and return the link people answer at. Raises
        `TimeoutError` when the gateway cannot be reached within `timeout` seconds."""
        self._viewer_url = (await self._client_here().open(self._session, timeout=timeout)).viewer_url
        return self._viewer_url

    async def aclose(self) -> None:
        """Close every connection (questions still waiting fail with `ClientClosed`; they stay
        open on the gateway)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._closed = True
            letting_go = [closing for closing in self._closing if closing.get_loop() is loop]
        for client in self._all_clients():
            await client.aclose()
        # A retired thread's client let go earlier may still be closing, its loop run by a
        # worker thread: done before this returns, so nothing of this answerer runs afterwards.
        await asyncio.gather(*letting_go, return_exceptions=True)

    async def __aenter__(self) -> GatewayAnswerer:
        try:
            await self.open()
        except BaseException:
            # `__aexit__` does not run for a failed `__aenter__`: without this, the client
            # would go on reconnecting for ever.
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def __call__(self, request: AskUserRequest, /) -> AskUserResponse:
        """Ask `request` through the gateway and return the person's response."""
        deadline = anyio.current_effective_deadline()
        remaining = deadline - anyio.current_time() if math.isfinite(deadline) else None
        timeout_s, harness_deadline = gateway_timeout(remaining, self.timeout)
        default = self.default(request) if self.default is not None and timeout_s is not None else None
        outcome = await self._client_here().ask(
            self._session,
            [question.model_dump(mode="json") for question in request.questions],
            id=request.id,
            dialect=DIALECT,
            timeout_s=timeout_s,
            title=self.title,
            default=default,
        )
        if outcome.outcome == "timed_out" and harness_deadline:
            # The harness's own timeout is moments away: wait for it, so the model reads
            # TIMED_OUT. (If the deadline was an outer scope's, that scope ends the run.)
            await anyio.sleep(max(deadline - anyio.current_time(), 0.0) + 5.0)
        return response_from_outcome(outcome)


# ---- paused runs -------------------------------------------------------------------------


def _ask_user_calls(requests: DeferredToolRequests) -> list[tuple[str, Any]]:
    calls: list[tuple[str, Any]] = []
    for call in requests.calls:
        if call.tool_name != TOOL_NAME:
            continue
        # Fail here, not at the gateway, for a call the host could not answer anyway.
        AskUserRequest.from_tool_call(call)
        calls.append((call.tool_call_id, call.args if call.args is not None else {}))
    return calls


async def post_deferred(
    url: str,
    session: str,
    requests: DeferredToolRequests,
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    client: httpx.AsyncClient | None = None,
) -> list[PostedRequest]:
    """Post every `ask_user_question` call of a paused run to the gateway's HTTP API.

    The request id is the tool call id and the body carries the call's args as the model sent
    them (JSON text or an object), so posting again after a crash is harmless. Calls to other
    tools are left to the host. `timeout_s` gives the questions a gateway deadline (resumed as
    `TIMED_OUT`); a paused run has none by default. Returns one `PostedRequest` per call, in
    order; show their `viewer_url` to the person.
    """
    calls = _ask_user_calls(requests)
    if client is None:
        async with httpx.AsyncClient() as own:
            api = AsyncApi(url, session, key=key, client=own)
            return [await api.post(_body(id, args, title, timeout_s)) for id, args in calls]
    api = AsyncApi(url, session, key=key, client=client)
    return [await api.post(_body(id, args, title, timeout_s)) for id, args in calls]


def post_deferred_sync(
    url: str,
    session: str,
    requests: DeferredToolRequests,
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    client: httpx.Client | None = None,
) -> list[PostedRequest]:
    """`post_deferred`, blocking."""
    calls = _ask_user_calls(requests)
    if client is None:
        with httpx.Client() as own:
            api = SyncApi(url, session, key=key, client=own)
            return [api.post(_body(id, args, title, timeout_s)) for id, args in calls]
    api = SyncApi(url, session, key=key, client=client)
    return [api.post(_body(id, args, title, timeout_s)) for id, args in calls]


def _body(id: str, args: Any, title: str | None, timeout_s: float | None) -> dict[str, Any]:
    return ask_body(id=id, dialect=DIALECT, args=args, title=title, timeout_s=timeout_s)


async def collect_results(
    url: str,
    session: str,
    posted: Sequence[PostedRequest | str],
    *,
    key: str | None = None,
    wait: float | None = None,
    ack: bool = True,
    client: httpx.AsyncClient | None = None,
) -> DeferredToolResults:
    """Wait until every posted question is resolved and return the `DeferredToolResults` to
    resume the run with: under each tool call id, what `ask_user_result` gives for the answer,
    `DECLINED` for a decline, `TIMED_OUT` when the gateway deadline passed.

    Long-polls the gateway (at most 60 s a call). `wait` bounds the whole wait in seconds
    (`None`: no bound); when it runs out, `NotAnswered` is raised and nothing is acknowledged,
    so the host may simply collect again later. With `ack=True` (the default) the outcomes are
    acknowledged before returning, and the gateway forgets them (an acknowledgement that fails
    is logged, not raised: the answers are returned all the same); pass `ack=False` to
    acknowledge with `ack_posted` only after the resumed run is safely stored.
    A withdrawn request raises `RequestWithdrawn`. A long-poll cut by a transport error (the
    gateway restarting, a proxy resetting the connection) is tried again until `wait` runs out,
    then the error is raised; an HTTP error status (`ApiError`) is raised at once, after the
    other questions' long-polls are stopped.
    """
    ids = request_ids(posted)
    if client is None:
        async with httpx.AsyncClient() as own:
            return await collect_results(url, session, ids, key=key, wait=wait, ack=ack, client=own)
    api = AsyncApi(url, session, key=key, client=client)
    outcomes = await api.collect(ids, wait)
    results = DeferredToolResults(calls={id: result_from_outcome(outcomes[id]) for id in ids})
    if ack:
        await api.ack_collected(ids)
    return results


def collect_results_sync(
    url: str,
    session: str,
    posted: Sequence[PostedRequest | str],
    *,
    key: str | None = None,
    wait: float | None = None,
    ack: bool = True,
    client: httpx.Client | None = None,
) -> DeferredToolResults:
    """`collect_results`, blocking (it polls the questions one after another)."""
    ids = request_ids(posted)
    if client is None:
        with httpx.Client() as own:
            return collect_results_sync(url, session, ids, key=key, wait=wait, ack=ack, client=own)
    api = SyncApi(url, session, key=key, client=client)
    outcomes = api.collect(ids, wait)
    results = DeferredToolResults(calls={id: result_from_outcome(outcomes[id]) for id in ids})
    if ack:
        api.ack_collected(ids)
    return results


async def ack_posted(
    url: str,
    session: str,
    posted: Sequence[PostedRequest | str],
    *,
    key: str | None = None,
    client: httpx.AsyncClient | None = None,
) -> None:
    """Acknowledge collected outcomes, so the gateway forgets them (idempotent)."""
    if client is None:
        async with httpx.AsyncClient() as own:
            return await ack_posted(url, session, posted, key=key, client=own)
    api = AsyncApi(url, session, key=key, client=client)
    await api.ack_all(request_ids(posted))


def ack_posted_sync(
    url: str,
    session: str,
    posted: Sequence[PostedRequest | str],
    *,
    key: str | None = None,
    client: httpx.Client | None = None,
) -> None:
    """`ack_posted`, blocking."""
    if client is None:
        with httpx.Client() as own:
            return ack_posted_sync(url, session, posted, key=key, client=own)
    api = SyncApi(url, session, key=key, client=client)
    api.ack_all(request_ids(posted))
