"""askgate for LangChain 1.x: a person reviews the tool calls `HumanInTheLoopMiddleware` paused on.

`answer_hitl` takes the interrupts a paused agent returned (`result["__interrupt__"]`), puts
every tool call in them to a person through the gateway (dialect `approval`, one request for
up to 20 calls), waits for the decisions, and returns the `langgraph.types.Command` that
resumes the agent. Both of the middleware's modes are read:

- batched (the default): one interrupt per model turn, valued
  `{"action_requests": [...], "review_configs": [...]}`, resumed with
  `Command(resume={"decisions": [...]})`, one decision per action in order (with several such
  interrupts, each under its id: `Command(resume={interrupt.id: {"decisions": [...]}})`);
- `interrupt_mode="per_call"`: one interrupt per call, valued `{"type": "tool_approval",
  "tool_call_id", "name", "args", "description"}`, resumed with
  `Command(resume={interrupt.id: decision, ...})`.

Each call offers exactly the decisions the middleware allows for it (batched: its
`review_configs` entry; per-call: the branches of the interrupt's `response_schema`), and an
edit is checked against the tool's argument schema when one is known (per-call: the schema
embedded in `response_schema`; batched: pass `tools=` to supply them). The decisions become:

- approve: `{"type": "approve"}`: the tool runs;
- edit: `{"type": "edit", "edited_action": {"name": <the tool>, "args": <edited>}}`: the tool
  runs with the edited arguments;
- reject: `{"type": "reject", "message": ...}` (no `message` when the person gave none): the tool
  does not run and the model reads the rejection;
- respond: `{"type": "respond", "message": ...}`: the tool does not run and the model reads the
  person's text as its result;
- the person **declines** the whole request: every call is rejected with
  `"The person declined."`; the request's **deadline** (`timeout_s`) passes: every call is
  rejected with `"No answer in time."`. For a call whose allowed decisions have no `reject`,
  that message is sent as a `respond` if allowed; otherwise `AskgateError` is raised (nothing is
  acknowledged).
- a request withdrawn by someone else raises `RequestWithdrawn`; one the gateway refuses raises
  `ApiError`.

The outcomes are acknowledged only once the `Command` is built. Interrupts that are not the
middleware's are refused with `ValueError` (pick them with `is_hitl`); deepagents `ask_user`
interrupts are `askgate.langgraph`'s.

Needs `langchain` (`pip install 'askgate[langchain]'`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx
from langchain_core.tools import BaseTool
from langgraph.types import Command
from pydantic import BaseModel, TypeAdapter

from ._approval import (
    DefaultDecision,
    DECISIONS,
    DECLINED_MESSAGE,
    TIMED_OUT_MESSAGE,
    ApprovalCall,
    Asking,
    CallDecision,
    Calls,
    DecisionKind,
    decision_kind,
    in_canonical_order,
    resolve_refs,
    text_or_none,
)
from ._errors import AskgateError
from ._http import PostedRequest
from .langgraph import InterruptLike, _as_list

__all__ = [
    "DECLINED_MESSAGE",
    "TIMED_OUT_MESSAGE",
    "answer_hitl",
    "answer_hitl_sync",
    "hitl_decision",
    "is_hitl",
]

def _value(interrupt: InterruptLike) -> Mapping[str, Any] | None:
    value: Any = interrupt.value
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def _is_batched(value: Mapping[str, Any] | None) -> bool:
    return value is not None and isinstance(value.get("action_requests"), list) and isinstance(
        value.get("review_configs"), list
    )


def _is_per_call(value: Mapping[str, Any] | None) -> bool:
    return value is not None and value.get("type") == "tool_approval" and isinstance(value.get("name"), str)


def is_hitl(interrupt: InterruptLike) -> bool:
    """Whether an interrupt is `HumanInTheLoopMiddleware`'s: a batched `HITLRequest`
    (`action_requests` and `review_configs`) or a per-call `ToolApprovalRequest`
    (`type: "tool_approval"`)."""
    value = _value(interrupt)
    return _is_batched(value) or _is_per_call(value)


@dataclass(frozen=True, kw_only=True)
class _Reviewed:
    """One interrupt and the calls it asks about."""

    interrupt: InterruptLike
    batched: bool
    calls: list[ApprovalCall]


def _tool_schema(tool: BaseTool) -> dict[str, Any] | None:
    """The argument schema the model sees for `tool` (`tool_call_schema`), with `$ref`s inlined."""
    schema: Any = tool.tool_call_schema
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return resolve_refs(schema.model_json_schema())
    return resolve_refs(schema)


def _tool_schemas(tools: Iterable[BaseTool] | None) -> dict[str, dict[str, Any]]:
    schemas: dict[str, dict[str, Any]] = {}
    for tool in tools or ():
        schema = _tool_schema(tool)
        if schema is not None:
            schemas[tool.name] = schema
    return schemas


def _allowed(values: Any) -> list[DecisionKind]:
    kinds = [decision_kind(v) for v in (values if isinstance(values, list) else ())]
    return in_canonical_order(kind for kind in kinds if kind is not None)


def _args(value: Any) -> dict[str, Any]:
    return dict(cast(Mapping[str, Any], value)) if isinstance(value, Mapping) else {}


def _batched_calls(interrupt: InterruptLike, value: Mapping[str, Any], schemas: Mapping[str, Any]) -> list[ApprovalCall]:
    actions: list[Any] = list(value["action_requests"])
    configs: list[Any] = [c for c in value["review_configs"] if isinstance(c, Mapping)]
    by_name: dict[str, Any] = {}
    for config in configs:
        by_name.setdefault(str(config.get("action_name")), config)
    calls: list[ApprovalCall] = []
    for index, action in enumerate(actions):
        if not isinstance(action, Mapping) or not isinstance(action.get("name"), str):
            raise ValueError(f"interrupt {interrupt.id!r}: action_requests[{index}] has no tool name: {action!r:.200}")
        name: str = action["name"]
        # The middleware writes one review config per action, in order; older ones, one per tool.
        positional = configs[index] if len(configs) == len(actions) else None
        config = positional if positional is not None and positional.get("action_name") == name else by_name.get(name)
        if config is None:
            raise ValueError(f"interrupt {interrupt.id!r}: no review_configs entry for {name!r}")
        decisions = _allowed(config.get("allowed_decisions"))
        if not decisions:
            raise ValueError(f"interrupt {interrupt.id!r}: {name!r} allows no decision askgate knows")
        schema: Any = config.get("args_schema")
        calls.append(
            ApprovalCall(
                name=name,
                args=_args(action.get("args")),
                description=text_or_none(action.get("description")),
                args_schema=resolve_refs(schema) if isinstance(schema, Mapping) else schemas.get(name),
                decisions=decisions,
            )
        )
    return calls


def _json_schema(schema: Any) -> Mapping[str, Any] | None:
    """An interrupt's `response_schema` as JSON Schema (it is a Python type inside the graph)."""
    if schema is None:
        return None
    if isinstance(schema, Mapping):
        return cast(Mapping[str, Any], schema)
    try:
        return TypeAdapter(schema).json_schema()
    except Exception:  # noqa: BLE001 - not a type pydantic can describe
        return None


def _deref(node: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    resolved = resolve_refs(node, root) if isinstance(node, Mapping) else None
    return resolved or {}


def _kind_of(branch: Mapping[str, Any]) -> DecisionKind | None:
    properties: Any = branch.get("properties")
    type_schema: Any = properties.get("type") if isinstance(properties, Mapping) else None
    if not isinstance(type_schema, Mapping):
        return None
    const = type_schema.get("const")
    enum: Any = type_schema.get("enum")
    if const is None and isinstance(enum, list) and len(enum) == 1:
        const = enum[0]
    return decision_kind(const)


def per_call_options(response_schema: Any) -> tuple[list[DecisionKind], dict[str, Any] | None]:
    """The decisions a per-call interrupt's `response_schema` allows, and the argument schema its
    edit branch embeds (`None` when it has none, or one askgate cannot inline)."""
    root = _json_schema(response_schema)
    if root is None:
        return [], None
    branches: Any = root.get("oneOf") or root.get("anyOf") or [root]
    kinds: list[DecisionKind] = []
    args_schema: dict[str, Any] | None = None
    for raw in branches if isinstance(branches, list) else ():
        branch = _deref(raw, root)
        kind = _kind_of(branch)
        if kind is None:
            continue
        kinds.append(kind)
        if kind == "edit":
            properties: Any = branch.get("properties")
            edited = _deref(properties.get("edited_action") if isinstance(properties, Mapping) else None, root)
            edited_properties: Any = edited.get("properties")
            args: Any = edited_properties.get("args") if isinstance(edited_properties, Mapping) else None
            args_schema = resolve_refs(args, root) if isinstance(args, Mapping) else None
    return in_canonical_order(kinds), args_schema


def _per_call_call(interrupt: InterruptLike, value: Mapping[str, Any], schemas: Mapping[str, Any]) -> ApprovalCall:
    name: str = value["name"]
    decisions, args_schema = per_call_options(getattr(interrupt, "response_schema", None))
    if not decisions:
        # No schema came with the interrupt (it was carried somewhere that dropped it): offer
        # every decision, and let LangGraph check the answer against its own schema.
        decisions = list(DECISIONS)
    return ApprovalCall(
        name=name,
        args=_args(value.get("args")),
        description=text_or_none(value.get("description")),
        args_schema=args_schema if args_schema is not None else schemas.get(name),
        decisions=decisions,
    )


def _reviewed(
    interrupts: InterruptLike | Iterable[InterruptLike], tools: Iterable[BaseTool] | None
) -> list[_Reviewed]:
    schemas = _tool_schemas(tools)
    reviewed: list[_Reviewed] = []
    for interrupt in _as_list(interrupts):
        value = _value(interrupt)
        if value is not None and _is_batched(value):
            reviewed.append(_Reviewed(interrupt=interrupt, batched=True, calls=_batched_calls(interrupt, value, schemas)))
        elif value is not None and _is_per_call(value):
            reviewed.append(_Reviewed(interrupt=interrupt, batched=False, calls=[_per_call_call(interrupt, value, schemas)]))
        else:
            raise ValueError(
                f"interrupt {interrupt.id!r} is not a HumanInTheLoopMiddleware interrupt (filter with is_hitl): "
                f"{interrupt.value!r:.200}"
            )
    return reviewed


def hitl_decision(call: ApprovalCall, decision: CallDecision) -> dict[str, Any]:
    """The middleware's decision object for what the person decided about `call`."""
    kind = decision.type
    if kind not in call.decisions and decision.outcome != "answered" and kind == "reject":
        # A decline or a timeout rejects every call; this one cannot be rejected.
        if "respond" in call.decisions and decision.message:
            return {"type": "respond", "message": decision.message}
        raise AskgateError(
            f"the request was {decision.outcome.replace('_', ' ')}, which askgate turns into a reject of "
            f"every call, but {call.name!r} allows only {', '.join(call.decisions)}"
        )
    if kind not in call.decisions:
        raise AskgateError(f"the gateway answered {call.name!r} with {kind!r}, which it does not allow")
    if kind == "edit":
        return {"type": "edit", "edited_action": {"name": call.name, "args": dict(decision.args or {})}}
    if kind == "respond":
        return {"type": "respond", "message": decision.message or ""}
    if kind == "reject":
        return {"type": "reject", "message": decision.message} if decision.message else {"type": "reject"}
    return {"type": "approve"}


def _calls(interrupts: InterruptLike | Iterable[InterruptLike], tools: Iterable[BaseTool] | None) -> Calls[Command[Any]]:
    """The tool calls of the middleware's `interrupts` to put to the person, and the `Command`
    their decisions make."""
    reviewed = _reviewed(interrupts, tools)
    keyed: list[tuple[str, ApprovalCall]] = []
    for item in reviewed:
        for index, call in enumerate(item.calls):
            keyed.append((f"{item.interrupt.id}#{index}" if item.batched else item.interrupt.id, call))

    def convert(decisions: list[CallDecision]) -> Command[Any]:
        resume: dict[str, Any] = {}
        position = 0
        for item in reviewed:
            mine = decisions[position : position + len(item.calls)]
            position += len(item.calls)
            answers = [hitl_decision(call, d) for call, d in zip(item.calls, mine, strict=True)]
            resume[item.interrupt.id] = {"decisions": answers} if item.batched else answers[0]
        if len(reviewed) == 1 and reviewed[0].batched:
            return Command(resume=resume[reviewed[0].interrupt.id])
        return Command(resume=resume)

    return Calls(keyed, convert)


async def answer_hitl(
    url: str,
    session: str,
    interrupts: InterruptLike | Iterable[InterruptLike],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    tools: Iterable[BaseTool] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.AsyncClient | None = None,
) -> Command[Any]:
    """Ask a person about every tool call in `HumanInTheLoopMiddleware` interrupts and return
    the `Command` that resumes the agent.

    ```python
    result = agent.invoke({"messages": [...]}, config)
    command = await answer_hitl(URL, "thread-1", result["__interrupt__"])
    result = agent.invoke(command, config)
    ```

    `tools` (the agent's tools) supplies argument schemas for edits of batched interrupts, which
    carry none. `timeout_s` gives the request a gateway deadline; `wait` bounds the wait here
    (`NotAnswered`, nothing acknowledged: call again with the same interrupts to collect the same
    request). `on_posted` is called with the posted requests before the wait. Cancelling the
    call withdraws the request."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    return await asking.ask(_calls(interrupts, tools), client)


def answer_hitl_sync(
    url: str,
    session: str,
    interrupts: InterruptLike | Iterable[InterruptLike],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    tools: Iterable[BaseTool] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.Client | None = None,
) -> Command[Any]:
    """`answer_hitl`, blocking."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    return asking.ask_sync(_calls(interrupts, tools), client)
