"""askgate for pydantic-ai: a person approves, edits or rejects the tool calls that need approval.

A tool registered with `requires_approval=True` (or raising `ApprovalRequired`) defers its call:
the run ends with `DeferredToolRequests`, whose `approvals` are those calls. `collect_approvals`
puts them to a person through the gateway (dialect `approval`, one request for up to 20 calls;
each call offers **approve**, **edit** and **reject**, and an edit is checked against the tool's
argument schema when the tool definitions are given), and returns the `DeferredToolResults` to
resume the run with, under each tool call id:

- approve: `True`: the tool runs;
- edit: `ToolApproved(override_args=<edited args>)`: the tool runs with the edited arguments;
- reject: `ToolDenied(message)` with the person's message (pydantic-ai's default text,
  "The tool call was denied.", when they gave none): the tool does not run and the model reads
  the message as the call's result;
- the person **declines** the whole request: every call is `ToolDenied("The person declined.")`;
- the request's **deadline** (`timeout_s`) passes: every call is `ToolDenied("No answer in time.")`;
- a request withdrawn by someone else raises `RequestWithdrawn`; one the gateway refuses raises
  `ApiError`.

Calls for external execution (`requests.calls`) are left to the host. The outcomes are
acknowledged only once the results are built.

`GatewayApprovals` is the same inside a live run: a capability whose `handle_deferred_tool_calls`
asks the person while the run waits, so the run goes on without returning
`DeferredToolRequests`.

Needs `pydantic-ai-slim` (`pip install 'askgate[pydantic-ai]'`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, cast

import httpx
from pydantic_ai import DeferredToolRequests, DeferredToolResults, RunContext, ToolApproved, ToolDenied
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import AgentDepsT, DeferredToolApprovalResult, Tool, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset

from ._approval import DECLINED_MESSAGE, TIMED_OUT_MESSAGE, ApprovalCall, Asking, CallDecision, Calls, DefaultDecision, resolve_refs
from ._errors import AskgateError
from ._http import PostedRequest

__all__ = [
    "DECLINED_MESSAGE",
    "TIMED_OUT_MESSAGE",
    "GatewayApprovals",
    "ToolDefinitions",
    "approval_result",
    "collect_approvals",
    "collect_approvals_sync",
    "tool_definitions",
]

ToolDefinitions = (
    RunContext[Any]
    | AbstractAgent[Any, Any]
    | Mapping[str, ToolDefinition]
    | Iterable[ToolDefinition | Tool[Any]]
)
"""Where the tools' argument schemas are found: a run's `RunContext` (its tool manager), an
`Agent` (the function tools registered on it), or `ToolDefinition`s / `Tool`s."""


def _agent_tools(agent: AbstractAgent[Any, Any]) -> dict[str, ToolDefinition]:
    found: dict[str, ToolDefinition] = {}

    def visit(toolset: AbstractToolset[Any]) -> None:
        if isinstance(toolset, FunctionToolset):
            for tool in toolset.tools.values():
                found.setdefault(tool.name, tool.tool_def)

    for toolset in agent.toolsets:
        toolset.apply(visit)
    return found


def tool_definitions(tools: ToolDefinitions | None, names: Iterable[str] = ()) -> dict[str, ToolDefinition]:
    """The `ToolDefinition` of each tool `tools` knows, by name (for a `RunContext`, of `names`)."""
    if tools is None:
        return {}
    if isinstance(tools, RunContext):
        manager = tools.tool_manager
        if manager is None or manager.tools is None:
            return _agent_tools(tools.agent) if tools.agent is not None else {}
        found = {name: manager.get_tool_def(name) for name in names}
        return {name: tool_def for name, tool_def in found.items() if tool_def is not None}
    if isinstance(tools, AbstractAgent):
        return _agent_tools(tools)
    if isinstance(tools, Mapping):
        return dict(cast(Mapping[str, ToolDefinition], tools))
    result: dict[str, ToolDefinition] = {}
    for tool in tools:
        tool_def = tool.tool_def if isinstance(tool, Tool) else tool
        result[tool_def.name] = tool_def
    return result


def _approval_call(part: ToolCallPart, tool_def: ToolDefinition | None) -> ApprovalCall:
    schema = resolve_refs(tool_def.parameters_json_schema) if tool_def is not None else None
    return ApprovalCall(
        name=part.tool_name,
        args=part.args_as_dict(),
        description=tool_def.description if tool_def is not None and tool_def.description else None,
        args_schema=schema,
        decisions=("approve", "edit", "reject"),
    )


def approval_result(decision: CallDecision) -> bool | DeferredToolApprovalResult:
    """The pydantic-ai approval result for one decision: `True`, `ToolApproved(override_args=...)`
    or `ToolDenied(message)`."""
    if decision.type == "approve":
        return True
    if decision.type == "edit":
        return ToolApproved(override_args=dict(decision.args or {}))
    if decision.type == "reject":
        return ToolDenied(decision.message) if decision.message else ToolDenied()
    raise AskgateError(f"the gateway answered an approval with {decision.type!r}, which pydantic-ai cannot take")


def _calls(requests: DeferredToolRequests, tools: ToolDefinitions | None) -> Calls[DeferredToolResults]:
    """The calls of `requests.approvals` to put to the person, and the results they decide."""
    defs = tool_definitions(tools, {part.tool_name for part in requests.approvals})

    def convert(decisions: list[CallDecision]) -> DeferredToolResults:
        approvals: dict[str, bool | DeferredToolApprovalResult] = {
            part.tool_call_id: approval_result(decision)
            for part, decision in zip(requests.approvals, decisions, strict=True)
        }
        return DeferredToolResults(approvals=approvals)

    keyed = [(part.tool_call_id, _approval_call(part, defs.get(part.tool_name))) for part in requests.approvals]
    return Calls(keyed, convert)


async def collect_approvals(
    url: str,
    session: str,
    requests: DeferredToolRequests,
    *,
    tools: ToolDefinitions | None = None,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.AsyncClient | None = None,
) -> DeferredToolResults:
    """Ask a person about every call in `requests.approvals` and return the
    `DeferredToolResults` to resume the run with.

    ```python
    paused = await agent.run("...")            # output_type=[str, DeferredToolRequests]
    results = await collect_approvals(URL, "thread-1", paused.output, tools=agent)
    resumed = await agent.run(message_history=paused.all_messages(), deferred_tool_results=results)
    ```

    `tools` (the `Agent`, a `RunContext`, or `ToolDefinition`s) supplies each tool's description
    and argument schema. `timeout_s` gives the request a gateway deadline; `wait` bounds the wait
    here (`NotAnswered`, nothing acknowledged: call again to collect the same request).
    `on_posted` is called with the posted requests before the wait. Cancelling the call
    withdraws the request."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    return await asking.ask(_calls(requests, tools), client)


def collect_approvals_sync(
    url: str,
    session: str,
    requests: DeferredToolRequests,
    *,
    tools: ToolDefinitions | None = None,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
    default: DefaultDecision | None = None,
    rules: bool = True,
    client: httpx.Client | None = None,
) -> DeferredToolResults:
    """`collect_approvals`, blocking."""
    asking = Asking(url, session, key=key, title=title, timeout_s=timeout_s, wait=wait, answerers=answerers, on_posted=on_posted, default=default, rules=rules)
    return asking.ask_sync(_calls(requests, tools), client)


@dataclass
class GatewayApprovals(AbstractCapability[AgentDepsT]):
    """A capability that puts a run's approval-needing tool calls to a person while the run waits.

    ```python
    agent = Agent(model, capabilities=[GatewayApprovals(URL, "thread-1", on_posted=show_link)])
    ```

    Its `handle_deferred_tool_calls` asks about `requests.approvals` as `collect_approvals` does,
    with the run's own tool definitions, and resolves them in the run: the approved and edited
    calls run, the rejected ones return the person's message to the model. Calls for external
    execution are left to the next capability (or the run's `DeferredToolRequests` output).
    """

    url: str
    session: str
    _: KW_ONLY
    key: str | None = None
    title: str | None = None
    timeout_s: float | None = None
    """The gateway deadline of each request (its calls are then denied with `TIMED_OUT_MESSAGE`)."""
    wait: float | None = None
    answerers: Sequence[str] | None = None
    on_posted: Callable[[list[PostedRequest]], None] | None = None
    default: DefaultDecision | None = None
    """What every call is decided as if nobody answers before `timeout_s`."""
    rules: bool = True
    """`False`: every call is asked, whatever approvals people had the gateway remember."""

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def handle_deferred_tool_calls(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        requests: DeferredToolRequests,
    ) -> DeferredToolResults | None:
        if not requests.approvals:
            return None
        return await collect_approvals(
            self.url,
            self.session,
            DeferredToolRequests(approvals=list(requests.approvals), metadata=dict(requests.metadata)),
            tools=ctx,
            key=self.key,
            title=self.title,
            timeout_s=self.timeout_s,
            wait=self.wait,
            answerers=self.answerers,
            on_posted=self.on_posted,
            default=self.default,
            rules=self.rules,
        )
