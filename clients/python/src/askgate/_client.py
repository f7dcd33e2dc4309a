"""`Client`: the agent side of the gateway over one WebSocket that survives drops.

One background task owns the socket. Callers never write to it directly: they change the
client's ledger (asks in flight, withdrawals, acks to send) and queue a frame for the current
connection, all without awaiting, so a caller that is being cancelled can still withdraw. After
every reconnect the ledger is replayed: sessions are re-opened, asks still waiting are re-sent
with the same id (the gateway answers `accepted` again, or with the outcome given while the
agent was away), withdrawals and unsent acks are sent again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import math
import random
import secrets
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, cast

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus, InvalidURI

from ._errors import AskgateError, ClientClosed, Forbidden, GatewayClosed, field_errors, rejection
from ._wire import Opened, Outcome, agent_url, authorization, check_default, check_request_id, check_session_id, follow_ups

logger = logging.getLogger("askgate")

_Key = tuple[str, str]

# Close codes after which reconnecting helps (askgate's `close::should_reconnect`).
_RECONNECT_CODES = frozenset({1000, 1001, 1006, 1011, 1012, 1013, 4408, 4429})

_WITHDRAWALS_KEPT = 10_000
"""The most withdrawals kept waiting for their outcome (the gateway's confirmation); they are
sent again after every reconnect, however long the client was offline. Past this many the
oldest is forgotten, with a warning: its request stays open on the gateway until its deadline,
or until it is withdrawn over HTTP (`DELETE /v1/sessions/{session}/requests/{id}`)."""

DEFAULT_MAX_FRAME_BYTES = 1024 * 1024
"""The largest `ask` frame sent: the gateway's default `--max-agent-frame-bytes`. A larger ask
is refused here, instead of the gateway closing the whole connection with 4413."""

_RESENT_DEADLINE_BYTES = 16
"""Room left in a frame for its `timeout_s` to be written longer when it is sent again."""

_RECENT_ACKS = 256
"""Acks written lately, sent again after a reconnect: one written just before the socket
dropped may never have arrived (acks are idempotent)."""

_STORE_RETRY_S = 1.0
"""The wait before withdrawals are sent again after the gateway's store failed on one."""

_FOREIGN_CLOSE_S = 10.0
"""How long `aclose` waits for a client's connection to close on an event loop running in
another thread."""


def encode(frame: dict[str, Any]) -> str:
    """A frame as the JSON text sent. `ValueError` for what JSON cannot carry (NaN, infinity,
    objects that are not JSON data), so it is refused before it is queued."""
    try:
        return json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"the ask cannot be sent as JSON: {error}") from None


def is_fatal_close(code: int) -> bool:
    """Whether a close code means reconnecting cannot help: askgate's 44xx codes other than
    "too slow" (4408) and "too many frames" (4429), and the codes for a broken protocol."""
    if code in _RECONNECT_CODES:
        return False
    return code in (1002, 1003, 1007, 1008, 1009, 1010) or 4000 <= code < 5000


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """The reconnect schedule: attempt `n` waits about `initial × factorⁿ`, at most `max`, less
    a random share of up to `jitter` of it. It starts over once a connection hears from the
    gateway."""

    initial: float = 0.1
    max: float = 5.0
    factor: float = 2.0
    jitter: float = 0.5

    def ceiling(self, attempt: int) -> float:
        """The wait before attempt `attempt` (0 first), without jitter."""
        top = max(self.max, self.initial)
        return min(top, self.initial * max(self.factor, 1.0) ** min(attempt, 64))

    def delay(self, attempt: int) -> float:
        """The wait before attempt `attempt`, jitter included."""
        jitter = min(max(self.jitter, 0.0), 1.0)
        return self.ceiling(attempt) * (1.0 - jitter * random.random())


@dataclass(kw_only=True)
class _Ask:
    session: str
    id: str
    dialect: str | None
    questions: Any
    title: str | None
    answerers: Sequence[str] | None = None
    follow_ups: dict[str, Any] = field(default_factory=dict)
    """`remind_after_s` and `escalate`, checked (see `_wire.follow_ups`)."""
    default: Any = None
    """The answer given should the deadline pass with none."""
    rules: bool = True
    """`False`: no remembered approval answers it."""
    callback: Mapping[str, Any] | None = None
    """Where the gateway POSTs the outcome when the request ends."""
    deadline: float | None
    """Loop time of the gateway deadline; re-sends ask for what is left of it."""
    future: asyncio.Future[Outcome]
    accepted: bool = False
    deadline_ms: int | None = None
    ack_first: bool = False
    """An ask of an id whose earlier outcome was acked, not yet accepted: that ack may have been
    lost with its socket, and the gateway would answer this ask with the old outcome. Each
    reconnect sends the ack again before the ask, until `accepted` shows the gateway took both."""

    def frame(self, now: float) -> dict[str, Any]:
        # An `approval` request carries tool calls where the other dialects carry questions.
        body = "calls" if self.dialect == "approval" else "questions"
        frame: dict[str, Any] = {"type": "ask", "session": self.session, "id": self.id, body: self.questions}
        if self.dialect is not None:
            frame["dialect"] = self.dialect
        if self.deadline is not None:
            frame["timeout_s"] = round(max(self.deadline - now, 0.001), 3)
        if self.title is not None:
            frame["title"] = self.title
        if self.answerers is not None:
            frame["answerers"] = list(self.answerers)
        frame.update(self.follow_ups)
        if not self.rules:
            frame["rules"] = False
        if self.default is not None:
            frame["default"] = self.default
        if self.callback is not None:
            frame["callback"] = dict(self.callback)
        return frame


@dataclass(kw_only=True)
class _Withdrawal:
    accepted: bool


@dataclass(kw_only=True)
class _Connection:
    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=lambda: asyncio.Queue[dict[str, Any]]())
    opens: collections.deque[str] = field(default_factory=collections.deque)
    """The sessions of the `open` frames written on this connection and not yet answered, oldest
    first. The gateway answers opens in order, and its refusal of one names no session: it is
    the oldest's."""


class Client:
    """The agent side of an askgate gateway: one WebSocket carrying any number of sessions and
    concurrent asks, reconnecting on its own.

    ```python
    async with askgate.Client("http://127.0.0.1:8080") as client:
        opened = await client.open("thread-42")
        print("answer at", opened.viewer_url)
        outcome = await client.ask("thread-42", questions, timeout_s=600)
        print(outcome.outcome, outcome.model_text)
    ```

    Guarantees:

    - **Idempotent re-sends.** Every ask has its id before it is first sent; after a reconnect
      each ask still waiting is sent again with the same id.
    - **Exactly-once hand-back.** An outcome reaches its caller once, however often the gateway
      sends it, and every outcome received is acknowledged (`ack`).
    - **Cancellation withdraws.** Cancelling `ask` sends `cancel` (after the gateway accepted
      the ask, or after the next reconnect if the socket is down); the outcome that comes back
      is acknowledged.
    - **Fatal closes stop the client.** A wrong key (4401), a malformed or too large frame
      (4400/4413), or an upgrade refused with an HTTP client error fail every ask in flight with
      `GatewayClosed` instead of reconnecting forever.
    - **Scope refusals end the call.** A session outside the agent key's scope
      (`--agent-key KEY:PREFIX`) fails `open` and `ask` with `Forbidden` at once; a withdrawal
      or ack the gateway refuses as `forbidden` is logged and not sent again.

    The client belongs to one event loop at a time. Used from a new loop once the old one has
    ended (a second `asyncio.run`), it starts over there; asks left on the old loop are
    dropped. Used from a second loop while the first still runs its connection (two threads,
    each with its own loop), it raises `RuntimeError`: use one client per event loop
    (`GatewayAnswerer` keeps one per loop on its own).
    """

    def __init__(
        self,
        url: str,
        *,
        key: str | None = None,
        backoff: Backoff = Backoff(),
        connect_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    ) -> None:
        self.url = agent_url(url)
        self._max_frame_bytes = max_frame_bytes
        self._headers = authorization(key)
        self._backoff = backoff
        self._connect_timeout = connect_timeout
        self._ping_interval = ping_interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        """The thread `_loop` was first used in: once it has ended, nothing runs that loop."""
        self._lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._conn: _Connection | None = None
        self._connected: asyncio.Event | None = None
        self._reset()
        self._closed = False

    def _reset(self) -> None:
        retry = getattr(self, "_store_retry", None)
        if retry is not None:
            retry.cancel()
        self._asks: dict[_Key, _Ask] = {}
        self._withdrawing: dict[_Key, _Withdrawal] = {}
        """Oldest first, so the oldest is the one forgotten past `_WITHDRAWALS_KEPT`."""
        self._unacked: set[_Key] = set()
        self._recent_acks: collections.deque[_Key] = collections.deque(maxlen=_RECENT_ACKS)
        self._store_retry: asyncio.TimerHandle | None = None
        self._sessions: dict[str, None] = {}
        self._opens: dict[str, list[asyncio.Future[Opened]]] = {}
        self._viewer_urls: dict[str, str] = {}
        self._fatal: AskgateError | None = None
        self._conn = None
        self._task = None
        self._connected = None

    # ---- public API -------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether a connection to the gateway is up right now."""
        return self._conn is not None

    def viewer_url(self, session: str) -> str | None:
        """The link people answer `session` at, once the gateway has told it (after `open`,
        or after an ask in the session was accepted)."""
        return self._viewer_urls.get(session)

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until a connection is up (starting the client if needed)."""
        self._start()
        assert self._connected is not None
        async with asyncio.timeout(timeout):
            while self._conn is None:
                self._raise_if_dead()
                await self._connected.wait()

    async def open(self, session: str | None = None, *, timeout: float | None = None) -> Opened:
        """Open `session` (a generated one if `None`) and return its viewer link. The session
        is opened again after every reconnect, so its tabs see the agent online. `timeout`
        bounds the wait (`TimeoutError`), e.g. for a gateway that is not running. Raises
        `Forbidden` when the agent key may not act on the session, and `AskgateError` when the
        gateway refuses the open otherwise (it holds the most sessions it allows)."""
        session = check_session_id(session) if session is not None else "s-" + secrets.token_hex(8)
        self._start()
        assert self._loop is not None
        future: asyncio.Future[Opened] = self._loop.create_future()
        self._opens.setdefault(session, []).append(future)
        self._sessions[session] = None
        self._send({"type": "open", "session": session})
        try:
            async with asyncio.timeout(timeout):
                return await future
        finally:
            waiters = self._opens.get(session, [])
            if future in waiters:
                waiters.remove(future)

    async def ask(
        self,
        session: str,
        questions: Any,
        *,
        id: str | None = None,
        dialect: str | None = None,
        timeout_s: float | None = None,
        title: str | None = None,
        answerers: Sequence[str] | None = None,
        remind_after_s: float | None = None,
        escalate: Mapping[str, Any] | None = None,
        default: Any = None,
        rules: bool = True,
        callback: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """Ask `questions` in `session` and wait for the outcome. With `dialect="approval"`,
        `questions` is the list of tool calls to approve, sent as the ask's `calls`.

        `id` defaults to a fresh uuid4 hex; re-asking a known id with the same questions is
        idempotent. `answerers` (people's names, or `group:NAME`) limits who may answer; the
        outcome's `user` says who did. `remind_after_s` tells the same people again that long
        after the ask if it is still open; `escalate` (`{"after_s": N, "to": [...]}`) then adds
        those people and groups to the answerers and tells them (each once). `timeout_s` is the gateway's deadline, counted from now (re-sends ask for
        what is left of it). `default` is the answer given if nobody answers by then, in the shape
        a tab answers in (harness `{"answers": [...]}`, approval `{"decisions": [...]}`, form
        `{"action": "accept", "content": {...}}` or `{"action": "decline"}`): the outcome is then
        that answer, with `by` and `via` `"default"`; it needs `timeout_s`. An approval a
        remembered rule answers comes back at once with `via` `"rule"` and `by` `"rule:{id}"`;
        `rules=False` has every call asked. `callback` (`{"url": ..., "secret": "whsec_..."}`, or
        `"format": "langgraph-server"` with `thread_id` and `assistant_id`) has the gateway
        POST the outcome there when the request ends, as well (docs/PROTOCOL.md, Callbacks). Raises `AskRejected` when the gateway refuses the ask (as
        `Forbidden` too when the agent key may not act on the session), and
        `ValueError` at once for an ask that cannot be sent: questions that are not JSON data,
        or a frame larger than `max_frame_bytes`. Cancelling the call withdraws the request.
        """
        check_session_id(session)
        id = check_request_id(id) if id is not None else uuid.uuid4().hex
        follow_up_fields = follow_ups(remind_after_s, escalate)
        check_default(default, timeout_s)
        if timeout_s is not None and not (timeout_s > 0 and math.isfinite(timeout_s)):
            raise ValueError(f"timeout_s must be a positive number of seconds, or None, got {timeout_s!r}")
        self._start()
        assert self._loop is not None
        key = (session, id)
        if key in self._asks:
            raise ValueError(f"request {id!r} in session {session!r} is already being asked by this client")
        now = self._loop.time()
        ask = _Ask(
            session=session,
            id=id,
            dialect=dialect,
            questions=questions,
            title=title,
            answerers=answerers,
            follow_ups=follow_up_fields,
            default=default,
            rules=rules,
            callback=callback,
            deadline=None if timeout_s is None else now + timeout_s,
            future=self._loop.create_future(),
            ack_first=key in self._unacked or key in self._recent_acks,
        )
        size = len(encode(ask.frame(now)).encode())
        if size + _RESENT_DEADLINE_BYTES > self._max_frame_bytes:
            raise ValueError(
                f"the ask is {size} bytes as JSON; the gateway takes frames up to "
                f"{self._max_frame_bytes} bytes (max_frame_bytes)"
            )
        self._asks[key] = ask
        self._withdrawing.pop(key, None)
        self._send(ask.frame(now))
        try:
            return await ask.future
        except BaseException:
            # Cancelled (or failed): if the ask is still ours, withdraw it without awaiting, so
            # this works inside a cancelled scope too.
            if self._asks.get(key) is ask:
                del self._asks[key]
                if self._fatal is None and not self._closed:
                    self._withdraw(key, accepted=ask.accepted)
            raise

    async def aclose(self) -> None:
        """Close the connection; asks in flight fail with `ClientClosed`.

        Closing withdraws nothing: asks still in flight stay open on the gateway, and a later
        `ask` of the same id (from any client) collects their outcome. To withdraw them,
        cancel those `ask` calls and let them finish first; a withdrawal not yet sent when the
        client closes (while disconnected, or before the gateway accepted the ask) is lost.

        Called from another event loop than the client's: a loop that is running (in another
        thread) closes the connection there; one that is not running closes it when it runs
        again, or here, once the thread that ran it has ended."""
        self._closed = True
        loop = asyncio.get_running_loop()
        home, thread = self._loop, self._thread
        if home is None or home is loop:
            await self._shutdown()
        elif home.is_closed():
            self._reset()  # nothing on a closed loop runs again, or can be woken
        elif thread is not None and thread.is_alive():
            # Only the thread running that loop may touch what runs on it.
            try:
                closing = asyncio.run_coroutine_threadsafe(self._shutdown(), home)
            except RuntimeError:  # closed meanwhile
                self._reset()
                return
            if home.is_running():
                done, _ = await asyncio.wait({asyncio.wrap_future(closing)}, timeout=_FOREIGN_CLOSE_S)
                if not done:
                    logger.warning(
                        "askgate: the connection on the event loop of thread %s did not close within %s s",
                        thread.name,
                        _FOREIGN_CLOSE_S,
                    )
        else:
            # The thread is gone, so nothing else runs that loop: run it here until the
            # connection is closed, rather than leave the socket open until garbage collection.
            await asyncio.to_thread(self._shutdown_on, home)

    def _shutdown_on(self, home: asyncio.AbstractEventLoop) -> None:
        if home.is_running() or home.is_closed():
            self._reset()
            return
        home.run_until_complete(self._shutdown())

    async def _shutdown(self) -> None:
        if self._store_retry is not None:
            self._store_retry.cancel()
            self._store_retry = None
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._fail(ClientClosed("the askgate client was closed"))

    async def __aenter__(self) -> Client:
        self._start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # ---- the ledger ---------------------------------------------------------------------

    def _raise_if_dead(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._closed:
            raise ClientClosed("the askgate client was closed")

    def _start(self) -> None:
        self._raise_if_dead()
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._loop is not loop:
                if self._loop is not None:
                    if self._serving_elsewhere():
                        raise RuntimeError(
                            "this askgate.Client is in use on another event loop (in thread "
                            f"{self._thread.name if self._thread else '?'}), which still runs its "
                            "connection; a Client serves one event loop at a time: use one Client "
                            "per event loop (a GatewayAnswerer made without `client=` keeps one per loop)"
                        )
                    logger.debug("askgate client moved to a new event loop; starting over")
                    self._reset()
                self._loop = loop
                self._thread = threading.current_thread()
            if self._task is None or self._task.done():
                self._connected = asyncio.Event()
                self._task = loop.create_task(self._run(), name=f"askgate client {self.url}")

    def _serving_elsewhere(self) -> bool:
        """Whether the connection task of the client's loop may still run: handing the ledger
        to another loop then would let it touch the new loop's state from its thread. A loop
        that is closed, or whose thread has ended, runs nothing again."""
        home, task, thread = self._loop, self._task, self._thread
        return (
            home is not None
            and not home.is_closed()
            and task is not None
            and not task.done()
            and (thread is None or thread.is_alive())
        )

    def _withdraw(self, key: _Key, *, accepted: bool) -> None:
        """Withdraw `key`, now if the gateway accepted it, else once it does; the withdrawal
        is kept until its outcome arrives, and sent again after every reconnect."""
        self._withdrawing.pop(key, None)
        while len(self._withdrawing) >= _WITHDRAWALS_KEPT:
            old = next(iter(self._withdrawing))
            del self._withdrawing[old]
            logger.warning(
                "askgate: more than %d withdrawals await the gateway's confirmation; forgetting the "
                "oldest, request %r in session %r: it stays open on the gateway until its deadline",
                _WITHDRAWALS_KEPT,
                old[1],
                old[0],
            )
        self._withdrawing[key] = _Withdrawal(accepted=accepted)
        if accepted:
            self._send({"type": "cancel", "session": key[0], "id": key[1]})

    def _send(self, frame: dict[str, Any]) -> None:
        """Queue a frame on the current connection; without one, the replay after the next
        connect carries what matters."""
        if self._conn is not None:
            self._conn.queue.put_nowait(frame)

    def _ack(self, key: _Key) -> None:
        self._unacked.add(key)
        self._send({"type": "ack", "session": key[0], "id": key[1]})

    def _replay(self, conn: _Connection) -> None:
        assert self._loop is not None
        now = self._loop.time()
        # Acks first, so that a re-ask of an acked id asks anew instead of getting the outcome
        # the ack was for; but not the ack of an id whose re-ask the gateway has accepted
        # since, which would forget the new request's outcome.
        for session, id in self._unacked | set(self._recent_acks):
            ask = self._asks.get((session, id))
            if ask is None or ask.ack_first:
                conn.queue.put_nowait({"type": "ack", "session": session, "id": id})
        for session in self._sessions:
            conn.queue.put_nowait({"type": "open", "session": session})
        for ask in self._asks.values():
            conn.queue.put_nowait(ask.frame(now))
        for session, id in self._withdrawing:
            conn.queue.put_nowait({"type": "cancel", "session": session, "id": id})

    def _fail(self, error: AskgateError) -> None:
        asks, self._asks = self._asks, {}
        for ask in asks.values():
            if not ask.future.done():
                ask.future.set_exception(error)
                ask.future.exception()  # mark retrieved: the caller may be gone
        opens, self._opens = self._opens, {}
        for waiters in opens.values():
            for future in waiters:
                if not future.done():
                    future.set_exception(error)
                    future.exception()
        if self._connected is not None:
            self._connected.set()  # wake wait_connected, which raises

    def _receive(self, text: str | bytes) -> None:
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            logger.warning("askgate: ignoring a frame that is not JSON: %.200r", text)
            return
        if not isinstance(parsed, dict):
            return
        frame = cast(dict[str, Any], parsed)
        kind = frame.get("type")
        session, id = frame.get("session"), frame.get("id")
        key = (session, id) if isinstance(session, str) and isinstance(id, str) else None
        if kind == "outcome" and key is not None:
            try:
                outcome = Outcome.from_json(frame)
            except ValueError:
                logger.warning("askgate: ignoring a malformed outcome: %.200r", frame)
                return
            self._ack(key)
            ask = self._asks.pop(key, None)
            if ask is not None:
                if not ask.future.done():
                    ask.future.set_result(outcome)
            else:
                self._withdrawing.pop(key, None)
        elif kind == "accepted" and key is not None:
            viewer_url = frame.get("viewer_url")
            if isinstance(viewer_url, str):
                self._viewer_urls[key[0]] = viewer_url
            ask = self._asks.get(key)
            if ask is not None:
                ask.accepted = True
                ask.ack_first = False
                deadline_ms = frame.get("deadline_ms")
                ask.deadline_ms = deadline_ms if isinstance(deadline_ms, int) else None
            withdrawal = self._withdrawing.get(key)
            if withdrawal is not None and not withdrawal.accepted:
                withdrawal.accepted = True
                self._send({"type": "cancel", "session": key[0], "id": key[1]})
        elif kind == "rejected" and isinstance(session, str):
            errors = field_errors(frame.get("errors"))
            if key is None:
                logger.warning("askgate: an ask without an id was rejected: %s", errors)
                return
            self._withdrawing.pop(key, None)
            ask = self._asks.pop(key, None)
            if ask is not None and not ask.future.done():
                ask.future.set_exception(rejection(key[0], key[1], errors))
        elif kind == "opened" and isinstance(session, str):
            viewer_url = frame.get("viewer_url")
            if not isinstance(viewer_url, str):
                return
            self._viewer_urls[session] = viewer_url
            if self._conn is not None and session in self._conn.opens:
                self._conn.opens.remove(session)
            for future in self._opens.pop(session, []):
                if not future.done():
                    future.set_result(Opened(session=session, viewer_url=viewer_url))
        elif kind == "error":
            code, message = frame.get("code"), frame.get("message")
            message = message if isinstance(message, str) else ""
            if code in ("unavailable", "bad_session", "forbidden") and session is None:
                self._refuse_open(code, message)
            elif code == "forbidden" and key is not None:
                self._forbidden(key, message)
            elif code == "not_found" and key is not None and key in self._withdrawing:
                # A withdrawal of a request the gateway does not hold (the ask never reached it,
                # or it was forgotten): nothing is left to withdraw.
                logger.debug("askgate: nothing to withdraw for request %r in session %r", key[1], key[0])
                del self._withdrawing[key]
            elif code == "store_failed":
                # A withdrawal the gateway could not store: the request is still open. Older
                # gateways do not say which, and cancels are idempotent: send them all again.
                logger.warning("askgate: %s; retrying withdrawals", message)
                if self._store_retry is None and self._loop is not None:
                    self._store_retry = self._loop.call_later(_STORE_RETRY_S, self._resend_withdrawals)
            else:
                logger.debug("askgate: the gateway reported %s: %s", code, message)

    def _refuse_open(self, code: str, message: str) -> None:
        """The gateway refused the oldest `open` in flight on this connection."""
        if self._conn is None or not self._conn.opens:
            logger.warning("askgate: the gateway refused an open (%s): %s", code, message)
            return
        session = self._conn.opens.popleft()
        error: AskgateError
        if code == "forbidden":
            error = Forbidden(session, message)
            # Re-opened after every reconnect, it would be refused every time.
            self._sessions.pop(session, None)
        else:
            error = AskgateError(f"the gateway refused to open session {session!r} ({code}): {message}")
        waiters = self._opens.pop(session, [])
        if not waiters:  # an open replayed after a reconnect: nobody else hears of it
            logger.warning("askgate: %s", error)
        for future in waiters:
            if not future.done():
                future.set_exception(error)

    def _forbidden(self, key: _Key, message: str) -> None:
        """The gateway refused a `cancel` or `ack` of `key`: the session is outside the key's
        scope. Neither is sent again, as the same key is refused every time."""
        withdrawn = self._withdrawing.pop(key, None) is not None
        acked = key in self._unacked or key in self._recent_acks
        self._unacked.discard(key)
        if key in self._recent_acks:
            self._recent_acks = collections.deque((k for k in self._recent_acks if k != key), maxlen=_RECENT_ACKS)
        what = "withdraw" if withdrawn else "acknowledge" if acked else "act on"
        logger.warning(
            "askgate: the gateway refused to %s request %r in session %r (forbidden): %s",
            what,
            key[1],
            key[0],
            message,
        )

    def _resend_withdrawals(self) -> None:
        self._store_retry = None
        for key, withdrawal in self._withdrawing.items():
            if withdrawal.accepted:
                self._send({"type": "cancel", "session": key[0], "id": key[1]})

    # ---- the connection task ------------------------------------------------------------

    async def _run(self) -> None:
        attempt = 0
        try:
            while True:
                try:
                    socket = await connect(
                        self.url,
                        additional_headers=self._headers,
                        open_timeout=self._connect_timeout,
                        ping_interval=self._ping_interval,
                        ping_timeout=self._ping_interval,
                        close_timeout=2,
                        max_size=None,
                    )
                except InvalidStatus as error:
                    status = error.response.status_code
                    if 400 <= status < 500 and status not in (408, 429):
                        self._die(GatewayClosed(status, f"the WebSocket upgrade was refused with HTTP {status}"))
                        return
                    self._log_retry(attempt, "connecting to %s failed (HTTP %s); retrying", self.url, status)
                except InvalidURI as error:
                    self._die(GatewayClosed(0, str(error)))
                    return
                except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as error:
                    self._log_retry(attempt, "connecting to %s failed (%s); retrying", self.url, error)
                else:
                    heard, code, reason = await self._serve(socket)
                    if code is not None and is_fatal_close(code):
                        self._die(GatewayClosed(code, reason or "closed by the gateway"))
                        return
                    if heard:
                        attempt = 0
                    self._log_retry(
                        attempt, "the connection to %s ended (%s %s); reconnecting", self.url, code, reason
                    )
                await asyncio.sleep(self._backoff.delay(attempt))
                attempt += 1
        finally:
            self._conn = None

    @staticmethod
    def _log_retry(attempt: int, message: str, *args: object) -> None:
        # The first failure of a streak is worth a warning; the retries that follow are not.
        logger.log(logging.WARNING if attempt == 0 else logging.DEBUG, "askgate: " + message, *args)

    def _die(self, error: AskgateError) -> None:
        logger.error("askgate: %s", error)
        self._fatal = error
        self._fail(error)

    async def _serve(self, socket: ClientConnection) -> tuple[bool, int | None, str]:
        """Serve one connection until it ends: (heard from the gateway, close code, reason)."""
        conn = _Connection()
        heard = False

        async def read() -> None:
            nonlocal heard
            async for message in socket:
                heard = True
                self._receive(message)

        async def write() -> None:
            while True:
                frame = await conn.queue.get()
                try:
                    text = encode(frame)
                except ValueError as error:
                    # `ask` checks its frame first; anything else is a bug here, not a reason
                    # to stop writing every frame behind it.
                    logger.error("askgate: dropping a frame: %s", error)
                    continue
                if frame["type"] == "open":
                    # Before the send: its answer may be read before the send returns.
                    conn.opens.append(frame["session"])
                await socket.send(text)
                if frame["type"] == "ack":
                    key = (frame["session"], frame["id"])
                    self._unacked.discard(key)
                    self._recent_acks.append(key)

        self._replay(conn)
        self._conn = conn
        assert self._connected is not None
        self._connected.set()
        reader = asyncio.ensure_future(read())
        writer = asyncio.ensure_future(write())
        try:
            await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._conn = None
            self._connected = asyncio.Event()
            for task in (reader, writer):
                task.cancel()
            for task in (reader, writer):
                with contextlib.suppress(BaseException):
                    await task
            with contextlib.suppress(Exception):
                await asyncio.wait_for(socket.close(), 2)
        code: int | None = None
        reason = ""
        received = socket.protocol.close_rcvd
        if received is not None:
            code, reason = received.code, received.reason
        elif socket.close_code is not None:
            code = socket.close_code
        else:
            code = 1006
        return heard, code, reason
