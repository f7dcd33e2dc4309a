"""The HTTP API for paused runs (`/v1/sessions/{session}/requests`), sync and async.

A paused run cannot hold a socket, so the host posts each question, long-polls for its
outcome (`?wait_s=N`, at most 60 s a call), and acknowledges it once it has what it needs.
Posting the same id with the same questions again is harmless (200 instead of 201), so a host
that crashed between posting and saving can simply post again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from ._client import Backoff
from ._errors import ApiError, NotAnswered, api_error, field_errors
from ._wire import Outcome, authorization, check_default, check_session_id, follow_ups, http_base, requests_path

MAX_WAIT_S = 60.0
"""The longest long-poll the gateway serves in one call."""

_T = TypeVar("_T")

logger = logging.getLogger("askgate")

_TRANSIENT = (httpx.NetworkError, httpx.RemoteProtocolError, httpx.TimeoutException)
"""Transport errors a long-poll is tried again after: the gateway restarting, or a proxy
resetting the connection. An HTTP error status is an answer, and is never retried."""

_RETRY = Backoff(initial=0.1, max=2.0)
"""The pause before a long-poll is tried again after a transport error."""

_ACK_AFTER_COLLECTING = (
    "askgate: could not acknowledge %s in session %s (%s); the answer was collected and is kept "
    "until its retention runs out: acknowledge it later with ack_posted"
)


@dataclass(frozen=True, kw_only=True)
class PostedRequest:
    """A question posted for a paused run: its request id (the tool call id for pydantic-ai,
    the interrupt id for LangGraph), where people answer it, and its gateway deadline.

    Plain data: keep it with the paused run (`to_json` / `from_json`) and collect later, from
    this process or another."""

    id: str
    viewer_url: str
    deadline_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "viewer_url": self.viewer_url, "deadline_ms": self.deadline_ms}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> PostedRequest:
        deadline_ms = value.get("deadline_ms")
        return cls(
            id=str(value["id"]),
            viewer_url=str(value.get("viewer_url", "")),
            deadline_ms=deadline_ms if isinstance(deadline_ms, int) else None,
        )


def _timeout(read: float) -> httpx.Timeout:
    return httpx.Timeout(10.0, read=read + 15.0)


def _raise_for(response: httpx.Response, session: str) -> None:
    if response.status_code < 400:
        return
    try:
        errors = field_errors(response.json().get("errors"))
    except (ValueError, AttributeError):
        errors = ()
    raise api_error(response.status_code, errors, response.text[:500], session)


def _posted(body: dict[str, Any]) -> PostedRequest:
    deadline_ms = body.get("deadline_ms")
    return PostedRequest(
        id=str(body["id"]),
        viewer_url=str(body.get("viewer_url", "")),
        deadline_ms=deadline_ms if isinstance(deadline_ms, int) else None,
    )


def ask_body(
    *,
    id: str,
    dialect: str | None = None,
    questions: Any = None,
    args: Any = None,
    calls: Any = None,
    fields: Mapping[str, Any] | None = None,
    timeout_s: float | None = None,
    title: str | None = None,
    answerers: Sequence[str] | None = None,
    remind_after_s: float | None = None,
    escalate: Mapping[str, Any] | None = None,
    default: Any = None,
    rules: bool = True,
    callback: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The body of `POST .../requests`: `questions`, a tool call's `args` (text or object), the
    tool `calls` of an `approval` request, or the top-level `fields` of a dialect that has its
    own (`form`: `message`, `schema`, ...; `claude`: `questions`; those that are `None` are
    left out). `remind_after_s` and `escalate` (`{"after_s": N, "to": [...]}`) are checked
    by `follow_ups`. `default` is the answer given should the deadline pass with none (in the
    shape a tab answers in; it needs `timeout_s`). `rules=False` asks every call of an approval
    whatever approvals people had the gateway remember. `callback` has the gateway POST the
    outcome where it says when the request ends (docs/PROTOCOL.md, Callbacks): how a durable
    engine resumes a paused run with no process waiting."""
    check_default(default, timeout_s)
    body: dict[str, Any] = {"id": id}
    if not rules:
        body["rules"] = False
    if dialect is not None:
        body["dialect"] = dialect
    if calls is not None:
        body["calls"] = calls
    elif args is not None:
        body["args"] = args
    elif fields is not None:
        body.update({name: value for name, value in fields.items() if value is not None})
    else:
        body["questions"] = questions
    if timeout_s is not None:
        body["timeout_s"] = timeout_s
    if title is not None:
        body["title"] = title
    if answerers is not None:
        body["answerers"] = list(answerers)
    body.update(follow_ups(remind_after_s, escalate))
    if default is not None:
        body["default"] = default
    if callback is not None:
        body["callback"] = dict(callback)
    return body


class _Plan:
    """When each long-poll should end, given an overall `wait` (None: no limit)."""

    def __init__(self, wait: float | None) -> None:
        if wait is not None and wait < 0:
            raise ValueError(f"wait must be >= 0, got {wait!r}")
        self.deadline = None if wait is None else time.monotonic() + wait

    def next_wait(self) -> float | None:
        """Seconds for the next poll, or None when the overall wait is used up."""
        if self.deadline is None:
            return MAX_WAIT_S
        left = self.deadline - time.monotonic()
        if left <= 0:
            return None
        return min(MAX_WAIT_S, left)

    def retry_pause(self, failures: int) -> float | None:
        """Seconds to pause before trying a poll again after `failures` transport errors in a
        row, or None when the overall wait is used up (the error is then raised)."""
        pause = _RETRY.delay(failures - 1)
        if self.deadline is None:
            return pause
        left = self.deadline - time.monotonic()
        return min(pause, left) if left > 0 else None


def _pause_after(id: str, plan: _Plan, failures: int, error: httpx.TransportError) -> float:
    """The pause before a long-poll of `id` is tried again after `failures` transport errors in
    a row; raises `error` once the plan's wait is used up."""
    pause = plan.retry_pause(failures)
    if pause is None:
        raise error
    # The first failure of a streak is worth a warning; the retries that follow are not.
    logger.log(
        logging.WARNING if failures == 1 else logging.DEBUG,
        "askgate: waiting for request %s failed (%s: %s); retrying",
        id,
        type(error).__name__,
        error,
    )
    return pause


class SyncApi:
    """The HTTP API of one session, with a blocking `httpx.Client`."""

    def __init__(self, url: str, session: str, *, key: str | None = None, client: httpx.Client | None = None) -> None:
        self.base = http_base(url)
        self.session = check_session_id(session)
        self._headers = authorization(key)
        self._client = client

    def _call(self, run: Callable[[httpx.Client], _T]) -> _T:
        if self._client is not None:
            return run(self._client)
        with httpx.Client() as client:
            return run(client)

    def post(self, body: dict[str, Any]) -> PostedRequest:
        def run(client: httpx.Client) -> PostedRequest:
            response = client.post(
                self.base + requests_path(self.session), json=body, headers=self._headers, timeout=_timeout(0)
            )
            _raise_for(response, self.session)
            return _posted(response.json())

        return self._call(run)

    def get(self, id: str, wait_s: float = 0.0) -> Outcome | None:
        """The outcome, or None while pending (after waiting up to `wait_s`)."""

        def run(client: httpx.Client) -> Outcome | None:
            response = client.get(
                self.base + requests_path(self.session, id),
                params={"wait_s": f"{wait_s:.3f}"},
                headers=self._headers,
                timeout=_timeout(wait_s),
            )
            _raise_for(response, self.session)
            return _outcome(response.json(), self.session)

        return self._call(run)

    def wait(self, id: str, plan: _Plan) -> Outcome | None:
        """Long-poll until resolved, or None when the plan's wait is used up. Transport errors
        are retried until then."""
        failures = 0
        while True:
            wait_s = plan.next_wait()
            try:
                outcome = self.get(id, 0.0 if wait_s is None else wait_s)
            except _TRANSIENT as error:
                failures += 1
                time.sleep(_pause_after(id, plan, failures, error))
                continue
            failures = 0
            if outcome is not None or wait_s is None:
                return outcome

    def ack(self, id: str) -> None:
        def run(client: httpx.Client) -> None:
            response = client.post(
                self.base + requests_path(self.session, id) + "/ack", headers=self._headers, timeout=_timeout(0)
            )
            _raise_for(response, self.session)

        self._call(run)

    def ack_all(self, ids: Sequence[str]) -> None:
        """Acknowledge each of `ids` (idempotent), so the gateway forgets their outcomes."""
        for id in ids:
            self.ack(id)

    def ack_collected(self, ids: Sequence[str]) -> None:
        """Acknowledge outcomes already collected, each on its own. A failure is logged, not
        raised: raising would throw away answers the gateway may already have forgotten."""
        for id in ids:
            try:
                self.ack(id)
            except (httpx.HTTPError, ApiError) as error:
                logger.warning(_ACK_AFTER_COLLECTING, id, self.session, error)

    def delete(self, id: str) -> Outcome:
        def run(client: httpx.Client) -> Outcome:
            response = client.delete(
                self.base + requests_path(self.session, id), headers=self._headers, timeout=_timeout(0)
            )
            _raise_for(response, self.session)
            outcome = _outcome(response.json(), self.session)
            assert outcome is not None
            return outcome

        return self._call(run)

    def collect(self, ids: Sequence[str], wait: float | None) -> dict[str, Outcome]:
        plan = _Plan(wait)
        outcomes: dict[str, Outcome] = {}
        for id in ids:
            outcome = self.wait(id, plan)
            if outcome is not None:
                outcomes[id] = outcome
        pending = tuple(id for id in ids if id not in outcomes)
        if pending:
            raise NotAnswered(pending)
        return outcomes


class AsyncApi:
    """The HTTP API of one session, with an `httpx.AsyncClient`."""

    def __init__(
        self, url: str, session: str, *, key: str | None = None, client: httpx.AsyncClient | None = None
    ) -> None:
        self.base = http_base(url)
        self.session = check_session_id(session)
        self._headers = authorization(key)
        self._client = client

    async def _request(self, method: str, path: str, *, read: float = 0.0, **kwargs: Any) -> httpx.Response:
        if self._client is not None:
            response = await self._client.request(
                method, self.base + path, headers=self._headers, timeout=_timeout(read), **kwargs
            )
        else:
            async with httpx.AsyncClient() as client:
                response = await client.request(
                    method, self.base + path, headers=self._headers, timeout=_timeout(read), **kwargs
                )
        _raise_for(response, self.session)
        return response

    async def post(self, body: dict[str, Any]) -> PostedRequest:
        response = await self._request("POST", requests_path(self.session), json=body)
        return _posted(response.json())

    async def get(self, id: str, wait_s: float = 0.0) -> Outcome | None:
        response = await self._request(
            "GET", requests_path(self.session, id), read=wait_s, params={"wait_s": f"{wait_s:.3f}"}
        )
        return _outcome(response.json(), self.session)

    async def wait(self, id: str, plan: _Plan) -> Outcome | None:
        """`SyncApi.wait`."""
        failures = 0
        while True:
            wait_s = plan.next_wait()
            try:
                outcome = await self.get(id, 0.0 if wait_s is None else wait_s)
            except _TRANSIENT as error:
                failures += 1
                await asyncio.sleep(_pause_after(id, plan, failures, error))
                continue
            failures = 0
            if outcome is not None or wait_s is None:
                return outcome

    async def ack(self, id: str) -> None:
        await self._request("POST", requests_path(self.session, id) + "/ack")

    async def ack_all(self, ids: Sequence[str]) -> None:
        """Acknowledge each of `ids` (idempotent), so the gateway forgets their outcomes."""
        for id in ids:
            await self.ack(id)

    async def ack_collected(self, ids: Sequence[str]) -> None:
        """`SyncApi.ack_collected`: each acknowledged on its own, a failure logged, not raised."""
        for id in ids:
            try:
                await self.ack(id)
            except (httpx.HTTPError, ApiError) as error:
                logger.warning(_ACK_AFTER_COLLECTING, id, self.session, error)

    async def delete(self, id: str) -> Outcome:
        response = await self._request("DELETE", requests_path(self.session, id))
        outcome = _outcome(response.json(), self.session)
        assert outcome is not None
        return outcome

    async def collect(self, ids: Sequence[str], wait: float | None) -> dict[str, Outcome]:
        plan = _Plan(wait)
        polls = [asyncio.ensure_future(self.wait(id, plan)) for id in ids]
        try:
            found = await asyncio.gather(*polls)
        except BaseException:
            # `gather` leaves the other polls running: stop them before the caller closes the
            # HTTP client under them.
            for poll in polls:
                poll.cancel()
            await asyncio.gather(*polls, return_exceptions=True)
            raise
        outcomes = {id: outcome for id, outcome in zip(ids, found, strict=True) if outcome is not None}
        pending = tuple(id for id in ids if id not in outcomes)
        if pending:
            raise NotAnswered(pending)
        return outcomes


def request_ids(posted: Sequence[PostedRequest | str]) -> list[str]:
    """The request ids of posted requests (or of ids already)."""
    return [p.id if isinstance(p, PostedRequest) else str(p) for p in posted]


def _outcome(body: dict[str, Any], session: str) -> Outcome | None:
    if body.get("state") != "resolved":
        return None
    return Outcome.from_json(body, session=session)
