"""What the approval tests share: waiting for the posted request and the person's tab on it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tab import Tab

from askgate import PostedRequest

Tabs = Callable[[str], Awaitable[Tab]]


async def posted_request(posted: list[PostedRequest], timeout: float = 15.0) -> PostedRequest:
    """The first request an adapter posted (it fills `posted` through `on_posted`)."""
    async with asyncio.timeout(timeout):
        while not posted:
            await asyncio.sleep(0.01)
    return posted[0]


async def person(tabs: Tabs, posted: list[PostedRequest]) -> tuple[Tab, dict[str, Any]]:
    """A tab on the link of the posted request, and the request as the tab shows it."""
    request = await posted_request(posted)
    tab = await tabs(request.viewer_url)
    shown = await tab.next_request()
    assert shown["id"] == request.id
    assert shown["dialect"] == "approval"
    return tab, shown


async def decide(tab: Tab, shown: dict[str, Any], *decisions: dict[str, Any]) -> dict[str, Any]:
    """Answer `shown` with one decision per call; returns the `resolved` frame."""
    resolved = await tab.answer(shown["id"], {"decisions": list(decisions)})
    assert resolved["outcome"] == "answered", resolved
    return resolved


def approve() -> dict[str, Any]:
    return {"type": "approve"}


def reject(message: str | None = None) -> dict[str, Any]:
    return {"type": "reject", "message": message} if message is not None else {"type": "reject"}


def edit(args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "edit", "args": args}


def respond(message: str) -> dict[str, Any]:
    return {"type": "respond", "message": message}
