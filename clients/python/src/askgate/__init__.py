"""askgate: let AI agents ask people structured questions through an askgate gateway.

- `Client`: the agent WebSocket (`/v1/agent`), framework-free, reconnecting.
- `GatewayAnswerer`: an `Answerer` for pydantic-ai-harness's `AskUser` (`askgate.harness`).
- `post_deferred` / `collect_results`: paused pydantic-ai runs over the HTTP API.
- `answer_interrupts` and friends: LangGraph `ask_user` interrupts (`askgate.langgraph`).

Tool-call approvals (the `approval` dialect), one module per framework, imported by name:

- `askgate.openai_agents.approve_interruptions`: OpenAI Agents SDK `ToolApprovalItem`s.
- `askgate.langchain.answer_hitl`: LangChain `HumanInTheLoopMiddleware` interrupts.
- `askgate.pydantic_ai.collect_approvals` / `GatewayApprovals`: pydantic-ai deferred approvals.
- `askgate.agui.resume`: AG-UI `tool_call` interrupts.
- `askgate.adk.answer_requests`: Google ADK's tool confirmations (and workflow `RequestInput`s,
  as forms).

Other framework pauses:

- `askgate.crewai.GatewayFeedback`: the feedback provider of CrewAI Flows' `@human_feedback`.
- `askgate.langgraph.ServerThread`: a LangGraph Agent Server thread the gateway resumes itself
  when a person answers (an ask's `callback`).

And callbacks a framework calls in place, each in its own module too:

- `askgate.mcp.elicitation_callback`: MCP elicitations, form and URL mode (the `form` dialect).
- `askgate.claude.can_use_tool`: the Claude Agent SDK's `AskUserQuestion` (the `claude`
  dialect), and its other tool calls as approvals if asked.

The framework integrations load on first use, so `import askgate` imports no framework.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._client import Backoff, Client
from ._errors import (
    ApiError,
    AskgateError,
    AskRejected,
    ClientClosed,
    FieldError,
    Forbidden,
    GatewayClosed,
    NotAnswered,
    RequestWithdrawn,
)
from ._http import PostedRequest
from ._wire import Opened, Outcome, OutcomeKind, agent_url, http_base

if TYPE_CHECKING:
    from .harness import (
        GatewayAnswerer,
        ack_posted,
        ack_posted_sync,
        collect_results,
        collect_results_sync,
        post_deferred,
        post_deferred_sync,
    )
    from .langgraph import (
        answer_interrupts,
        answer_interrupts_sync,
        collect_resume,
        collect_resume_sync,
        is_ask_user,
        post_interrupts,
        post_interrupts_sync,
    )

__version__ = "0.1.0"

_LAZY = {
    "GatewayAnswerer": "harness",
    "ack_posted": "harness",
    "ack_posted_sync": "harness",
    "collect_results": "harness",
    "collect_results_sync": "harness",
    "post_deferred": "harness",
    "post_deferred_sync": "harness",
    "answer_interrupts": "langgraph",
    "answer_interrupts_sync": "langgraph",
    "collect_resume": "langgraph",
    "collect_resume_sync": "langgraph",
    "is_ask_user": "langgraph",
    "post_interrupts": "langgraph",
    "post_interrupts_sync": "langgraph",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'askgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ApiError",
    "AskRejected",
    "AskgateError",
    "Backoff",
    "Client",
    "ClientClosed",
    "FieldError",
    "Forbidden",
    "GatewayAnswerer",
    "GatewayClosed",
    "NotAnswered",
    "Opened",
    "Outcome",
    "OutcomeKind",
    "PostedRequest",
    "RequestWithdrawn",
    "ack_posted",
    "ack_posted_sync",
    "agent_url",
    "answer_interrupts",
    "answer_interrupts_sync",
    "collect_resume",
    "collect_resume_sync",
    "collect_results",
    "collect_results_sync",
    "http_base",
    "is_ask_user",
    "post_deferred",
    "post_deferred_sync",
    "post_interrupts",
    "post_interrupts_sync",
]
