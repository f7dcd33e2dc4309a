"""OpenAI Agents SDK: a run paused on `needs_approval` tools, decided by a person in a headless
tab through the gateway, resumed with the `RunState` `approve_interruptions` returns."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest
from agents import Agent, RunConfig, Runner, RunState, function_tool
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage
from approvals import Tabs, approve, decide, edit, person, reject
from gateway import Gateway

from askgate import PostedRequest, RequestWithdrawn
from askgate.openai_agents import (
    DECLINED_MESSAGE,
    TIMED_OUT_MESSAGE,
    approve_interruptions,
    approve_interruptions_sync,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

NO_TRACING = RunConfig(tracing_disabled=True)


class FakeModel(Model):
    """Calls `calls` on its first turn, then answers with the outputs it was given."""

    def __init__(self, calls: list[tuple[str, dict[str, Any], str]]) -> None:
        self.calls = calls
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        items: list[Any] = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        if len(self.inputs) == 1 and self.calls:
            output = [function_call(name, args, call_id=call_id) for name, args, call_id in self.calls]
        else:
            outputs = [item["output"] for item in items if item.get("type") == "function_call_output"]
            output = [assistant_message("outputs: " + " | ".join(map(str, outputs)))]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def outputs(self) -> dict[str, Any]:
        """The tool outputs the model read on its last turn, by call id."""
        return {
            item["call_id"]: item["output"]
            for item in self.inputs[-1]
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        }


class World:
    """A dba agent with two tools that need approval, and what they ran."""

    def __init__(self, *calls: tuple[str, dict[str, Any], str]) -> None:
        self.sql: list[str] = []
        self.mail: list[tuple[str, str]] = []

        @function_tool(needs_approval=True)
        def run_sql(query: str) -> str:
            """Run a SQL statement."""
            self.sql.append(query)
            return f"ran {query}"

        @function_tool(needs_approval=True)
        def send_email(to: str, body: str) -> str:
            """Send an email."""
            self.mail.append((to, body))
            return f"sent to {to}"

        self.model = FakeModel(list(calls) or [("run_sql", {"query": "DROP TABLE users"}, "call_1")])
        self.agent = Agent(name="dba", model=self.model, tools=[run_sql, send_email])

    async def paused(self) -> Any:
        result = await Runner.run(self.agent, "Clean up", run_config=NO_TRACING)
        assert result.interruptions, "the run should pause on the approval"
        assert self.sql == [] and self.mail == []
        return result

    async def resume(self, state: RunState[Any]) -> Any:
        result = await Runner.run(self.agent, state, run_config=NO_TRACING)
        assert not result.interruptions
        return result


SQL = ("run_sql", {"query": "DROP TABLE users"}, "call_1")
MAIL = ("send_email", {"to": "ops@example.com", "body": "done"}, "call_2")


async def test_approved_call_runs(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL)
    result = await world.paused()
    posted: list[PostedRequest] = []
    deciding = asyncio.ensure_future(
        approve_interruptions(result, url=gateway.url, session=session, title="dba", on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    assert shown["title"] == "dba"
    [call] = shown["calls"]
    assert call["name"] == "run_sql"
    assert call["args"] == {"query": "DROP TABLE users"}
    assert call["description"] == "Run a SQL statement."
    assert call["args_schema"]["properties"]["query"]["type"] == "string"
    assert call["decisions"] == ["approve", "reject"]
    # The SDK cannot edit a call, so the gateway refuses an edit.
    await tab.answer(shown["id"], {"decisions": [edit({"query": "SELECT 1"})]}, wait=False)
    refused = await tab.next_rejection()
    assert refused["errors"][0]["path"] == "response.decisions[0].type"
    await decide(tab, shown, approve())
    state = await asyncio.wait_for(deciding, 15)
    assert isinstance(state, RunState)

    final = await world.resume(state)
    assert world.sql == ["DROP TABLE users"]
    assert world.model.outputs() == {"call_1": "ran DROP TABLE users"}
    assert final.final_output == "outputs: ran DROP TABLE users"


async def test_rejected_call_does_not_run_and_the_model_reads_the_message(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    world = World(SQL, MAIL)
    result = await world.paused()
    assert len(result.interruptions) == 2
    posted: list[PostedRequest] = []
    deciding = asyncio.ensure_future(
        approve_interruptions(result, url=gateway.url, session=session, on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    assert len(posted) == 1, "both calls go in one request"
    assert [c["name"] for c in shown["calls"]] == ["run_sql", "send_email"]
    await decide(tab, shown, reject("Not on production."), approve())
    final = await world.resume(await asyncio.wait_for(deciding, 15))
    assert world.sql == []
    assert world.mail == [("ops@example.com", "done")]
    assert world.model.outputs() == {"call_1": "Not on production.", "call_2": "sent to ops@example.com"}
    assert final.final_output == "outputs: Not on production. | sent to ops@example.com"


async def test_declined_rejects_every_call(gateway: Gateway, session: str, tabs: Tabs) -> None:
    world = World(SQL, MAIL)
    result = await world.paused()
    posted: list[PostedRequest] = []
    deciding = asyncio.ensure_future(
        approve_interruptions(result, url=gateway.url, session=session, on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    resolved = await tab.decline(shown["id"])
    assert resolved["outcome"] == "declined"
    await world.resume(await asyncio.wait_for(deciding, 15))
    assert world.sql == [] and world.mail == []
    assert world.model.outputs() == {"call_1": DECLINED_MESSAGE, "call_2": DECLINED_MESSAGE}
    assert DECLINED_MESSAGE == "The person declined."


async def test_timed_out_rejects_every_call(gateway: Gateway, session: str) -> None:
    world = World(SQL)
    result = await world.paused()
    state = await approve_interruptions(result, url=gateway.url, session=session, timeout_s=0.5, wait=10)
    await world.resume(state)
    assert world.sql == []
    assert world.model.outputs() == {"call_1": TIMED_OUT_MESSAGE}
    assert TIMED_OUT_MESSAGE == "No answer in time."


async def test_a_stored_state_is_decided_and_resumed_with_the_blocking_twin(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    """The paused run is stored as text and loaded back (another process could); the blocking
    helper decides it while a tab answers."""
    world = World(SQL)
    stored = (await world.paused()).to_state().to_string()
    state = await RunState.from_string(world.agent, stored)
    viewer = gateway.viewer_url(session)
    tab = await tabs(viewer)

    async def answer() -> None:
        shown = await tab.next_request()
        assert json.dumps(shown["calls"][0]["args"]) == '{"query": "DROP TABLE users"}'
        await decide(tab, shown, reject("Use a migration."))

    answering = asyncio.ensure_future(answer())
    decided = await anyio.to_thread.run_sync(
        lambda: approve_interruptions_sync(state, url=gateway.url, session=session, wait=15)
    )
    await asyncio.wait_for(answering, 5)
    assert decided is state
    await world.resume(decided)
    assert world.sql == []
    assert world.model.outputs() == {"call_1": "Use a migration."}


async def test_withdrawn_raises(gateway: Gateway, session: str, tabs: Tabs) -> None:
    import httpx

    world = World(SQL)
    result = await world.paused()
    posted: list[PostedRequest] = []
    deciding = asyncio.ensure_future(
        approve_interruptions(result, url=gateway.url, session=session, on_posted=posted.extend)
    )
    _, shown = await person(tabs, posted)
    async with httpx.AsyncClient() as client:
        response = await client.delete(f"{gateway.url}/v1/sessions/{session}/requests/{shown['id']}")
        assert response.status_code == 200, response.text
    with pytest.raises(RequestWithdrawn):
        await asyncio.wait_for(deciding, 15)


async def test_no_interruptions_asks_nothing() -> None:
    world = World(SQL)
    done = await Runner.run(
        Agent(name="idle", model=FakeModel([]), tools=[]), "hello", run_config=NO_TRACING
    )
    state = await approve_interruptions(done, url="http://127.0.0.1:9", session="nobody")
    assert isinstance(state, RunState)
    assert world.sql == []
