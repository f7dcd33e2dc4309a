"""askgate for AG-UI: a person answers the tool-call interrupts a run finished with.

An AG-UI run that needs approval ends with `RUN_FINISHED` whose `outcome` is
`{type: "interrupt", interrupts: [...]}`; the next run on the thread must carry `resume`, one
`ResumeEntry` per open interrupt, sent before any interrupt's `expiresAt`. `resume` builds those
entries (`ag_ui.core.ResumeEntry`):

- every `reason: "tool_call"` interrupt is put to a person through the gateway (dialect
  `approval`, one request for up to 20 calls), shown with the tool call's name and arguments
  (found in the run's `events` or `messages`: pass either), the interrupt's `message` as the
  description, and an argument schema when its `responseSchema` describes `editedArgs` with
  one. Each call offers **approve**, **reject**, and **edit** unless the `responseSchema` has no
  `editedArgs`. The payload follows the convention pydantic-ai's AG-UI adapter advertises,
  `{approved, editedArgs?, reason?}`:
  - approve: `{interruptId, status: "resolved", payload: {approved: true}}`;
  - edit: `{..., status: "resolved", payload: {approved: true, editedArgs: {...}}}`;
  - reject: `{..., status: "resolved", payload: {approved: false, reason: <message>}}` (no
    `reason` when the person gave none);
  - the person **declines** the whole request: every call is rejected with
    `reason: "The person declined."`;
  - the request's **deadline** passes: every call is rejected with `reason: "No answer in time."`.
    The deadline given to the gateway is the earliest `expiresAt` of the interrupts, less a
    margin (10 % of the time left, at least 0.5 s and at most 2 s, and never more than half of
    it), or `timeout_s` when that is sooner, so the entries are ready, and there is time left to
    send them, before any interrupt expires.
- every other interrupt (`input_required`, `confirmation`, `<framework>:<name>`) is answered
  `{interruptId, status: "cancelled"}` without asking: askgate's approval dialect has no answer
  for it, and AG-UI requires every open interrupt to be covered. Filter them out first to answer
  them some other way.

A request withdrawn by someone else raises `RequestWithdrawn`; one the gateway refuses raises
`ApiError`; an interrupt that has already expired, or a tool-call interrupt whose call is in
neither `events` nor `messages`, raises `ValueError` before anything is asked. The outcomes are
acknowledged only once the entries are built.

Needs `ag-ui-protocol` (`pip install 'askgate[ag-ui]'`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, cast

import httpx
from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    Event,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    ResumeEntry,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallStartEvent,
)
from pydantic import TypeAdapter

from ._approval import (
    DefaultDecision,
    DECLINED_MESSAGE,
    TIMED_OUT_MESSAGE,
    ApprovalCall,
    Asking,
    CallDecision,
    Calls,
    DecisionKind,
    args_object,
    open_client,
    resolve_refs,
)
from ._errors import AskgateError
from ._http import PostedRequest

__all__ = [
    "DECLINED_MESSAGE",
    "TIMED_OUT_MESSAGE",
    "expiry_timeout",
    "interrupts_of",
    "resume",
    "resume_entry",
    "resume_sync",
    "tool_calls_of",
]

TOOL_CALL = "tool_call"
"""The interrupt reason askgate asks a person about."""

_MARGIN_SHARE = 0.1
_MARGIN_MIN_S = 0.5
_MARGIN_MAX_S = 2.0

_EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
_MESSAGES: TypeAdapter[Any] = TypeAdapter(Message)

Interrupts = BaseEvent | RunFinishedInterruptOutcome | Iterable[Interrupt | Mapping[str, Any]]
"""What `resume` takes: the `RUN_FINISHED` event, its interrupt outcome, or the interrupts."""


def interrupts_of(interrupts: Interrupts) -> list[Interrupt]:
    """The open interrupts of a `RUN_FINISHED` event (none when it finished otherwise), its
    outcome, or a list of interrupts (`Interrupt`s or their JSON, camelCase or snake_case).
    `ValueError` for another event."""
    if isinstance(interrupts, RunFinishedEvent):
        outcome: Any = interrupts.outcome
        return list(outcome.interrupts) if isinstance(outcome, RunFinishedInterruptOutcome) else []
    if isinstance(interrupts, BaseEvent):
        raise ValueError(f"expected the RUN_FINISHED event, got a {interrupts.type} event")
    if isinstance(interrupts, RunFinishedInterruptOutcome):
        return list(interrupts.interrupts)
    return [i if isinstance(i, Interrupt) else Interrupt.model_validate(i) for i in interrupts]


@dataclass(frozen=True, kw_only=True)
class _ToolCall:
    name: str
    arguments: str


def tool_calls_of(
    events: Iterable[BaseEvent | Mapping[str, Any]] | None = None,
    messages: Iterable[Message | Mapping[str, Any]] | None = None,
) -> dict[str, tuple[str, str]]:
    """`{tool_call_id: (name, arguments JSON)}` of the tool calls in a run's events
    (`TOOL_CALL_START` / `TOOL_CALL_ARGS`, `TOOL_CALL_CHUNK`, `MESSAGES_SNAPSHOT`) and in
    AG-UI messages (assistant messages' `toolCalls`)."""
    names: dict[str, str] = {}
    args: dict[str, list[str]] = {}
    snapshots: list[Any] = []
    last_chunk: str | None = None
    for raw in events or ():
        event: Any = raw if isinstance(raw, BaseEvent) else _EVENTS.validate_python(raw)
        if isinstance(event, ToolCallStartEvent):
            names[event.tool_call_id] = event.tool_call_name
            args.setdefault(event.tool_call_id, [])
        elif isinstance(event, ToolCallArgsEvent):
            args.setdefault(event.tool_call_id, []).append(event.delta)
        elif isinstance(event, ToolCallChunkEvent):
            # A chunk without an id continues the call of the chunk before it.
            last_chunk = event.tool_call_id or last_chunk
            if last_chunk is None:
                continue
            if event.tool_call_name:
                names[last_chunk] = event.tool_call_name
            args.setdefault(last_chunk, []).append(event.delta or "")
        elif isinstance(event, MessagesSnapshotEvent):
            snapshots.extend(event.messages)
    found = {id: (name, "".join(args.get(id, []))) for id, name in names.items()}
    for raw in [*snapshots, *(messages or ())]:
        message: Any = raw if not isinstance(raw, Mapping) else _MESSAGES.validate_python(raw)
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls or ():
                found[call.id] = (call.function.name, call.function.arguments)
    return found


def _parse_expiry(value: str) -> float:
    """Seconds since the epoch of an ISO 8601 `expiresAt`."""
    moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def expiry_timeout(interrupts: Sequence[Interrupt], now: float | None = None) -> float | None:
    """Seconds from `now` (epoch seconds, default the current time) until just before the
    earliest `expiresAt` of `interrupts`: less a margin of 10 % of the time left, at least 0.5 s
    and at most 2 s, but never more than half of it; `None` when none expires. `ValueError` when one has expired already, or its `expiresAt` is not ISO 8601."""
    expiries: list[tuple[float, Interrupt]] = []
    for interrupt in interrupts:
        if interrupt.expires_at:
            try:
                expiries.append((_parse_expiry(interrupt.expires_at), interrupt))
            except ValueError:
                raise ValueError(
                    f"interrupt {interrupt.id!r}: expiresAt {interrupt.expires_at!r} is not an ISO 8601 time"
                ) from None
    if not expiries:
        return None
    at, first = min(expiries, key=lambda pair: pair[0])
    left = at - (time.time() if now is None else now)
    if left <= 0:
        raise ValueError(f"interrupt {first.id!r} expired at {first.expires_at}: it can no longer be resumed")
    margin = min(max(left * _MARGIN_SHARE, _MARGIN_MIN_S), _MARGIN_MAX_S, left / 2)
    return max(left - margin, 0.001)


def _edit_schema(response_schema: Mapping[str, Any] | None) -> tuple[bool, dict[str, Any] | None]:
    """Whether the interrupt takes `editedArgs`, and their schema when it is more than "an object"."""
    if response_schema is None:
        return True, None
    resolved = resolve_refs(response_schema)
    properties: Any = (resolved or response_schema).get("properties")
    if not isinstance(properties, Mapping) or "editedArgs" not in properties:
        return False, None
    schema: Any = properties["editedArgs"]
    if not isinstance(schema, Mapping) or set(schema) <= {"type", "title", "description"}:
        return True, None
    return True, dict(cast(Mapping[str, Any], schema))


def _approval_call(interrupt: Interrupt, calls: Mapping[str, tuple[str, str]]) -> ApprovalCall:
    found = calls.get(interrupt.tool_call_id or "")
    if found is None:
        raise ValueError(
            f"interrupt {interrupt.id!r} is about tool call {interrupt.tool_call_id!r}, which is in neither "
            "events nor messages: pass the run's events or messages"
        )
    name, arguments = found
    editable, schema = _edit_schema(interrupt.response_schema)
    decisions: tuple[DecisionKind, ...] = ("approve", "edit", "reject") if editable else ("approve", "reject")
    return ApprovalCall(
        name=name,
        args=args_object(arguments),
        description=interrupt.message or None,
        args_schema=schema,
        decisions=decisions,
    )


def resume_entry(interrupt: Interrupt, decision: CallDecision) -> ResumeEntry:
    """The resume entry for what the person decided about a tool-call interrupt."""
    payload: dict[str, Any]
    if decision.type == "approve":
        payload = {"approved": True}
    elif decision.type == "edit":
        payload = {"approved": True, "editedArgs": dict(decision.args or {})}
    elif decision.type == "reject":
        payload = {"approved": False}
        if decision.message:
            payload["reason"] = decision.message
    else:
        raise AskgateError(f"the gateway answered interrupt {interrupt.id!r} with {decision.type!r}, which AG-UI cannot take")
    return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)


def _plan(
    interrupts: Interrupts,
    events: Iterable[BaseEvent | Mapping[str, Any]] | None,
    messages: Iterable[Message | Mapping[str, Any]] | None,
    asking: Asking,
) -> tuple[Asking, Calls[list[ResumeEntry]]]:
    """The tool-call interrupts to put to the person, with the entries their decisions make (the
    other interrupts cancelled), and `asking` with its deadline and wait cut to the earliest
    expiry."""
    items = interrupts_of(interrupts)
    asked = [i for i in items if i.reason == TOOL_CALL]
    calls = tool_calls_of(events, messages) if asked else {}
    keyed = [(i.id, _approval_call(i, calls)) for i in asked]

    def convert(decisions: list[CallDecision]) -> list[ResumeEntry]:
        answered = {i.id: resume_entry(i, d) for i, d in zip(asked, decisions, strict=True)}
        return [answered.get(i.id) or ResumeEntry(interrupt_id=i.id, status="cancelled") for i in items]

    expiry = expiry_timeout(items)
    if expiry is not None:
        timeout_s = expiry if asking.timeout_s is None else min(asking.timeout_s, expiry)
        # Past the expiry a resume is an error anyway: stop waiting a little after the deadline.
        limit = expiry + _MARGIN_MAX_S
        wait = limit if asking.wait is None else min(asking.wait, limit)
        asking = dataclasses.replace(asking, timeout_s=timeout_s, wait=wait)
    return asking, Calls(keyed, convert)


async def resume(
    url: str,
    session: str,
    interrupts: Interrupts,
    *,
    events: Iterable[BaseEvent | Mapping[str, Any]] | None = None,
    messages: Iterable[Message | Mapping[str, Any]] | None = None,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.AsyncClient | None = None,
) -> list[ResumeEntry]:
    """Ask a person about the tool-call interrupts a run finished with and return one
    `ResumeEntry` per open interrupt, in order, for the next run's `resume`.

    ```python
    events = [event async for event in run]            # the run's AG-UI events
    entries = await resume(URL, "thread-1", events[-1], events=events)
    next_input = RunAgentInput(..., resume=entries)
    ```

    `interrupts` is the `RUN_FINISHED` event, its outcome, or the interrupts; `events` or
    `messages` must hold the tool calls they are about. `timeout_s` caps the gateway deadline
    (which is otherwise the earliest `expiresAt`, less a margin, or none); `wait` bounds the wait
    here (`NotAnswered`, nothing acknowledged). `on_posted` is called with the posted requests
    before the wait. Cancelling the call withdraws the request."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    # The client is made before the plan, so the time it takes is not taken from the deadline.
    async with open_client(client, httpx.AsyncClient) as http:
        planned, calls = _plan(interrupts, events, messages, asking)
        return await planned.ask(calls, http)


def resume_sync(
    url: str,
    session: str,
    interrupts: Interrupts,
    *,
    events: Iterable[BaseEvent | Mapping[str, Any]] | None = None,
    messages: Iterable[Message | Mapping[str, Any]] | None = None,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.Client | None = None,
) -> list[ResumeEntry]:
    """`resume`, blocking."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    with open_client(client, httpx.Client) as http:
        planned, calls = _plan(interrupts, events, messages, asking)
        return planned.ask_sync(calls, http)
