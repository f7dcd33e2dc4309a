"""The `approval` dialect: tool calls put to a person, one decision per call, over the HTTP API.

The framework adapters (`askgate.openai_agents`, `askgate.langchain`, `askgate.pydantic_ai`,
`askgate.agui`) turn what their framework paused on into `Calls`: `ApprovalCall`s under their
keys, and a `convert` function that makes the framework's object of the decisions. `Asking`
holds the options every adapter takes and puts `Calls` to the person, awaiting (`ask`) or
blocking (`ask_sync`): it posts the calls (at most `MAX_CALLS` a request: more are split over
several requests), long-polls until every request is resolved, reads one `CallDecision` per
call, converts them, and only then acknowledges the outcomes, so an answer is never forgotten by
the gateway before the framework has it. Both run the same steps: the blocking one runs them
with `run_blocking` over a `SyncApi`, so the steps are written once. A declined request and one
whose deadline passed come back from the gateway as a `reject` of every call, with the message
`DECLINED_MESSAGE` or `TIMED_OUT_MESSAGE`; `withdrawn` raises `RequestWithdrawn`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

import anyio
import httpx

from ._errors import AskgateError, RequestWithdrawn
from ._http import AsyncApi, PostedRequest, SyncApi, ask_body
from ._wire import Outcome, OutcomeKind, check_default

__all__ = [
    "DECISIONS",
    "DECLINED_MESSAGE",
    "DIALECT",
    "MAX_CALLS",
    "TIMED_OUT_MESSAGE",
    "ApprovalCall",
    "Asking",
    "CallDecision",
    "Calls",
    "DecisionKind",
    "OnPosted",
    "decision_kind",
    "decisions_from_outcome",
    "in_canonical_order",
    "open_client",
    "resolve_refs",
    "run_blocking",
    "text_or_none",
    "withdraw",
]

logger = logging.getLogger("askgate")

DIALECT = "approval"

MAX_CALLS = 20
"""The most calls the gateway takes in one `approval` request."""

DECLINED_MESSAGE = "The person declined."
"""The message of every call's `reject` when the person declined the whole request."""

TIMED_OUT_MESSAGE = "No answer in time."
"""The message of every call's `reject` when the request's deadline passed unanswered."""

DecisionKind = Literal["approve", "edit", "reject", "respond"]

DECISIONS: tuple[DecisionKind, ...] = ("approve", "edit", "reject", "respond")
"""Every decision kind, in the gateway's canonical order."""

_KINDS: dict[Any, DecisionKind] = {kind: kind for kind in DECISIONS}

_T = TypeVar("_T")
_Client = TypeVar("_Client", httpx.Client, httpx.AsyncClient)

OnPosted = Callable[[list[PostedRequest]], None]
"""Called with the posted requests before the wait, to show the person their `viewer_url`."""

_WITHDRAW_S = 5.0
"""How long a cancelled ask spends withdrawing its requests."""


@dataclass(frozen=True, kw_only=True)
class ApprovalCall:
    """One tool call to put to the person: what would run, and what they may decide."""

    name: str
    args: Mapping[str, Any]
    description: str | None = None
    args_schema: Mapping[str, Any] | None = None
    """A JSON Schema for the arguments, which edits are checked against."""
    decisions: Sequence[DecisionKind] = ("approve", "reject")

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"name": self.name, "args": dict(self.args)}
        if self.description:
            value["description"] = self.description
        if self.args_schema is not None:
            value["args_schema"] = dict(self.args_schema)
        value["decisions"] = in_canonical_order(self.decisions)
        return value


def decision_kind(value: Any) -> DecisionKind | None:
    """The decision kind `value` names, or `None` when it names none askgate knows."""
    return _KINDS.get(value)


def in_canonical_order(kinds: Iterable[DecisionKind]) -> list[DecisionKind]:
    """Each of `kinds` once, in the gateway's canonical order (`DECISIONS`)."""
    given = set(kinds)
    return [kind for kind in DECISIONS if kind in given]


def text_or_none(value: Any) -> str | None:
    """`value` when it is a non-empty string; `None` for anything else."""
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True, kw_only=True)
class CallDecision:
    """What the person decided for one call.

    `args` are the edited arguments of an `edit` (`None` otherwise); `message` is a reject's
    reason (`None` when they gave none) or a respond's text. `outcome` says how the request
    ended: for `declined` and `timed_out` every decision is a `reject` with `DECLINED_MESSAGE`
    or `TIMED_OUT_MESSAGE`."""

    type: DecisionKind
    args: dict[str, Any] | None = None
    message: str | None = None
    outcome: OutcomeKind = "answered"


def request_id(keys: Sequence[str]) -> str:
    """The request id for calls known by `keys` (tool call or interrupt ids): the same calls
    always get the same id, so posting them again is harmless."""
    digest = hashlib.sha256("\x1f".join(keys).encode()).hexdigest()
    return f"approval-{digest[:40]}"


def decisions_from_outcome(outcome: Outcome, count: int) -> list[CallDecision]:
    """The `count` decisions of a resolved `approval` request, in call order.

    Raises `RequestWithdrawn` for a withdrawn request, and `AskgateError` for an outcome that
    does not carry one decision per call."""
    if outcome.outcome == "withdrawn" or outcome.response is None:
        raise RequestWithdrawn(outcome.session, outcome.id)
    response: Any = outcome.response
    items: Any = response.get("decisions") if isinstance(response, Mapping) else None
    if not isinstance(items, list) or len(items) != count:
        raise AskgateError(
            f"request {outcome.id!r} in session {outcome.session!r} came back without one decision "
            f"per call ({count} calls): {response!r:.300}"
        )
    decisions: list[CallDecision] = []
    for index, item in enumerate(items):
        kind = decision_kind(item.get("type")) if isinstance(item, Mapping) else None
        if kind is None:
            raise AskgateError(f"request {outcome.id!r}: decision {index} is not one askgate knows: {item!r:.200}")
        decision = cast(Mapping[str, Any], item)
        args: Any = decision.get("args")
        message: Any = decision.get("message")
        if kind == "edit" and not isinstance(args, Mapping):
            raise AskgateError(f"request {outcome.id!r}: decision {index} edits without args: {item!r:.200}")
        if kind == "respond" and not isinstance(message, str):
            raise AskgateError(f"request {outcome.id!r}: decision {index} responds without a message: {item!r:.200}")
        decisions.append(
            CallDecision(
                type=kind,
                args=dict(cast(Mapping[str, Any], args)) if kind == "edit" else None,
                message=text_or_none(message),
                outcome=outcome.outcome,
            )
        )
    return decisions


def args_object(value: Any) -> dict[str, Any]:
    """A tool call's arguments as the JSON object the gateway takes: a mapping as is, JSON text
    of an object parsed; anything else (text that is not a JSON object, a list) as
    `{"arguments": value}`."""
    if isinstance(value, str):
        try:
            parsed: Any = json.loads(value) if value.strip() else {}
        except ValueError:
            return {"arguments": value}
        value = parsed
    if isinstance(value, Mapping):
        return dict(cast(Mapping[str, Any], value))
    if value is None:
        return {}
    return {"arguments": value}


# ---- JSON Schema $ref inlining -----------------------------------------------------------


class _Unresolvable(Exception):
    pass


def _pointer(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        raise _Unresolvable(ref)
    node = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = cast(Mapping[str, Any], node)[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _Unresolvable(ref)
    return node


def _inline(node: Any, root: Any, seen: frozenset[str]) -> Any:
    if isinstance(node, Mapping):
        schema = cast(Mapping[str, Any], node)
        ref = schema.get("$ref")
        rest = {
            key: _inline(value, root, seen)
            for key, value in schema.items()
            if key not in ("$ref", "$defs", "definitions")
        }
        if not isinstance(ref, str):
            return rest
        if ref in seen:
            raise _Unresolvable(ref)  # a recursive schema cannot be inlined
        target = _inline(_pointer(root, ref), root, seen | {ref})
        if not rest:
            return target
        if isinstance(target, dict):
            return {**cast(dict[str, Any], target), **rest}
        return {"allOf": [target, rest]}
    if isinstance(node, list):
        return [_inline(item, root, seen) for item in node]
    return node


def resolve_refs(schema: Any, root: Any = None) -> dict[str, Any] | None:
    """`schema` with every local `$ref` (into `root`, by default `schema` itself) replaced by
    what it points at and the `$defs` dropped, so a checker that knows no `$ref` can read it.
    `None` when `schema` is not an object, or has a reference that cannot be inlined (a
    recursive one, or one into another document)."""
    if not isinstance(schema, Mapping):
        return None
    try:
        inlined = _inline(schema, schema if root is None else root, frozenset())
    except _Unresolvable:
        return None
    return cast(dict[str, Any], inlined) if isinstance(inlined, dict) else None


# ---- asking ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Calls(Generic[_T]):
    """What an adapter puts to the person: the calls, each under its key (its tool call or
    interrupt id: the same keys always make the same request id), and `convert`, which makes
    the framework's object of their decisions (one per call, in order)."""

    keyed: Sequence[tuple[str, ApprovalCall]]
    convert: Callable[[list[CallDecision]], _T]


def open_client(client: _Client | None, new: type[_Client]) -> _Client | contextlib.nullcontext[_Client]:
    """For a `with` (`async with` for an `httpx.AsyncClient`): the caller's `client`, left open
    after it, or (for `None`) a `new()` one, closed after it, so one ask uses one client."""
    return new() if client is None else contextlib.nullcontext(client)


class _Requests(Protocol):
    """The HTTP calls an ask makes, awaitable: `AsyncApi`, or `_Blocking` around a `SyncApi`."""

    @property
    def session(self) -> str: ...

    async def post(self, body: dict[str, Any]) -> PostedRequest: ...

    async def collect(self, ids: Sequence[str], wait: float | None) -> dict[str, Outcome]: ...

    async def ack_collected(self, ids: Sequence[str]) -> None: ...

    async def delete(self, id: str) -> Outcome: ...


class _Blocking:
    """A `SyncApi` with `AsyncApi`'s awaitable methods. Each blocks until its call is done and
    returns without suspending, so a coroutine that awaits only these runs in `run_blocking`."""

    def __init__(self, api: SyncApi) -> None:
        self._api = api

    @property
    def session(self) -> str:
        return self._api.session

    async def post(self, body: dict[str, Any]) -> PostedRequest:
        return self._api.post(body)

    async def collect(self, ids: Sequence[str], wait: float | None) -> dict[str, Outcome]:
        return self._api.collect(ids, wait)

    async def ack_collected(self, ids: Sequence[str]) -> None:
        self._api.ack_collected(ids)

    async def delete(self, id: str) -> Outcome:
        return self._api.delete(id)


def run_blocking(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run to its end, here and without an event loop, a coroutine that never suspends (all it
    awaits blocks instead, as `_Blocking`'s methods do): how a blocking twin runs its async
    twin's steps. `RuntimeError` if it suspends after all."""
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return cast(_T, finished.value)
    coroutine.close()
    raise RuntimeError("askgate: a blocking ask awaited something only an event loop can resume")


DefaultDecision = Literal["approve", "reject"]
"""What every call of a request is decided as when its deadline passes with no answer."""


@dataclass(frozen=True)
class Asking:
    """The options every adapter takes for putting `Calls` to the person: the gateway `url` and
    `session` (with its `key`); the requests' `title`, gateway deadline (`timeout_s`: the calls
    are then rejected with `TIMED_OUT_MESSAGE`), `answerers`, and `remind_after_s` and
    `escalate` (see `Client.ask`); `default`, what every call is decided as if nobody answers
    before the deadline (`"approve"` or `"reject"`; it needs `timeout_s`); `rules=False`, for
    calls that must always be asked (no approval a person had the gateway remember answers
    them); `wait`, the bound on the whole
    wait here (`NotAnswered`, nothing acknowledged: ask again later, the same calls get the same
    request); `on_posted`, called with the posted requests before the wait."""

    url: str
    session: str
    _: KW_ONLY
    key: str | None = None
    title: str | None = None
    timeout_s: float | None = None
    wait: float | None = None
    answerers: Sequence[str] | None = None
    remind_after_s: float | None = None
    escalate: Mapping[str, Any] | None = None
    on_posted: OnPosted | None = None
    default: DefaultDecision | None = None
    rules: bool = True

    def __post_init__(self) -> None:
        if self.default not in (None, "approve", "reject"):
            raise ValueError(f'default must be "approve", "reject" or None, got {self.default!r}')
        check_default(self.default, self.timeout_s)

    async def ask(self, calls: Calls[_T], client: httpx.AsyncClient | None = None) -> _T:
        """Put `calls` to the person and return `calls.convert(decisions)`, one decision per call
        in order; the outcomes are acknowledged after `convert` returns (a failed acknowledgement
        is logged, not raised). With no calls, returns `convert([])` without asking. Cancelling
        the call withdraws its requests."""
        if not calls.keyed:
            return calls.convert([])
        async with open_client(client, httpx.AsyncClient) as http:
            api = AsyncApi(self.url, self.session, key=self.key, client=http)
            return await self._ask(api, calls, cancelled=(anyio.get_cancelled_exc_class(),))

    def ask_sync(self, calls: Calls[_T], client: httpx.Client | None = None) -> _T:
        """`ask`, blocking."""
        if not calls.keyed:
            return calls.convert([])
        with open_client(client, httpx.Client) as http:
            api = _Blocking(SyncApi(self.url, self.session, key=self.key, client=http))
            # Nothing cancels a blocking call, so there is nothing to withdraw.
            return run_blocking(self._ask(api, calls, cancelled=()))

    def _bodies(self, keyed: Sequence[tuple[str, ApprovalCall]]) -> list[tuple[dict[str, Any], int]]:
        """The body of each request to post, with how many calls it carries."""
        chunks = [keyed[start : start + MAX_CALLS] for start in range(0, len(keyed), MAX_CALLS)]
        return [
            (
                ask_body(
                    id=request_id([key for key, _ in chunk]),
                    dialect=DIALECT,
                    calls=[call.to_json() for _, call in chunk],
                    timeout_s=self.timeout_s,
                    title=self.title,
                    answerers=self.answerers,
                    remind_after_s=self.remind_after_s,
                    escalate=self.escalate,
                    default=None
                    if self.default is None
                    else {"decisions": [{"type": self.default} for _ in chunk]},
                    rules=self.rules,
                ),
                len(chunk),
            )
            for chunk in chunks
        ]

    async def _ask(self, api: _Requests, calls: Calls[_T], *, cancelled: tuple[type[BaseException], ...]) -> _T:
        """The steps of an ask: post, wait for every outcome, convert, acknowledge. When one of
        `cancelled` stops the posting or the wait, the requests posted are withdrawn."""
        bodies = self._bodies(calls.keyed)
        posted: list[PostedRequest] = []
        try:
            for body, _ in bodies:
                posted.append(await api.post(body))
            if self.on_posted is not None:
                self.on_posted(list(posted))
            ids = [request.id for request in posted]
            outcomes = await api.collect(ids, self.wait)
        except cancelled:
            await withdraw(api, posted)
            raise
        decisions: list[CallDecision] = []
        for request, (_, count) in zip(posted, bodies, strict=True):
            decisions.extend(decisions_from_outcome(outcomes[request.id], count))
        result = calls.convert(decisions)
        await api.ack_collected(ids)
        return result


async def withdraw(api: _Requests, posted: Iterable[PostedRequest]) -> None:
    """Withdraw requests of a cancelled ask, so tabs stop showing them; best effort."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(_WITHDRAW_S):
        for request in posted:
            try:
                await api.delete(request.id)
            except (httpx.HTTPError, AskgateError) as error:
                logger.warning("askgate: could not withdraw request %s in session %s: %s", request.id, api.session, error)
