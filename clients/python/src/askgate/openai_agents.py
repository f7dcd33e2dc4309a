"""askgate for the OpenAI Agents SDK: a person approves or rejects the tool calls a run paused on.

A tool with `needs_approval` makes `Runner.run` return early, with `result.interruptions`: one
`ToolApprovalItem` per call waiting. `approve_interruptions` puts them all to a person through
the gateway (dialect `approval`, one request for up to 20 calls; each call offers **approve**
and **reject**, the SDK has no edit), waits for the decisions, and returns the `RunState`
(`result.to_state()`) with every interruption decided, ready for `Runner.run(agent, state)`:

- approve: `state.approve(item)`: the tool runs;
- reject: `state.reject(item, rejection_message=message)`: the tool does not run, and the model
  reads the person's message as the call's output (the SDK's default rejection text when they
  gave none);
- the person **declines** the whole request: every call is rejected with
  `"The person declined."`;
- the request's **deadline** (`timeout_s`) passes unanswered: every call is rejected with
  `"No answer in time."`;
- a request withdrawn by someone else raises `RequestWithdrawn`; one the gateway refuses raises
  `ApiError`.

The outcomes are acknowledged only once the state holds the decisions. Each call is shown with
the tool's description and argument schema when the item's agent has the tool. The arguments
come from the item (a JSON string); arguments that are not a JSON object are shown as
`{"arguments": ...}`.

Needs `openai-agents` (`pip install 'askgate[openai-agents]'`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import httpx
from agents import RunState, ToolApprovalItem

from ._approval import (
    DefaultDecision,
    DECLINED_MESSAGE,
    TIMED_OUT_MESSAGE,
    ApprovalCall,
    Asking,
    CallDecision,
    Calls,
    args_object,
    text_or_none,
)
from ._errors import AskgateError
from ._http import PostedRequest

__all__ = [
    "DECLINED_MESSAGE",
    "TIMED_OUT_MESSAGE",
    "approval_call",
    "approve_interruptions",
    "approve_interruptions_sync",
]


class PausedRun(Protocol):
    """What is read of a `RunResult` / `RunResultStreaming` that stopped on approvals."""

    @property
    def interruptions(self) -> list[ToolApprovalItem]: ...

    def to_state(self) -> RunState[Any]: ...


def _state_and_items(result: PausedRun | RunState[Any]) -> tuple[RunState[Any], list[ToolApprovalItem]]:
    if isinstance(result, RunState):
        return result, result.get_interruptions()
    return result.to_state(), list(result.interruptions)


def _tool(item: ToolApprovalItem) -> Any:
    """The item's function tool on its agent, if it has one by that name."""
    tools: Any = getattr(item.agent, "tools", None) or ()
    return next((tool for tool in tools if getattr(tool, "name", None) == item.tool_name), None)


def approval_call(item: ToolApprovalItem) -> ApprovalCall:
    """What the person is shown for one interruption: the tool, its arguments, and (from the
    agent's tool) its description and argument schema; the decisions are approve and reject."""
    tool = _tool(item)
    description: Any = getattr(tool, "description", None)
    schema: Any = getattr(tool, "params_json_schema", None)
    name = item.qualified_name or item.name or "tool"
    return ApprovalCall(
        name=name,
        args=args_object(item.arguments),
        description=text_or_none(description),
        args_schema=cast(dict[str, Any], schema) if isinstance(schema, dict) else None,
        decisions=("approve", "reject"),
    )


def _key(item: ToolApprovalItem, index: int) -> str:
    return item.call_id or f"{item.tool_name}#{index}"


def _calls(result: PausedRun | RunState[Any]) -> Calls[RunState[Any]]:
    """The interruptions of `result` to put to the person, and the state they decide."""
    state, items = _state_and_items(result)

    def convert(decisions: list[CallDecision]) -> RunState[Any]:
        for item, decision in zip(items, decisions, strict=True):
            if decision.type == "approve":
                state.approve(item)
            elif decision.type == "reject":
                state.reject(item, rejection_message=decision.message)
            else:
                raise AskgateError(
                    f"the gateway answered the approval of {item.tool_name!r} with {decision.type!r}, "
                    "which the Agents SDK cannot take (only approve and reject)"
                )
        return state

    return Calls([(_key(item, index), approval_call(item)) for index, item in enumerate(items)], convert)


async def approve_interruptions(
    result: PausedRun | RunState[Any],
    *,
    url: str,
    session: str,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.AsyncClient | None = None,
) -> RunState[Any]:
    """Ask a person about every interruption of `result` (a paused `RunResult`, or a `RunState`
    loaded back with `RunState.from_string`) and return the state with each approved or rejected.

    ```python
    result = await Runner.run(agent, "...")
    while result.interruptions:
        state = await approve_interruptions(result, url=URL, session="thread-1")
        result = await Runner.run(agent, state)
    ```

    `timeout_s` gives the request a gateway deadline (its calls are then rejected with
    `"No answer in time."`); `wait` bounds the wait here (`NotAnswered`, nothing acknowledged:
    call again with the same result to collect the same request). `on_posted` is called with the
    posted requests before the wait, to show the person their `viewer_url`. `answerers` limits
    who may answer. Cancelling the call withdraws the request."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    return await asking.ask(_calls(result), client)


def approve_interruptions_sync(
    result: PausedRun | RunState[Any],
    *,
    url: str,
    session: str,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.Client | None = None,
) -> RunState[Any]:
    """`approve_interruptions`, blocking."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    return asking.ask_sync(_calls(result), client)
