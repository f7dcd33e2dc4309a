"""The `approval` dialect: tool calls put to a person, one decision per call, over the HTTP API.

The framework adapters (`askgate.openai_agents`, `askgate.langchain`, `askgate.pydantic_ai`,
`askgate.agui`) build `ApprovalCall`s from what their framework paused on, and hand them to
`ask_calls` / `ask_calls_sync` with a `convert` function. Those post the calls (at most
`MAX_CALLS` a request: more are split over several requests), long-poll until every request is
resolved, read one `CallDecision` per call, convert them to the framework's object, and only then
acknowledge the outcomes, so an answer is never forgotten by the gateway before the framework has
it. A declined request and one whose deadline passed come back from the gateway as a `reject` of
every call, with the message `DECLINED_MESSAGE` or `TIMED_OUT_MESSAGE`; `withdrawn` raises
`RequestWithdrawn`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import anyio
import httpx

from ._errors import AskgateError, RequestWithdrawn
from ._http import AsyncApi, PostedRequest, SyncApi, ask_body
from ._wire import Outcome, OutcomeKind

__all__ = [
    "DECISIONS",
    "DECLINED_MESSAGE",
    "DIALECT",
    "MAX_CALLS",
    "TIMED_OUT_MESSAGE",
    "ApprovalCall",
    "CallDecision",
    "DecisionKind",
    "ask_calls",
    "ask_calls_sync",
    "decisions_from_outcome",
    "resolve_refs",
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
        value["decisions"] = [kind for kind in DECISIONS if kind in self.decisions]
        return value


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
        kind = _KINDS.get(item.get("type")) if isinstance(item, Mapping) else None
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
                message=message if isinstance(message, str) and message else None,
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


def _chunks(keyed: Sequence[tuple[str, ApprovalCall]]) -> list[Sequence[tuple[str, ApprovalCall]]]:
    return [keyed[start : start + MAX_CALLS] for start in range(0, len(keyed), MAX_CALLS)]


def _bodies(
    keyed: Sequence[tuple[str, ApprovalCall]],
    title: str | None,
    timeout_s: float | None,
    answerers: Sequence[str] | None,
) -> list[tuple[dict[str, Any], int]]:
    """The body of each request to post, with how many calls it carries."""
    return [
        (
            ask_body(
                id=request_id([key for key, _ in chunk]),
                dialect=DIALECT,
                calls=[call.to_json() for _, call in chunk],
                timeout_s=timeout_s,
                title=title,
                answerers=answerers,
            ),
            len(chunk),
        )
        for chunk in _chunks(keyed)
    ]


def _decisions(
    posted: Sequence[PostedRequest], counts: Sequence[int], outcomes: Mapping[str, Outcome]
) -> list[CallDecision]:
    decisions: list[CallDecision] = []
    for request, count in zip(posted, counts, strict=True):
        decisions.extend(decisions_from_outcome(outcomes[request.id], count))
    return decisions


async def ask_calls(
    url: str,
    session: str,
    keyed: Sequence[tuple[str, ApprovalCall]],
    convert: Callable[[list[CallDecision]], _T],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    client: httpx.AsyncClient | None = None,
) -> _T:
    """Put `keyed` calls (`(tool call or interrupt id, call)`) to the person and return
    `convert(decisions)`, one decision per call in order; the outcomes are acknowledged after
    `convert` returns (a failed acknowledgement is logged, not raised). With no calls, returns
    `convert([])` without asking.

    `wait` bounds the whole wait (`NotAnswered`, nothing acknowledged: ask again later, the same
    calls get the same request). Cancelling the call withdraws its requests."""
    if not keyed:
        return convert([])
    bodies = _bodies(keyed, title, timeout_s, answerers)
    if client is None:
        async with httpx.AsyncClient() as own:
            return await ask_calls(
                url,
                session,
                keyed,
                convert,
                key=key,
                title=title,
                timeout_s=timeout_s,
                wait=wait,
                answerers=answerers,
                on_posted=on_posted,
                client=own,
            )
    api = AsyncApi(url, session, key=key, client=client)
    posted: list[PostedRequest] = []
    try:
        for body, _ in bodies:
            posted.append(await api.post(body))
        if on_posted is not None:
            on_posted(list(posted))
        ids = [request.id for request in posted]
        outcomes = await api.collect(ids, wait)
    except anyio.get_cancelled_exc_class():
        await _withdraw(api, posted)
        raise
    result = convert(_decisions(posted, [count for _, count in bodies], outcomes))
    await api.ack_collected(ids)
    return result


async def _withdraw(api: AsyncApi, posted: Iterable[PostedRequest]) -> None:
    """Withdraw requests of a cancelled ask, so tabs stop showing them; best effort."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(_WITHDRAW_S):
        for request in posted:
            try:
                await api.delete(request.id)
            except (httpx.HTTPError, AskgateError) as error:
                logger.warning("askgate: could not withdraw request %s in session %s: %s", request.id, api.session, error)


def ask_calls_sync(
    url: str,
    session: str,
    keyed: Sequence[tuple[str, ApprovalCall]],
    convert: Callable[[list[CallDecision]], _T],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    client: httpx.Client | None = None,
) -> _T:
    """`ask_calls`, blocking."""
    if not keyed:
        return convert([])
    bodies = _bodies(keyed, title, timeout_s, answerers)
    if client is None:
        with httpx.Client() as own:
            return ask_calls_sync(
                url,
                session,
                keyed,
                convert,
                key=key,
                title=title,
                timeout_s=timeout_s,
                wait=wait,
                answerers=answerers,
                on_posted=on_posted,
                client=own,
            )
    api = SyncApi(url, session, key=key, client=client)
    posted = [api.post(body) for body, _ in bodies]
    if on_posted is not None:
        on_posted(list(posted))
    ids = [request.id for request in posted]
    outcomes = api.collect(ids, wait)
    result = convert(_decisions(posted, [count for _, count in bodies], outcomes))
    api.ack_collected(ids)
    return result
