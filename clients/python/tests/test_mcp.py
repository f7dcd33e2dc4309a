"""MCP elicitation: a real `mcp` server whose tools elicit, a real `ClientSession` (in-memory
streams) or `mcp.Client` whose callback is `askgate.mcp.elicitation_callback`, answered by a
person in a headless tab through the gateway."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
import pytest
from approvals import person
from gateway import Gateway
from mcp import Client, ClientSession
from mcp.client.session import ElicitationFnT
from mcp.server.elicitation import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
)
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams
from pydantic import BaseModel, Field
from tab import Tabs

from askgate import PostedRequest
from askgate.mcp import elicitation_callback

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


class Booking(BaseModel):
    """Several field kinds: text with lengths, integer and number bounds, boolean, date, a
    single choice, a multi-select."""

    name: str = Field(min_length=1, max_length=40, description="Who the table is for")
    guests: int = Field(ge=1, le=12)
    budget: float = Field(default=50.0, ge=0)
    vegetarian: bool = False
    date: datetime.date
    seating: Literal["inside", "outside"] = "inside"
    extras: list[Literal["cake", "flowers", "wine"]] = []


def ask_booking() -> Elicit[Booking]:
    return Elicit("Book a table?", Booking)


SIGN_IN = "https://auth.example.com/login?s=42"


class Bistro:
    """An MCP server whose tools elicit, and what each elicitation came back as."""

    def __init__(self, name: str = "bistro") -> None:
        self.server = MCPServer(name)
        self.results: list[Any] = []

        @self.server.tool()
        async def book(ctx: Context) -> str:
            result = await ctx.elicit("Book a table?", schema=Booking)
            self.results.append(result)
            return result.action

        @self.server.tool()
        async def sign_in(ctx: Context) -> str:
            result = await ctx.elicit_url("Sign in to the booking system", SIGN_IN, "el-42")
            self.results.append(result)
            return result.action

        @self.server.tool()
        async def nested(ctx: Context) -> str:
            # A schema MCP does not allow (an object property): the gateway refuses it.
            bad = {"type": "object", "properties": {"address": {"type": "object"}}}
            result = await ctx.request_context.session.elicit_form("Where?", bad)
            self.results.append(result)
            return result.action

        # The 2026-07-28 protocol has no server-to-client requests: a resolver asks, and the SDK
        # carries the elicitation inside an `input_required` result.
        @self.server.tool()
        async def book_modern(booking: Annotated[ElicitationResult[Booking], Resolve(ask_booking)]) -> str:
            self.results.append(booking)
            return booking.action


@asynccontextmanager
async def connected(bistro: Bistro, callback: ElicitationFnT) -> AsyncIterator[ClientSession]:
    """A `ClientSession` on in-memory streams to the server, initialized (2025-11-25)."""
    lowlevel = bistro.server._lowlevel_server  # what mcp's own in-memory transport runs
    async with create_client_server_memory_streams() as ((client_read, client_write), (server_read, server_write)):
        async with anyio.create_task_group() as group:
            group.start_soon(partial(lowlevel.run, server_read, server_write, lowlevel.create_initialization_options()))
            try:
                async with ClientSession(client_read, client_write, elicitation_callback=callback) as session:
                    await session.initialize()
                    yield session
            finally:
                group.cancel_scope.cancel()


def text(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent), content
    return content.text


ANSWER = {
    "name": "Ada",
    "guests": 4,
    "date": "2026-12-24",
    "seating": "outside",
    "extras": ["cake", "wine"],
    "vegetarian": True,
}


async def test_an_accepted_form_gives_the_tool_the_data(gateway: Gateway, session: str, tabs: Tabs) -> None:
    bistro = Bistro()
    posted: list[PostedRequest] = []
    callback = elicitation_callback(gateway.url, session, title="Bistro", on_posted=posted.extend)
    async with connected(bistro, callback) as client:
        calling = asyncio.ensure_future(client.call_tool("book", {}))
        tab, shown = await person(tabs, posted, "form")
        assert shown["title"] == "Bistro"
        assert shown["message"] == "Book a table?"
        assert shown["mode"] == "form"
        assert shown["server"] == "bistro", "the server's name from its initialize result"
        schema = shown["schema"]
        assert list(schema["properties"]) == ["name", "guests", "budget", "vegetarian", "date", "seating", "extras"]
        assert schema["required"] == ["name", "guests", "date"]
        kinds = {field["name"]: field["kind"] for field in shown["fields"]}
        assert kinds == {
            "name": "text",
            "guests": "integer",
            "budget": "number",
            "vegetarian": "boolean",
            "date": "date",
            "seating": "choice",
            "extras": "choices",
        }
        fields = {field["name"]: field for field in shown["fields"]}
        assert fields["name"]["required"] and fields["name"]["max_length"] == 40
        assert fields["guests"]["minimum"] == 1 and fields["guests"]["maximum"] == 12
        assert not fields["budget"]["required"]
        assert [o["value"] for o in fields["extras"]["options"]] == ["cake", "flowers", "wine"]
        # The gateway checks the content against the schema before the tool sees it.
        await tab.answer(shown["id"], {"content": {**ANSWER, "guests": 13}}, wait=False)
        refused = await tab.next_rejection()
        assert refused["errors"][0]["path"].startswith("response.content.guests"), refused
        resolved = await tab.answer(shown["id"], {"content": ANSWER})
        assert resolved["outcome"] == "answered"
        result = await asyncio.wait_for(calling, 15)
    assert text(result) == "accept"
    [accepted] = bistro.results
    assert isinstance(accepted, AcceptedElicitation)
    assert accepted.data == Booking(
        name="Ada",
        guests=4,
        vegetarian=True,
        date=datetime.date(2026, 12, 24),
        seating="outside",
        extras=["cake", "wine"],
    )


async def test_a_declined_form_is_declined(gateway: Gateway, session: str, tabs: Tabs) -> None:
    bistro = Bistro()
    posted: list[PostedRequest] = []
    async with connected(bistro, elicitation_callback(gateway.url, session, on_posted=posted.extend)) as client:
        calling = asyncio.ensure_future(client.call_tool("book", {}))
        tab, shown = await person(tabs, posted, "form")
        resolved = await tab.decline(shown["id"])
        assert resolved["outcome"] == "declined"
        result = await asyncio.wait_for(calling, 15)
    assert text(result) == "decline"
    assert [type(r) for r in bistro.results] == [DeclinedElicitation]


async def test_no_answer_in_time_is_cancelled(gateway: Gateway, session: str, tabs: Tabs) -> None:
    bistro = Bistro()
    posted: list[PostedRequest] = []
    callback = elicitation_callback(gateway.url, session, timeout_s=1, on_posted=posted.extend)
    async with connected(bistro, callback) as client:
        calling = asyncio.ensure_future(client.call_tool("book", {}))
        tab, shown = await person(tabs, posted, "form")
        resolved = await tab.wait_resolved(shown["id"])
        assert resolved["outcome"] == "timed_out"
        result = await asyncio.wait_for(calling, 15)
    assert text(result) == "cancel"
    assert [type(r) for r in bistro.results] == [CancelledElicitation]


async def test_a_default_is_what_the_server_receives_when_nobody_answers(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    """`default`: nobody answers within `timeout_s`, and the MCP server receives the default's
    content as its typed data, checked against its schema like a person's answer."""
    bistro = Bistro()
    posted: list[PostedRequest] = []
    default = {"action": "accept", "content": {"name": "Walk-in", "guests": 2, "date": "2026-12-24"}}
    callback = elicitation_callback(gateway.url, session, timeout_s=1, on_posted=posted.extend, default=lambda params: default)
    async with connected(bistro, callback) as client:
        calling = asyncio.ensure_future(client.call_tool("book", {}))
        tab, shown = await person(tabs, posted, "form")
        assert shown["default"] == default
        resolved = await tab.wait_resolved(shown["id"])
        assert (resolved["outcome"], resolved["via"]) == ("answered", "default")
        result = await asyncio.wait_for(calling, 15)
    assert text(result) == "accept"
    [accepted] = bistro.results
    assert isinstance(accepted, AcceptedElicitation)
    assert accepted.data == Booking(name="Walk-in", guests=2, date=datetime.date(2026, 12, 24))


async def test_url_mode_asks_for_consent_to_open_the_link(gateway: Gateway, session: str, tabs: Tabs) -> None:
    bistro = Bistro()
    posted: list[PostedRequest] = []
    callback = elicitation_callback(gateway.url, session, server="Bistro bookings", on_posted=posted.extend)
    async with connected(bistro, callback) as client:
        calling = asyncio.ensure_future(client.call_tool("sign_in", {}))
        tab, shown = await person(tabs, posted, "form")
        assert shown["mode"] == "url"
        assert shown["message"] == "Sign in to the booking system"
        assert shown["url"] == "https://auth.example.com/login?s=42"
        assert shown["host"] == "auth.example.com"
        assert shown["elicitation_id"] == "el-42"
        assert shown["server"] == "Bistro bookings", "the server argument wins over the initialize result"
        assert "schema" not in shown
        resolved = await tab.answer(shown["id"], {})
        assert resolved["outcome"] == "answered"
        result = await asyncio.wait_for(calling, 15)
    assert text(result) == "accept"
    assert [type(r) for r in bistro.results] == [AcceptedUrlElicitation]


async def test_a_schema_the_gateway_refuses_is_an_error_for_the_server(gateway: Gateway, session: str) -> None:
    bistro = Bistro()
    async with connected(bistro, elicitation_callback(gateway.url, session)) as client:
        with pytest.raises(MCPError) as raised:
            await asyncio.wait_for(client.call_tool("nested", {}), 15)
    # The callback's ErrorData reached the server as the elicitation's error, and the server's
    # uncaught error came back as the tool call's.
    assert raised.value.code == types.INVALID_PARAMS, raised.value
    assert "schema.properties.address" in raised.value.message, raised.value
    assert bistro.results == []


async def test_the_error_data_names_the_refused_path(gateway: Gateway, session: str) -> None:
    callback = elicitation_callback(gateway.url, session)
    params = types.ElicitRequestFormParams(
        message="Where?", requested_schema={"type": "object", "properties": {"address": {"type": "object"}}}
    )
    error = await callback(None, params)  # type: ignore[arg-type]  # no session: no server name
    assert isinstance(error, types.ErrorData)
    assert error.code == types.INVALID_PARAMS
    assert any(item["path"].startswith("schema.properties.address") for item in error.data), error


async def test_the_newer_protocol_carries_the_elicitation_in_input_required(
    gateway: Gateway, session: str, tabs: Tabs
) -> None:
    bistro = Bistro("bistro-modern")
    posted: list[PostedRequest] = []
    callback = elicitation_callback(gateway.url, session, on_posted=posted.extend)
    async with Client(bistro.server, elicitation_callback=callback) as client:
        assert client.session.protocol_version == "2026-07-28"
        calling = asyncio.ensure_future(client.call_tool("book_modern", {}))
        tab, shown = await person(tabs, posted, "form")
        assert shown["server"] == "bistro-modern", "the server's name from its discover result"
        assert shown["message"] == "Book a table?"
        await tab.answer(shown["id"], {"content": {"name": "Grace", "guests": 2, "date": "2027-01-02"}})
        result = await asyncio.wait_for(calling, 15)
    assert text(result) == "accept"
    [accepted] = bistro.results
    assert isinstance(accepted, AcceptedElicitation)
    assert accepted.data == Booking(name="Grace", guests=2, date=datetime.date(2027, 1, 2))


async def test_mcp_client_on_the_older_protocol(gateway: Gateway, session: str, tabs: Tabs) -> None:
    bistro = Bistro()
    posted: list[PostedRequest] = []
    callback = elicitation_callback(gateway.url, session, on_posted=posted.extend)
    async with Client(bistro.server, mode="legacy", elicitation_callback=callback) as client:
        assert client.session.protocol_version == "2025-11-25"
        calling = asyncio.ensure_future(client.call_tool("book", {}))
        tab, shown = await person(tabs, posted, "form")
        await tab.decline(shown["id"])
        result = await asyncio.wait_for(calling, 15)
    assert text(result) == "decline"
    assert [type(r) for r in bistro.results] == [DeclinedElicitation]


async def test_a_server_that_gives_up_withdraws_the_request(gateway: Gateway, session: str, tabs: Tabs) -> None:
    bistro = Bistro()
    posted: list[PostedRequest] = []
    async with connected(bistro, elicitation_callback(gateway.url, session, on_posted=posted.extend)) as client:
        calling = asyncio.ensure_future(client.call_tool("book", {}))
        tab, shown = await person(tabs, posted, "form")
        # The client stops waiting for the tool: the server cancels the tool, and with it the
        # elicitation it had asked for.
        calling.cancel()
        resolved = await tab.wait_resolved(shown["id"])
        assert resolved["outcome"] == "withdrawn"
    with pytest.raises((asyncio.CancelledError, MCPError)):
        await calling
