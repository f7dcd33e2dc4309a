"""Remembered approvals from Python: a person approves a call remembering it for the session,
the same call asked again comes back at once approved by the rule (`via` `"rule"`), and
`rules=False` has it asked; the approval adapters pass `rules` on in their requests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from gateway import Gateway
from tab import Tab
from test_people import personal_link

from askgate import Client
from askgate._approval import ApprovalCall, Asking
from askgate._http import ask_body

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

CALLS = [{"name": "rm", "args": {"path": "/tmp/x"}}]
APPROVE = {"decisions": [{"type": "approve"}]}


async def test_a_remembered_approval_answers_the_same_call_and_rules_false_asks(
    gateway: Gateway, session: str, tabs: Callable[[str], Awaitable[Tab]]
) -> None:
    alice = await tabs(personal_link(gateway, session, "alice@example.com"))
    async with Client(gateway.url) as client:
        first = asyncio.ensure_future(client.ask(session, CALLS, id="first", dialect="approval"))
        shown = await alice.next_request()
        assert shown["remember"] == ["session", "key"]
        remember = {"decisions": [{"type": "approve", "remember": "session"}]}
        await alice.answer("first", remember)
        approved = await asyncio.wait_for(first, 15)
        assert (approved.response, approved.via) == (APPROVE, "personal-link")

        again = await asyncio.wait_for(client.ask(session, CALLS, id="again", dialect="approval"), 15)
        assert again.outcome == "answered"
        assert again.response == APPROVE
        assert (again.via, again.user) == ("rule", "alice@example.com")
        assert again.by is not None and again.by.startswith("rule:")

        always = asyncio.ensure_future(client.ask(session, CALLS, id="always", dialect="approval", rules=False))
        # Shown to the person: asked, not answered by the rule.
        while (await alice.next_request())["id"] != "always":
            pass
        await alice.answer("always", APPROVE)
        asked = await asyncio.wait_for(always, 15)
        assert asked.via == "personal-link"


def test_rules_false_is_sent_only_when_asked_for() -> None:
    assert "rules" not in ask_body(id="r", dialect="approval", calls=CALLS)
    assert ask_body(id="r", dialect="approval", calls=CALLS, rules=False)["rules"] is False
    call = ApprovalCall(name="rm", args={"path": "/tmp/x"})
    (kept, _), = Asking("http://127.0.0.1:1", "s")._bodies([("k", call)])
    (always, _), = Asking("http://127.0.0.1:1", "s", rules=False)._bodies([("k", call)])
    assert "rules" not in kept
    assert always["rules"] is False
