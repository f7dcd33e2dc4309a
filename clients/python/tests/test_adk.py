"""Google ADK: runs paused on tool confirmations (`adk_request_confirmation`) and on workflow
`RequestInput`s (`adk_request_input`), answered by a person in a headless tab through the
gateway, resumed with the `function_response` parts `answer_requests` returns. The agent's model
is ADK's own test model (`MockModel`, scripted turns); the runner, session service and
workflows are ADK's."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import anyio
import pytest
from approvals import approve, decide, person, posted_request, reject
from gateway import Gateway
from google.adk.agents import LlmAgent
from google.adk.cli.agent_test_runner import MockModel
from google.adk.events import Event, RequestInput
from google.adk.runners import InMemoryRunner
from google.adk.tools.function_tool import FunctionTool
from google.adk.workflow import START, FunctionNode, Workflow
from google.genai import types
from pydantic import BaseModel, Field
from tab import Tabs

from askgate import ApiError, PostedRequest, RequestWithdrawn
from askgate.adk import NoAnswer, answer_requests, answer_requests_sync, pending_requests

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

USER = "person"


class Run:
    """An ADK runner over one in-memory session, and every event it yielded."""

    def __init__(self, root: Any) -> None:
        kind = "node" if isinstance(root, Workflow) else "agent"
        self.runner = InMemoryRunner(app_name="askgate", **{kind: root})
        self.events: list[Event] = []
        self.session_id = ""

    async def start(self, text: str = "Go") -> list[Event]:
        session = await self.runner.session_service.create_session(app_name="askgate", user_id=USER)
        self.session_id = session.id
        return await self.send(types.Content(role="user", parts=[types.Part(text=text)]))

    async def send(self, message: types.Content) -> list[Event]:
        events = [
            event
            async for event in self.runner.run_async(user_id=USER, session_id=self.session_id, new_message=message)
        ]
        self.events.extend(events)
        return events

    async def resume(self, parts: list[types.Part]) -> list[Event]:
        return await self.send(types.Content(role="user", parts=parts))

    async def stored_events(self) -> list[Event]:
        session = await self.runner.session_service.get_session(app_name="askgate", user_id=USER, session_id=self.session_id)
        assert session is not None
        return list(session.events)


class Dba:
    """An LLM agent whose two tools need confirmation, driven by ADK's MockModel: its first turn
    calls `calls`, its second says it is done; and what the tools ran."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.sql: list[str] = []
        self.mail: list[tuple[str, str]] = []

        def run_sql(query: str) -> str:
            """Run a SQL statement."""
            self.sql.append(query)
            return f"ran {query}"

        def send_email(to: str, body: str) -> str:
            """Send an email."""
            self.mail.append((to, body))
            return f"sent to {to}"

        turns = [
            types.Content(
                role="model",
                parts=[types.Part(function_call=types.FunctionCall(name=name, args=args)) for name, args in calls],
            ),
            types.Content(role="model", parts=[types.Part(text="done")]),
        ]
        self.model = MockModel.create(turns)
        self.agent = LlmAgent(
            name="dba",
            model=self.model,
            tools=[
                FunctionTool(run_sql, require_confirmation=True),
                FunctionTool(send_email, require_confirmation=True),
            ],
        )
        self.run = Run(self.agent)

    async def paused(self) -> list[Event]:
        events = await self.run.start("Clean up")
        assert [call.name for call in pending_requests(events)] == ["adk_request_confirmation"] * len(
            self.model.responses[0].content.parts  # type: ignore[union-attr,arg-type]
        )
        assert self.sql == [] and self.mail == []
        return events

    def tool_outputs(self) -> dict[str, Any]:
        """What the model read as each tool's output on its last turn, by tool."""
        last = self.model.requests[-1].contents
        return {
            part.function_response.name: part.function_response.response
            for content in last
            for part in content.parts or []
            if part.function_response is not None and part.function_response.name != "adk_request_confirmation"
        }


SQL = ("run_sql", {"query": "DROP TABLE users"})
MAIL = ("send_email", {"to": "ops@example.com", "body": "done"})


async def test_an_approved_confirmation_runs_the_tool(gateway: Gateway, session: str, tabs: Tabs) -> None:
    dba = Dba(SQL)
    events = await dba.paused()
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(
        answer_requests(events, url=gateway.url, session=session, agent=dba.agent, title="dba", on_posted=posted.extend)
    )
    tab, shown = await person(tabs, posted)
    assert shown["title"] == "dba"
    [call] = shown["calls"]
    assert call["name"] == "run_sql"
    assert call["args"] == {"query": "DROP TABLE users"}
    assert call["description"] == "Run a SQL statement."
    assert call["decisions"] == ["approve", "reject"]
    await decide(tab, shown, approve())
    parts = await asyncio.wait_for(answering, 15)
    [part] = parts
    assert part.function_response is not None
    assert part.function_response.name == "adk_request_confirmation"
    assert part.function_response.response == {"confirmed": True}

    await dba.run.resume(parts)
    assert dba.sql == ["DROP TABLE users"]
    assert dba.tool_outputs() == {"run_sql": {"result": "ran DROP TABLE users"}}
    assert pending_requests(await dba.run.stored_events()) == []


async def test_a_rejected_call_does_not_run_and_the_other_does(gateway: Gateway, session: str, tabs: Tabs) -> None:
    dba = Dba(SQL, MAIL)
    events = await dba.paused()
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    tab, shown = await person(tabs, posted)
    assert len(posted) == 1, "both confirmations go in one request"
    assert [c["name"] for c in shown["calls"]] == ["run_sql", "send_email"]
    assert "description" not in shown["calls"][0], "without agent= there is no tool description, and ADK's own hint is not shown"
    await decide(tab, shown, reject("Not on production."), approve())
    parts = await asyncio.wait_for(answering, 15)
    assert [p.function_response.response for p in parts if p.function_response] == [{"confirmed": False}, {"confirmed": True}]

    await dba.run.resume(parts)
    assert dba.sql == []
    assert dba.mail == [("ops@example.com", "done")]
    assert dba.tool_outputs() == {
        "run_sql": {"error": "This tool call is rejected."},
        "send_email": {"result": "sent to ops@example.com"},
    }


async def test_a_decline_rejects_every_call(gateway: Gateway, session: str, tabs: Tabs) -> None:
    dba = Dba(SQL, MAIL)
    events = await dba.paused()
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    tab, shown = await person(tabs, posted)
    resolved = await tab.decline(shown["id"])
    assert resolved["outcome"] == "declined"
    await dba.run.resume(await asyncio.wait_for(answering, 15))
    assert dba.sql == [] and dba.mail == []
    assert dba.tool_outputs() == {
        "run_sql": {"error": "This tool call is rejected."},
        "send_email": {"error": "This tool call is rejected."},
    }


async def test_a_passed_deadline_rejects_unless_the_default_approves(gateway: Gateway, session: str) -> None:
    dba = Dba(SQL)
    parts = await answer_requests(await dba.paused(), url=gateway.url, session=session, timeout_s=0.5, wait=10)
    await dba.run.resume(parts)
    assert dba.sql == []
    assert dba.tool_outputs() == {"run_sql": {"error": "This tool call is rejected."}}

    dba = Dba(SQL)
    parts = await answer_requests(
        await dba.paused(), url=gateway.url, session=session, timeout_s=0.5, default="approve", wait=10
    )
    await dba.run.resume(parts)
    assert dba.sql == ["DROP TABLE users"]


async def test_the_blocking_twin_answers_the_stored_session(gateway: Gateway, session: str, tabs: Tabs) -> None:
    """The paused session's events, read back from the session service (as another process
    would), answered by the blocking helper while a tab rejects."""
    dba = Dba(SQL)
    await dba.paused()
    stored = await dba.run.stored_events()
    tab = await tabs(gateway.viewer_url(session))

    async def answer() -> None:
        shown = await tab.next_request()
        assert shown["dialect"] == "approval"
        await decide(tab, shown, reject())

    answering = asyncio.ensure_future(answer())
    parts = await anyio.to_thread.run_sync(lambda: answer_requests_sync(stored, url=gateway.url, session=session, wait=15))
    await asyncio.wait_for(answering, 5)
    await dba.run.resume(parts)
    assert dba.sql == []


async def test_a_withdrawn_request_raises(gateway: Gateway, session: str, tabs: Tabs) -> None:
    import httpx

    dba = Dba(SQL)
    events = await dba.paused()
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    _, shown = await person(tabs, posted)
    async with httpx.AsyncClient() as client:
        response = await client.delete(f"{gateway.url}/v1/sessions/{session}/requests/{shown['id']}")
        assert response.status_code == 200, response.text
    with pytest.raises(RequestWithdrawn):
        await asyncio.wait_for(answering, 15)


async def test_nothing_pending_asks_nothing() -> None:
    dba = Dba(SQL)
    await dba.paused()
    assert await answer_requests([], url="http://127.0.0.1:9", session="nobody") == []
    # A confirmation already answered in the session is not pending any more.
    answered = [*dba.run.events, Event(author="user", content=types.Content(role="user", parts=[
        types.Part(function_response=types.FunctionResponse(id=pending_requests(dba.run.events)[0].id, name="adk_request_confirmation", response={"confirmed": False}))
    ]))]
    assert pending_requests(answered) == []


# ---- workflows: RequestInput and a node's confirmation -----------------------------------


class Booking(BaseModel):
    name: str = Field(min_length=1, max_length=40, description="Who the table is for")
    guests: int = Field(ge=1, le=12)
    seating: Literal["inside", "outside"] = "inside"
    vegetarian: bool = False


class Bookings:
    """A workflow whose first node asks for a `Booking` and whose second books it."""

    def __init__(self) -> None:
        self.booked: list[Booking] = []

        def ask() -> RequestInput:
            return RequestInput(message="Book a table?", response_schema=Booking)

        def book(node_input: Booking) -> str:
            self.booked.append(node_input)
            return f"booked for {node_input.name}"

        self.run = Run(Workflow(name="bookings", edges=[(START, ask, book)]))


async def test_a_request_input_is_a_form_and_its_answer_resumes_the_workflow(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    bookings = Bookings()
    events = await bookings.run.start()
    [call] = pending_requests(events)
    assert call.name == "adk_request_input"
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    tab, shown = await person(tabs, posted, "form")
    assert shown["message"] == "Book a table?"
    fields = {field["name"]: field for field in shown["fields"]}
    assert list(fields) == ["name", "guests", "seating", "vegetarian"]
    assert fields["guests"]["kind"] == "integer" and fields["guests"]["maximum"] == 12
    assert [o["value"] for o in fields["seating"]["options"]] == ["inside", "outside"]
    # The gateway holds the answer to the schema, as ADK would.
    await tab.answer(shown["id"], {"content": {"name": "Ann", "guests": 20}}, wait=False)
    refused = await tab.next_rejection()
    assert refused["errors"][0]["path"] == "response.content.guests"
    resolved = await tab.answer(shown["id"], {"content": {"name": "Ann", "guests": 2, "seating": "outside"}})
    assert resolved["outcome"] == "answered"
    parts = await asyncio.wait_for(answering, 15)
    [part] = parts
    assert part.function_response is not None
    assert part.function_response.id == call.id
    assert part.function_response.response == {"name": "Ann", "guests": 2, "seating": "outside", "vegetarian": False}

    await bookings.run.resume(parts)
    assert bookings.booked == [Booking(name="Ann", guests=2, seating="outside")]


async def test_a_text_input_comes_back_as_the_text_typed(gateway: Gateway, session: str, tabs: Tabs) -> None:
    """A schema that is not an object is asked as one field; text that reads as JSON ("42")
    still reaches the node as that text."""
    heard: list[Any] = []

    def ask() -> RequestInput:
        return RequestInput(message="Which table?", response_schema=str)

    def seat(node_input: str) -> str:
        heard.append(node_input)
        return "seated"

    run = Run(Workflow(name="seating", edges=[(START, ask, seat)]))
    events = await run.start()
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    tab, shown = await person(tabs, posted, "form")
    [field] = shown["fields"]
    assert (field["name"], field["kind"], field["required"]) == ("answer", "text", True)
    await tab.answer(shown["id"], {"content": {"answer": "42"}})
    await run.resume(await asyncio.wait_for(answering, 15))
    assert heard == ["42"]


async def test_a_declined_input_raises_no_answer_and_asking_again_asks_anew(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    bookings = Bookings()
    events = await bookings.run.start()
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    tab, shown = await person(tabs, posted, "form")
    await tab.decline(shown["id"])
    with pytest.raises(NoAnswer) as raised:
        await asyncio.wait_for(answering, 15)
    assert raised.value.outcomes == ["declined"]
    assert [call.id for call in raised.value.calls] == [call.id for call in pending_requests(events)]
    assert raised.value.parts == []
    assert bookings.booked == []

    # The decline was acknowledged: the same events put the same question to the person again.
    posted.clear()
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    again = await posted_request(posted)
    assert again.id == shown["id"]
    shown = await tab.next_request()
    assert shown["id"] == again.id
    await tab.answer(shown["id"], {"content": {"name": "Bo", "guests": 4}})
    await bookings.run.resume(await asyncio.wait_for(answering, 15))
    assert bookings.booked == [Booking(name="Bo", guests=4)]


async def test_an_input_nobody_answers_in_time_raises_no_answer(gateway: Gateway, session: str) -> None:
    bookings = Bookings()
    events = await bookings.run.start()
    with pytest.raises(NoAnswer) as raised:
        await answer_requests(events, url=gateway.url, session=session, timeout_s=0.5, wait=10)
    assert raised.value.outcomes == ["timed_out"]


async def test_a_schema_the_form_cannot_show_is_refused_with_its_path(gateway: Gateway, session: str) -> None:
    class Party(BaseModel):
        host: Booking

    def ask() -> RequestInput:
        return RequestInput(message="Plan the party", response_schema=Party)

    run = Run(Workflow(name="party", edges=[(START, ask)]))
    events = await run.start()
    with pytest.raises(ApiError) as raised:
        await answer_requests(events, url=gateway.url, session=session)
    assert [error.path for error in raised.value.errors] == ["schema.properties.host.type"], raised.value.errors


async def test_a_workflow_node_confirmation_is_an_approval(gateway: Gateway, session: str, tabs: Tabs) -> None:
    ran: list[str] = []

    def run_sql(query: str = "DROP TABLE users") -> str:
        ran.append(query)
        return "ran"

    for decision, expected in ((approve(), ["DROP TABLE users"]), (reject(), [])):
        ran.clear()
        node = FunctionNode(func=run_sql, require_confirmation=True, rerun_on_resume=True)
        run = Run(Workflow(name="dba", edges=[(START, node)]))
        events = await run.start()
        posted: list[PostedRequest] = []
        answering = asyncio.ensure_future(
            answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend)
        )
        tab, shown = await person(tabs, posted)
        [call] = shown["calls"]
        assert (call["name"], call["args"]) == ("run_sql", {"query": "DROP TABLE users"})
        await decide(tab, shown, decision)
        parts = await asyncio.wait_for(answering, 15)
        assert [p.function_response.name for p in parts if p.function_response] == ["adk_request_input"]
        await run.resume(parts)
        assert ran == expected
        assert json.dumps(parts[0].function_response.response) == json.dumps(  # type: ignore[union-attr]
            {"confirmed": decision["type"] == "approve"}
        )


async def test_no_answer_carries_the_answers_to_the_other_requests(gateway: Gateway, session: str, tabs: Tabs) -> None:
    """Two nodes ask at once; the person answers one and declines the other: the answer comes
    with the `NoAnswer`, and resuming with it runs its node while the other stays paused."""
    heard: list[str] = []

    def ask_name() -> RequestInput:
        return RequestInput(message="Your name?", response_schema=str)

    def ask_city() -> RequestInput:
        return RequestInput(message="Your city?", response_schema=str)

    def greet(node_input: str) -> str:
        heard.append(node_input)
        return "hello"

    run = Run(Workflow(name="intake", edges=[(START, ask_name, greet), (START, ask_city)]))
    events = await run.start()
    assert [call.args["message"] for call in pending_requests(events) if call.args] == ["Your name?", "Your city?"]
    posted: list[PostedRequest] = []
    answering = asyncio.ensure_future(answer_requests(events, url=gateway.url, session=session, on_posted=posted.extend))
    tab = await tabs((await posted_request(posted)).viewer_url)
    shown = {request["message"]: request for request in [await tab.next_request(), await tab.next_request()]}
    await tab.answer(shown["Your name?"]["id"], {"content": {"answer": "Ann"}})
    await tab.decline(shown["Your city?"]["id"])
    with pytest.raises(NoAnswer) as raised:
        await asyncio.wait_for(answering, 15)
    assert [call.args["message"] for call in raised.value.calls if call.args] == ["Your city?"]
    [part] = raised.value.parts
    await run.resume([part])
    assert heard == ["Ann"]
    assert [call.args["message"] for call in pending_requests(await run.stored_events()) if call.args] == ["Your city?"]
