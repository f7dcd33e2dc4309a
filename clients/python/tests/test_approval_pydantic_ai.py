"""pydantic-ai: tools with `requires_approval=True`, decided by a person in a headless tab through
the gateway: a paused run resumed with the `DeferredToolResults` `collect_approvals` builds, and a
live run whose `GatewayApprovals` capability resolves them inside the run."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from approvals import Tabs, Tools, approve, decide, decided, edit, person, reject
from gateway import Gateway
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from scripted import tool_return_contents

from askgate import NotAnswered, PostedRequest
from askgate.pydantic_ai import (
    DECLINED_MESSAGE,
    TIMED_OUT_MESSAGE,
    GatewayApprovals,
    collect_approvals,
    collect_approvals_sync,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SQL = ToolCallPart("run_sql", {"query": "DROP TABLE users"}, tool_call_id="call_1")
MAIL = ToolCallPart("send_email", {"to": "ops@example.com", "body": "done"}, tool_call_id="call_2")


class World(Tools):
    """An agent whose model calls `calls` once, then says what the tools returned."""

    def __init__(self, *calls: ToolCallPart, capabilities: list[Any] | None = None) -> None:
        super().__init__()
        self.calls = list(calls) or [SQL]
        self.requests: list[list[ModelMessage]] = []
        self.agent: Agent[None, str | DeferredToolRequests] = Agent(
            FunctionModel(self.respond),
            output_type=[str, DeferredToolRequests],
            capabilities=capabilities or [],
        )
        for tool in (self.run_sql, self.send_email):
            self.agent.tool_plain(requires_approval=True)(tool)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        if len(self.requests) == 1:
            return ModelResponse(parts=list(self.calls))
        return ModelResponse(parts=[TextPart("done")])

    def tool_returns(self) -> dict[str, Any]:
        """What the model read for each call on its last turn, by call id."""
        return tool_return_contents(self.requests[-1])

    async def paused(self) -> Any:
        result = await self.agent.run("Clean up")
        assert isinstance(result.output, DeferredToolRequests)
        assert self.sql == [] and self.mail == []
        return result

    async def resume(self, paused: Any, results: DeferredToolResults) -> Any:
        result = await self.agent.run(message_history=paused.all_messages(), deferred_tool_results=results)
        assert result.output == "done"
        return result


async def collect(
    tabs: Tabs, gateway: Gateway, session: str, requests: DeferredToolRequests, *decisions: dict[str, Any], **kwargs: Any
) -> tuple[DeferredToolResults, dict[str, Any]]:
    return await decided(
        tabs, lambda on_posted: collect_approvals(gateway.url, session, requests, on_posted=on_posted, **kwargs), *decisions
    )


async def test_approved_call_runs(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL)
    paused = await world.paused()
    results, shown = await collect(tabs, gateway, session, paused.output, approve(), tools=world.agent)
    [call] = shown["calls"]
    assert call["name"] == "run_sql" and call["args"] == {"query": "DROP TABLE users"}
    assert call["decisions"] == ["approve", "edit", "reject"]
    assert call["description"] == "Run a SQL statement."
    assert call["args_schema"]["properties"]["query"]["type"] == "string"
    assert call["edit_check"] == "schema"
    assert results.approvals == {"call_1": True}
    await world.resume(paused, results)
    assert world.sql == ["DROP TABLE users"]
    assert world.tool_returns() == {"call_1": "ran DROP TABLE users"}


async def test_edited_call_runs_with_the_edited_args(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL)
    paused = await world.paused()
    posted: list[PostedRequest] = []
    collecting = asyncio.ensure_future(
        collect_approvals(gateway.url, session, paused.output, tools=world.agent, on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    # The tool's own schema checks the edit: `limit` is an integer.
    await tab.answer(shown["id"], {"decisions": [edit({"query": "SELECT 1", "limit": "1"})]}, wait=False)
    refused = await tab.next_rejection()
    assert refused["errors"][0]["path"] == "response.decisions[0].args.limit", refused
    await decide(tab, shown, edit({"query": "SELECT 1", "limit": 1}))
    results = await asyncio.wait_for(collecting, 15)
    assert results.approvals == {"call_1": ToolApproved(override_args={"query": "SELECT 1", "limit": 1})}
    await world.resume(paused, results)
    assert world.sql == ["SELECT 1"]
    assert world.tool_returns() == {"call_1": "ran SELECT 1"}


async def test_rejected_call_does_not_run_and_the_model_reads_the_message(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    world = World(SQL, MAIL)
    paused = await world.paused()
    results, shown = await collect(tabs, gateway, session, paused.output, reject("Not on production."), reject())
    assert [c["name"] for c in shown["calls"]] == ["run_sql", "send_email"]
    assert "args_schema" not in shown["calls"][0]  # no tools= given
    assert results.approvals == {"call_1": ToolDenied("Not on production."), "call_2": ToolDenied()}
    await world.resume(paused, results)
    assert world.sql == [] and world.mail == []
    assert world.tool_returns() == {"call_1": "Not on production.", "call_2": "The tool call was denied."}


async def test_declined_denies_every_call(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, MAIL)
    paused = await world.paused()
    posted: list[PostedRequest] = []
    collecting = asyncio.ensure_future(collect_approvals(gateway.url, session, paused.output, on_posted=posted.extend))
    tab, shown = await person(tabs, posted)
    assert (await tab.decline(shown["id"]))["outcome"] == "declined"
    results = await asyncio.wait_for(collecting, 15)
    assert results.approvals == {"call_1": ToolDenied(DECLINED_MESSAGE), "call_2": ToolDenied(DECLINED_MESSAGE)}
    await world.resume(paused, results)
    assert world.sql == [] and world.mail == []
    assert world.tool_returns() == {"call_1": DECLINED_MESSAGE, "call_2": DECLINED_MESSAGE}


async def test_timed_out_denies(gateway: Gateway, session: str) -> None:
    world = World(SQL)
    paused = await world.paused()
    results = await collect_approvals(gateway.url, session, paused.output, timeout_s=0.5, wait=10)
    assert results.approvals == {"call_1": ToolDenied(TIMED_OUT_MESSAGE)}
    await world.resume(paused, results)
    assert world.sql == []
    assert world.tool_returns() == {"call_1": TIMED_OUT_MESSAGE}


async def test_a_default_approval_runs_the_call_when_nobody_answers(gateway: Gateway, session: str) -> None:
    """`default="approve"`: at the deadline the gateway approves on nobody's behalf, and the
    resumed run executes the tool as if a person had approved it."""
    world = World(SQL)
    paused = await world.paused()
    results = await collect_approvals(gateway.url, session, paused.output, timeout_s=0.5, wait=10, default="approve")
    assert results.approvals == {"call_1": True}
    await world.resume(paused, results)
    assert world.sql == ["DROP TABLE users"]


async def test_a_default_needs_a_deadline_and_a_decision(gateway: Gateway, session: str) -> None:
    world = World(SQL)
    paused = await world.paused()
    with pytest.raises(ValueError, match="needs timeout_s"):
        await collect_approvals(gateway.url, session, paused.output, default="approve")
    with pytest.raises(ValueError, match='"approve", "reject" or None'):
        await collect_approvals(gateway.url, session, paused.output, timeout_s=5, default="maybe")  # type: ignore[arg-type]


async def test_wait_runs_out_then_the_same_request_is_collected(gateway: Gateway, session: str, tabs: Tabs) -> None:
    """Nothing is acknowledged when `wait` runs out; asking again finds the same request (its id
    comes from the tool call ids), with the answer given meanwhile."""
    world = World(SQL)
    paused = await world.paused()
    posted: list[PostedRequest] = []
    with pytest.raises(NotAnswered):
        await collect_approvals(gateway.url, session, paused.output, wait=0.2, on_posted=posted.extend)
    tab = await tabs(posted[0].viewer_url)
    shown = await tab.next_request()
    await decide(tab, shown, approve())
    again: list[PostedRequest] = []
    results = await collect_approvals(gateway.url, session, paused.output, wait=10, on_posted=again.extend)
    assert again[0].id == posted[0].id
    assert results.approvals == {"call_1": True}


async def test_blocking_twin(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL)
    paused = await world.paused()
    tab = await tabs(gateway.viewer_url(session))

    async def answer() -> None:
        shown = await tab.next_request()
        await decide(tab, shown, edit({"query": "SELECT 2"}))

    answering = asyncio.ensure_future(answer())
    results = await anyio.to_thread.run_sync(
        lambda: collect_approvals_sync(gateway.url, session, paused.output, tools=world.agent, wait=15)
    )
    await asyncio.wait_for(answering, 5)
    await world.resume(paused, results)
    assert world.sql == ["SELECT 2"]


async def test_more_than_twenty_calls_go_in_several_requests(gateway: Gateway, session: str, tabs: Tabs) -> None:
    calls = [ToolCallPart("run_sql", {"query": f"SELECT {n}"}, tool_call_id=f"call_{n}") for n in range(23)]
    requests = DeferredToolRequests(approvals=calls)
    posted: list[PostedRequest] = []
    collecting = asyncio.ensure_future(collect_approvals(gateway.url, session, requests, on_posted=posted.extend))
    tab, first = await person(tabs, posted)
    second = await tab.next_request()
    assert len(posted) == 2
    assert [len(first["calls"]), len(second["calls"])] == [20, 3]
    await decide(tab, first, *[approve()] * 20)
    await decide(tab, second, reject("no"), approve(), reject())
    results = await asyncio.wait_for(collecting, 15)
    assert list(results.approvals) == [f"call_{n}" for n in range(23)]
    assert results.approvals["call_19"] is True
    assert results.approvals["call_20"] == ToolDenied("no")
    assert results.approvals["call_22"] == ToolDenied()


# ---- live: the capability ----------------------------------------------------------------


async def test_capability_resolves_approvals_inside_the_run(gateway: Gateway, session: str, tabs: Tabs) -> None:
    posted: list[PostedRequest] = []
    world = World(SQL, MAIL, capabilities=[GatewayApprovals(gateway.url, session, title="live", on_posted=posted.extend)])
    run = asyncio.ensure_future(world.agent.run("Clean up"))
    tab, shown = await person(tabs, posted)
    assert shown["title"] == "live"
    # The run's own tool definitions give the schema.
    assert shown["calls"][0]["args_schema"]["properties"]["limit"]["type"] == "integer"
    assert shown["calls"][0]["description"] == "Run a SQL statement."
    assert world.sql == [] and world.mail == []
    await decide(tab, shown, edit({"query": "SELECT 1"}), reject("Not now."))
    result = await asyncio.wait_for(run, 15)
    assert result.output == "done"  # no DeferredToolRequests: the run went on
    assert world.sql == ["SELECT 1"] and world.mail == []
    assert world.tool_returns() == {"call_1": "ran SELECT 1", "call_2": "Not now."}


async def test_capability_timeout_denies_inside_the_run(gateway: Gateway, session: str) -> None:
    world = World(SQL, capabilities=[GatewayApprovals(gateway.url, session, timeout_s=0.5)])
    result = await asyncio.wait_for(world.agent.run("Clean up"), 15)
    assert result.output == "done"
    assert world.sql == []
    assert world.tool_returns() == {"call_1": TIMED_OUT_MESSAGE}


async def test_cancelling_the_run_withdraws_the_request(gateway: Gateway, session: str, tabs: Tabs) -> None:
    posted: list[PostedRequest] = []
    world = World(SQL, capabilities=[GatewayApprovals(gateway.url, session, on_posted=posted.extend)])
    run = asyncio.ensure_future(world.agent.run("Clean up"))
    tab, shown = await person(tabs, posted)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    resolved = await tab.wait_resolved(shown["id"])
    assert resolved["outcome"] == "withdrawn"
    assert world.sql == []
