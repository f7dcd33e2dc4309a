"""askgate for the Claude Agent SDK: a person answers `AskUserQuestion`, and may approve tool calls.

The SDK asks its host before a tool runs through the `can_use_tool` callback
(`ClaudeAgentOptions(can_use_tool=...)`), and the agent's `AskUserQuestion` tool comes through
it too: the questions are in the tool's input, and the answers go back as the input the tool
runs with. `can_use_tool` returns that callback, answered by a person through the gateway:

```python
from claude_agent_sdk import ClaudeAgentOptions, query

options = ClaudeAgentOptions(can_use_tool=askgate.claude.can_use_tool(URL, "thread-1"))
async for message in query(prompt="...", options=options):
    ...
```

- `AskUserQuestion`: the questions (1-4, each with its options, single or multi-select) are
  put to the person (dialect `claude`). Their answer comes back as
  `PermissionResultAllow(updated_input=...)`: the tool's input with `answers`, keyed by question
  text (a label, a list of labels for a multi-select, or their own text), and `response` when
  they wrote free text instead of picking;
- the person **declines**: `PermissionResultDeny(message="The person declined to answer.")`; the
  request's **deadline** (`timeout_s`) passes: `PermissionResultDeny(message="No answer in time.")`;
- every other tool: allowed untouched (`PermissionResultAllow()`), unless `approve_tools=True`,
  which puts each call to the person (dialect `approval`: the tool's name, its input, and the
  SDK's permission prompt as the description), who may
  - approve: `PermissionResultAllow()`: the tool runs with its input;
  - edit: `PermissionResultAllow(updated_input=<edited>)`: the tool runs with the edited input;
  - reject: `PermissionResultDeny(message=<their reason>)` (`"The person rejected this tool
    call."` when they gave none); a decline is a deny with `"The person declined."`, a timeout
    with `"No answer in time."`.
- a request withdrawn by someone else before anyone answered is a deny with
  `"The request was withdrawn before anyone answered."`; a gateway that refuses the request or
  cannot be reached raises (`ApiError`, `httpx.HTTPError`), which the SDK reports to the CLI
  as the callback's error.

Request ids come from the tool call's `tool_use_id`, so the same call is the same request. The
outcome is acknowledged only once the permission result is built; when the CLI cancels the
permission request, the gateway's request is withdrawn.

Needs `claude-agent-sdk` (`pip install 'askgate[claude]'`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import httpx
from claude_agent_sdk import (
    CanUseTool,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ToolPermissionContext,
)

from ._approval import (
    DefaultDecision,
    DECLINED_MESSAGE,
    TIMED_OUT_MESSAGE,
    ApprovalCall,
    Asking,
    CallDecision,
    Calls,
    DecisionKind,
    OnPosted,
)
from ._ask import ask_one, derived_id
from ._errors import AskgateError, RequestWithdrawn
from ._http import ask_body
from ._wire import Outcome

__all__ = [
    "ASK_USER_QUESTION",
    "DECLINED_MESSAGE",
    "DIALECT",
    "REJECTED_MESSAGE",
    "TIMED_OUT_MESSAGE",
    "WITHDRAWN_MESSAGE",
    "approval_result",
    "can_use_tool",
    "question_result",
]

DIALECT = "claude"

ASK_USER_QUESTION = "AskUserQuestion"
"""The tool whose questions are put to the person."""

REJECTED_MESSAGE = "The person rejected this tool call."
"""The deny message of a call the person rejected without giving a reason."""

WITHDRAWN_MESSAGE = "The request was withdrawn before anyone answered."
"""The deny message of a request someone withdrew."""

_DECISIONS: tuple[DecisionKind, ...] = ("approve", "edit", "reject")

_ANSWER_KEYS = ("answers", "response", "annotations")
"""What the answer adds to `AskUserQuestion`'s input; the rest of the input is kept as it was."""


def question_result(outcome: Outcome, input: Mapping[str, Any]) -> PermissionResult:
    """The permission result for a resolved `claude` request about `AskUserQuestion` `input`.

    The outcome's `response` is `{"behavior": "allow", "updated_input": {...}}` or
    `{"behavior": "deny", "message": ...}`: an allow runs the tool with `input` and the answer's
    `answers` (and `response`) in it; a withdrawn request (no response) is a deny with
    `WITHDRAWN_MESSAGE`. `AskgateError` for another response."""
    response: Any = outcome.response
    if response is None:
        return PermissionResultDeny(message=WITHDRAWN_MESSAGE)
    behavior: Any = response.get("behavior") if isinstance(response, Mapping) else None
    if behavior == "allow":
        updated: Any = response.get("updated_input")
        if not isinstance(updated, Mapping):
            raise AskgateError(f"request {outcome.id!r}: an allow without updated_input: {response!r:.300}")
        answer = cast(Mapping[str, Any], updated)
        # The questions are the input's own: the CLI refuses an input whose shown fields changed.
        merged = dict(input)
        merged.update({name: value for name, value in answer.items() if name in _ANSWER_KEYS})
        return PermissionResultAllow(updated_input=merged)
    if behavior == "deny":
        message: Any = response.get("message")
        return PermissionResultDeny(message=message if isinstance(message, str) else DECLINED_MESSAGE)
    raise AskgateError(
        f"request {outcome.id!r} in session {outcome.session!r} came back without a permission result: "
        f"{response!r:.300}"
    )


def approval_result(decision: CallDecision) -> PermissionResult:
    """The permission result for what the person decided about one tool call."""
    if decision.type == "approve":
        return PermissionResultAllow()
    if decision.type == "edit":
        return PermissionResultAllow(updated_input=dict(decision.args or {}))
    if decision.type == "reject":
        return PermissionResultDeny(message=decision.message or REJECTED_MESSAGE)
    raise AskgateError(f"the gateway answered a tool approval with {decision.type!r}, which the SDK cannot take")


def _description(context: ToolPermissionContext) -> str | None:
    parts = [text for text in (context.title, context.description) if isinstance(text, str) and text]
    return "\n".join(dict.fromkeys(parts)) or None


def can_use_tool(
    url: str,
    session: str,
    *,
    approve_tools: bool = False,
    timeout_s: float | None = None,
    key: str | None = None,
    title: str | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: OnPosted | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.AsyncClient | None = None,
) -> CanUseTool:
    """The `can_use_tool` callback for `ClaudeAgentOptions`: `AskUserQuestion` is answered by a
    person in askgate session `session` of the gateway at `url`; with `approve_tools=True` every
    other tool call is approved, edited or rejected by them, otherwise allowed as it is.

    `timeout_s` gives each request a gateway deadline (then a deny with `"No answer in time."`).
    `key` is the agent key, `title` the card's title, `answerers` who may answer. `on_posted` is
    called with each posted request before the wait, to show the person its `viewer_url`.
    `client` is an `httpx.AsyncClient` to reuse (by default one per request)."""

    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, answerers=answerers, on_posted=on_posted, default=default, rules=rules)

    async def ask_questions(input: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
        body = ask_body(
            id=derived_id("claude", context.tool_use_id),
            dialect=DIALECT,
            fields={"questions": input.get("questions")},
            timeout_s=timeout_s,
            title=title,
            answerers=answerers,
        )
        return await ask_one(
            url,
            session,
            body,
            lambda outcome: question_result(outcome, input),
            key=key,
            on_posted=on_posted,
            client=client,
        )

    async def approve(tool_name: str, input: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
        call = ApprovalCall(name=tool_name, args=input, description=_description(context), decisions=_DECISIONS)
        call_key = context.tool_use_id or derived_id("call", None)
        try:
            return await asking.ask(Calls([(call_key, call)], lambda decisions: approval_result(decisions[0])), client)
        except RequestWithdrawn:
            return PermissionResultDeny(message=WITHDRAWN_MESSAGE)

    async def callback(tool_name: str, input: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
        if tool_name == ASK_USER_QUESTION:
            return await ask_questions(input, context)
        if approve_tools:
            return await approve(tool_name, input, context)
        return PermissionResultAllow()

    return callback
