"""askgate for Google ADK (`google-adk` 2.x): a person answers the requests a run paused on.

An ADK run stops for a person with a function call that the runner yields and that waits for a
`FunctionResponse` from the user:

- `adk_request_confirmation`: a tool made with `FunctionTool(func, require_confirmation=True)`
  (or one that calls `tool_context.request_confirmation()`) asks whether the call may run;
- `adk_request_input`: a workflow node returned or yielded a `RequestInput`, asking for a value
  of its `response_schema` (the model may ask the same through `google.adk.tools.request_input`);
  a workflow's `FunctionNode(..., require_confirmation=True)` asks for its confirmation this
  way too.

`answer_requests` finds the requests in a run's events that nobody has answered yet, puts them
to a person through the gateway, waits for the answers, and returns the `function_response`
parts to resume the run with:

```python
events = [event async for event in runner.run_async(user_id=USER, session_id=SID, new_message=message)]
parts = await askgate.adk.answer_requests(events, url=URL, session="thread-1")
if parts:
    resume = types.Content(role="user", parts=parts)
    async for event in runner.run_async(user_id=USER, session_id=SID, new_message=resume):
        ...
```

- **Confirmations** go in one `approval` request (up to 20 calls a request), each call with the
  tool's name and arguments, the tool's own hint and (given `agent=`) the tool's description;
  the person may **approve** (`{"confirmed": true}`: the tool runs) or **reject**
  (`{"confirmed": false}`: ADK tells the model "This tool call is rejected."; ADK's
  `ToolConfirmation` has no place for a reason, so a reject's message is not passed on). A
  **decline** and a passed **deadline** (`timeout_s`) reject every call, unless `default`
  says to approve them then. A payload the tool asked to confirm is handed back unchanged.
- **Inputs** go in one `form` request each: the `RequestInput`'s message, and one field per
  property of an object `response_schema` (any other schema, or none, is asked as a single
  field), checked by the gateway as MCP elicitations are (flat objects of strings, numbers,
  booleans and choices; a schema outside that is refused with the path of what is wrong). The
  answer is the response: the object as filled in, or `{"result": value}`. ADK has no answer
  for an input nobody gave: when the person declines one (or presses Not now), or its
  deadline passes, `NoAnswer` is raised, carrying the parts for everything else.

The outcomes are acknowledged only once the parts are built, so after a failure (the wait ran
out, the gateway could not be reached) calling again with the same events collects the same
answers. A `NoAnswer` is raised after they are acknowledged, with the answers given in its
`parts`: calling again then asks anew. A request withdrawn by someone else raises
`RequestWithdrawn`; one the gateway refuses raises `ApiError`.

Needs `google-adk` (`pip install 'askgate[adk]'`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import anyio
import httpx
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.events import Event
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from ._approval import (
    MAX_CALLS,
    ApprovalCall,
    CallDecision,
    DefaultDecision,
    OnPosted,
    _Blocking,
    _Requests,
    args_object,
    decisions_from_outcome,
    open_client,
    request_id,
    resolve_refs,
    run_blocking,
    text_or_none,
    withdraw,
)
from ._ask import derived_id
from ._errors import AskgateError, RequestWithdrawn
from ._http import AsyncApi, PostedRequest, SyncApi, ask_body
from ._wire import Outcome, OutcomeKind, check_default

__all__ = [
    "CONFIRMATION",
    "INPUT",
    "NoAnswer",
    "answer_requests",
    "answer_requests_sync",
    "pending_requests",
]

CONFIRMATION = "adk_request_confirmation"
"""The function call a tool's confirmation comes as."""

INPUT = "adk_request_input"
"""The function call a `RequestInput` (and a workflow node's confirmation) comes as."""

_MESSAGE_MAX = 10_000
"""The longest `message` the `form` dialect takes."""

_FIELD = "answer"
"""The one field a `RequestInput` whose schema is not an object is asked as."""

_DEFAULT_HINT = "Please approve or reject the tool call "
"""How the hint ADK writes itself begins (FunctionTool's and a workflow node's): instructions to
a developer, not worth showing a person."""


class NoAnswer(AskgateError):
    """The person gave no answer to one or more `RequestInput`s: they declined it (or pressed
    Not now), or its deadline passed. ADK has no response for that, so the run stays paused on
    them. `calls` are those requests' function calls, `outcomes` how each ended (`"declined"`
    or `"timed_out"`), and `parts` the function responses to everything else that was asked,
    to resume with if the run should go on without those inputs."""

    def __init__(self, calls: list[types.FunctionCall], outcomes: list[OutcomeKind], parts: list[types.Part]) -> None:
        self.calls = calls
        self.outcomes = outcomes
        self.parts = parts
        described = ", ".join(f"{call.id} ({outcome})" for call, outcome in zip(calls, outcomes, strict=True))
        super().__init__(f"the person gave no answer to the ADK input request(s) {described}")


@dataclass(frozen=True)
class _Confirmation:
    """What a confirmation request asks about: the tool call, the hint the tool gave, and the
    payload it asked to confirm (handed back unchanged)."""

    tool: str
    args: dict[str, Any]
    hint: str
    payload: Any


@dataclass(frozen=True)
class _Pending:
    """A request a run paused on, with the event that carried it."""

    event: Event
    call: types.FunctionCall

    @property
    def key(self) -> str:
        # Workflows may reuse an interrupt id in a loop; the event id tells the times apart, and
        # stays the same when the same events are answered again.
        return f"{self.event.id}/{self.call.id}"

    @property
    def args(self) -> Mapping[str, Any]:
        return self.call.args or {}

    @property
    def confirmation(self) -> _Confirmation | None:
        """What this asks to confirm, when it asks to confirm a tool call: an
        `adk_request_confirmation`, or the `RequestInput` a workflow node asks its
        confirmation with (its payload names the tool, its schema is `ToolConfirmation`'s)."""
        args = self.args
        if self.call.name == CONFIRMATION:
            original: Any = args.get("originalFunctionCall") or {}
            confirmation: Any = args.get("toolConfirmation") or {}
            if not isinstance(original, Mapping) or not isinstance(confirmation, Mapping):
                raise AskgateError(f"ADK confirmation request {self.call.id!r} is malformed: {dict(args)!r:.300}")
            call = cast(Mapping[str, Any], original)
            details = cast(Mapping[str, Any], confirmation)
            return _Confirmation(
                str(call.get("name") or "tool"), args_object(call.get("args")), str(details.get("hint") or ""), details.get("payload")
            )
        payload: Any = args.get("payload")
        schema: Any = args.get("response_schema")
        properties: Any = schema.get("properties") if isinstance(schema, Mapping) else None
        if (
            isinstance(payload, Mapping)
            and isinstance(payload.get("tool_name"), str)
            and isinstance(properties, Mapping)
            and "confirmed" in properties
        ):
            node = cast(Mapping[str, Any], payload)
            return _Confirmation(
                node["tool_name"], args_object(node.get("args")), str(args.get("message") or ""), node.get("confirmation_payload")
            )
        return None


def pending_requests(events: Iterable[Event]) -> list[types.FunctionCall]:
    """The `adk_request_confirmation` and `adk_request_input` calls in `events` (a run's events,
    or a session's) that no later user `FunctionResponse` answers, in order."""
    return [pending.call for pending in _pending(events)]


def _pending(events: Iterable[Event]) -> list[_Pending]:
    # A response answers the earliest open call with its id: ADK matches a reused interrupt id
    # by count, the same way.
    open_calls: list[_Pending] = []
    for event in events:
        if event.author == "user":
            for response in event.get_function_responses():
                found = next((p for p in open_calls if p.call.id == response.id), None)
                if found is not None:
                    open_calls.remove(found)
            continue
        for call in event.get_function_calls():
            if call.name in (CONFIRMATION, INPUT) and call.id:
                open_calls.append(_Pending(event, call))
    return open_calls


# ---- confirmations: the approval dialect -------------------------------------------------


def _tool_descriptions(agent: BaseAgent | None, author: str | None) -> dict[str, str]:
    """The descriptions of the tools of the agent that wrote an event (`author`), found in the
    tree under `agent`: tools given as functions or as ADK tools (a toolset's are not known
    without running it)."""
    found = agent.find_agent(author) if agent is not None and author else None
    if not isinstance(found, LlmAgent):
        return {}
    descriptions: dict[str, str] = {}
    for tool in found.tools:
        if isinstance(tool, BaseTool):
            named: BaseTool = tool
        elif callable(tool):
            named = FunctionTool(tool)
        else:
            continue
        if named.description:
            descriptions[named.name] = named.description
    return descriptions


def _approval_call(pending: _Pending, agent: BaseAgent | None) -> ApprovalCall:
    confirmation = pending.confirmation
    assert confirmation is not None
    said = [_tool_descriptions(agent, pending.event.author).get(confirmation.tool, "")]
    if confirmation.hint and not confirmation.hint.startswith(_DEFAULT_HINT):
        said.append(confirmation.hint)
    return ApprovalCall(
        name=confirmation.tool,
        args=confirmation.args,
        description=text_or_none("\n\n".join(text for text in said if text)),
        decisions=("approve", "reject"),
    )


def _confirmation_part(pending: _Pending, decision: CallDecision) -> types.Part:
    if decision.type not in ("approve", "reject"):
        raise AskgateError(
            f"the gateway answered the confirmation {pending.call.id!r} with {decision.type!r}, which ADK "
            "cannot take (only approve and reject)"
        )
    confirmation = pending.confirmation
    assert confirmation is not None
    response: dict[str, Any] = {"confirmed": decision.type == "approve"}
    if confirmation.payload is not None:
        response["payload"] = confirmation.payload
    return types.Part(function_response=types.FunctionResponse(id=pending.call.id, name=pending.call.name, response=response))


# ---- inputs: the form dialect ------------------------------------------------------------


def _schema(pending: _Pending) -> tuple[dict[str, Any], bool]:
    """The form's schema for a `RequestInput`, and whether its answer is the one field
    `_FIELD` (its own schema is not an object of fields)."""
    given: Any = pending.args.get("response_schema")
    if isinstance(given, Mapping) and given.get("type") == "object" and "properties" in given:
        schema = resolve_refs(given) or dict(cast(Mapping[str, Any], given))
        # A form schema cannot say an object is closed to other names (a pydantic model with
        # extra="forbid"), and a form never sends a name it does not show: dropping it loses
        # nothing.
        if schema.get("additionalProperties") is False:
            del schema["additionalProperties"]
        return schema, False
    field: dict[str, Any] = (resolve_refs(given) if isinstance(given, Mapping) else None) or {"type": "string"}
    field.setdefault("title", "Answer")
    return {"type": "object", "properties": {_FIELD: field}, "required": [_FIELD]}, True


def _message(pending: _Pending) -> str:
    message: Any = pending.args.get("message")
    text = message.strip() if isinstance(message, str) and message.strip() else "Input requested"
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


def _input_part(pending: _Pending, outcome: Outcome) -> types.Part | None:
    """The function response to a `RequestInput` the person filled in; `None` when they gave
    none (declined, Not now, the deadline)."""
    response: Any = outcome.response
    if outcome.outcome == "withdrawn" or response is None:
        raise RequestWithdrawn(outcome.session, outcome.id)
    if not isinstance(response, Mapping) or response.get("action") != "accept":
        return None
    content: Any = cast(Mapping[str, Any], response).get("content")
    if not isinstance(content, Mapping):
        raise AskgateError(f"request {outcome.id!r} in session {outcome.session!r} came back without content: {response!r:.300}")
    filled = dict(cast(Mapping[str, Any], content))
    schema, single = _schema(pending)
    if not single:
        # A field left out is the schema's default, as the form showed it: ADK would fill in
        # None instead, which the node's own type may not take.
        properties: Any = schema.get("properties")
        fields = cast(Mapping[str, Any], properties) if isinstance(properties, Mapping) else {}
        for name, field in fields.items():
            if name not in filled and isinstance(field, Mapping) and "default" in field:
                filled[name] = cast(Mapping[str, Any], field)["default"]
        answer: dict[str, Any] = filled
    else:
        value = filled.get(_FIELD)
        # A workflow reads `{"result": text}` back by parsing the text as JSON where it can
        # ("42" would come back as 42), so its text goes as JSON text, which parses back to it.
        in_workflow = "interruptId" in pending.args
        answer = {"result": json.dumps(value) if in_workflow and isinstance(value, str) else value}
    return types.Part(function_response=types.FunctionResponse(id=pending.call.id, name=pending.call.name, response=answer))


# ---- asking ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Options:
    title: str | None
    timeout_s: float | None
    wait: float | None
    answerers: Sequence[str] | None
    on_posted: OnPosted | None
    default: DefaultDecision | None
    rules: bool
    agent: BaseAgent | None

    def __post_init__(self) -> None:
        if self.default not in (None, "approve", "reject"):
            raise ValueError(f'default must be "approve", "reject" or None, got {self.default!r}')
        check_default(self.default, self.timeout_s)


@dataclass(frozen=True)
class _Request:
    """One request to post: its body, and the pending requests it asks about, in order."""

    body: dict[str, Any]
    asks: list[_Pending]
    approval: bool


def _requests(pending: list[_Pending], options: _Options) -> list[_Request]:
    confirmations = [p for p in pending if p.confirmation is not None]
    requests: list[_Request] = []
    for start in range(0, len(confirmations), MAX_CALLS):
        chunk = confirmations[start : start + MAX_CALLS]
        body = ask_body(
            id=request_id([p.key for p in chunk]),
            dialect="approval",
            calls=[_approval_call(p, options.agent).to_json() for p in chunk],
            timeout_s=options.timeout_s,
            title=options.title,
            answerers=options.answerers,
            default=None if options.default is None else {"decisions": [{"type": options.default} for _ in chunk]},
            rules=options.rules,
        )
        requests.append(_Request(body, chunk, True))
    for p in pending:
        if p.confirmation is None:
            body = ask_body(
                id=derived_id("adk", p.key),
                dialect="form",
                fields={"message": _message(p), "mode": "form", "schema": _schema(p)[0]},
                timeout_s=options.timeout_s,
                title=options.title,
                answerers=options.answerers,
            )
            requests.append(_Request(body, [p], False))
    return requests


async def _ask(
    api: _Requests, pending: list[_Pending], options: _Options, *, cancelled: tuple[type[BaseException], ...]
) -> list[types.Part]:
    """Post every request, wait for every outcome, build the parts, then acknowledge."""
    requests = _requests(pending, options)
    posted: list[PostedRequest] = []
    try:
        for request in requests:
            posted.append(await api.post(request.body))
        if options.on_posted is not None:
            options.on_posted(list(posted))
        ids = [p.id for p in posted]
        outcomes = await api.collect(ids, options.wait)
    except cancelled:
        await withdraw(api, posted)
        raise
    answered: dict[str, types.Part] = {}
    unanswered: list[tuple[types.FunctionCall, OutcomeKind]] = []
    for request, sent in zip(requests, posted, strict=True):
        outcome = outcomes[sent.id]
        if request.approval:
            decisions = decisions_from_outcome(outcome, len(request.asks))
            for p, decision in zip(request.asks, decisions, strict=True):
                answered[p.key] = _confirmation_part(p, decision)
        else:
            [p] = request.asks
            part = _input_part(p, outcome)
            if part is None:
                unanswered.append((p.call, outcome.outcome))
            else:
                answered[p.key] = part
    parts = [answered[p.key] for p in pending if p.key in answered]
    await api.ack_collected(ids)
    if unanswered:
        raise NoAnswer([call for call, _ in unanswered], [kind for _, kind in unanswered], parts)
    return parts


async def answer_requests(
    events: Iterable[Event],
    *,
    url: str,
    session: str,
    agent: BaseAgent | None = None,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: OnPosted | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.AsyncClient | None = None,
) -> list[types.Part]:
    """Ask a person about every request in `events` nobody has answered (`pending_requests`),
    in askgate session `session` of the gateway at `url`, and return one `function_response`
    part per request, in order, for `types.Content(role="user", parts=...)`. With no requests,
    returns `[]` without asking.

    `agent` (the runner's root agent) lets each confirmation show its tool's description.
    `timeout_s` gives the requests a gateway deadline: confirmations are then rejected (or
    decided as `default`, `"approve"` or `"reject"`), inputs raise `NoAnswer`. `wait` bounds
    the wait here (`NotAnswered`, nothing acknowledged: call again with the same events to
    collect the same requests). `on_posted` is called with the posted requests before the
    wait, to show the person their `viewer_url`. `answerers` limits who may answer;
    `rules=False` has every confirmation asked, whatever approvals people had the gateway
    remember. Cancelling the call withdraws the requests."""
    options = _Options(title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules, agent=agent)
    pending = _pending(events)
    if not pending:
        return []
    async with open_client(client, httpx.AsyncClient) as http:
        api = AsyncApi(url, session, key=key, client=http)
        return await _ask(api, pending, options, cancelled=(anyio.get_cancelled_exc_class(),))


def answer_requests_sync(
    events: Iterable[Event],
    *,
    url: str,
    session: str,
    agent: BaseAgent | None = None,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: OnPosted | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.Client | None = None,
) -> list[types.Part]:
    """`answer_requests`, blocking."""
    options = _Options(title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules, agent=agent)
    pending = _pending(events)
    if not pending:
        return []
    with open_client(client, httpx.Client) as http:
        api = _Blocking(SyncApi(url, session, key=key, client=http))
        # Nothing cancels a blocking call, so there is nothing to withdraw.
        return run_blocking(_ask(api, pending, options, cancelled=()))

