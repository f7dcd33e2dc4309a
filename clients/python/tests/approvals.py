"""What the approval tests share: waiting for the posted request and the person's tab on it,
the decisions a person sends, and the two tools the calls are about."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tab import Tab, Tabs

from askgate import PostedRequest

OnPosted = Callable[[list[PostedRequest]], None]

T = TypeVar("T")


async def posted_request(posted: list[PostedRequest], timeout: float = 15.0) -> PostedRequest:
    """The first request an adapter posted (it fills `posted` through `on_posted`)."""
    async with asyncio.timeout(timeout):
        while not posted:
            await asyncio.sleep(0.01)
    return posted[0]


async def person(tabs: Tabs, posted: list[PostedRequest], dialect: str = "approval") -> tuple[Tab, dict[str, Any]]:
    """A tab on the link of the posted request, and the request as the tab shows it (of
    `dialect`: the MCP and Claude tests use this too)."""
    request = await posted_request(posted)
    tab = await tabs(request.viewer_url)
    shown = await tab.next_request()
    assert shown["id"] == request.id
    assert shown["dialect"] == dialect, shown
    return tab, shown


async def decide(tab: Tab, shown: dict[str, Any], *decisions: dict[str, Any]) -> dict[str, Any]:
    """Answer `shown` with one decision per call; returns the `resolved` frame."""
    resolved = await tab.answer(shown["id"], {"decisions": list(decisions)})
    assert resolved["outcome"] == "answered", resolved
    return resolved


async def decided(tabs: Tabs, asking: Callable[[OnPosted], Awaitable[T]], *decisions: dict[str, Any]) -> tuple[T, dict[str, Any]]:
    """Start `asking(on_posted)` (an adapter's call, given its `on_posted`), answer the request it
    posts with `decisions` in a tab, and return what the call returned, with the request as the
    tab showed it."""
    posted: list[PostedRequest] = []
    running = asyncio.ensure_future(asking(posted.extend))
    tab, shown = await person(tabs, posted)
    await decide(tab, shown, *decisions)
    return await asyncio.wait_for(running, 15), shown


def approve() -> dict[str, Any]:
    return {"type": "approve"}


def reject(message: str | None = None) -> dict[str, Any]:
    return {"type": "reject", "message": message} if message is not None else {"type": "reject"}


def edit(args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "edit", "args": args}


def respond(message: str) -> dict[str, Any]:
    return {"type": "respond", "message": message}


class Tools:
    """The two tools the approval tests put to a person, as plain methods for a framework to
    register, and what they ran."""

    def __init__(self) -> None:
        self.sql: list[str] = []
        self.mail: list[tuple[str, str]] = []

    def run_sql(self, query: str, limit: int = 10) -> str:
        """Run a SQL statement."""
        self.sql.append(query)
        return f"ran {query}"

    def send_email(self, to: str, body: str) -> str:
        """Send an email."""
        self.mail.append((to, body))
        return f"sent to {to}"
