"""People: an ask that names who may answer, a personal link's tab answering, and the outcome
naming that person beside the tab."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Awaitable, Callable

import pytest
from gateway import Gateway
from tab import Tab

from askgate import Client

pytestmark = pytest.mark.anyio

QUESTIONS = [{"header": "Pick", "question": "Pick one", "options": [{"label": "A"}, {"label": "B"}]}]


def personal_link(gateway: Gateway, session: str, user: str) -> str:
    body = json.dumps({"user": user, "ttl_s": 600}).encode()
    request = urllib.request.Request(
        f"{gateway.url}/v1/sessions/{session}/links",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
        return str(json.load(response)["url"])


async def test_only_the_named_person_answers_and_the_outcome_names_them(
    gateway: Gateway, session: str, tabs: Callable[[str], Awaitable[Tab]]
) -> None:
    bob = await tabs(personal_link(gateway, session, "bob@example.com"))
    alice = await tabs(personal_link(gateway, session, "alice@example.com"))
    assert alice.snapshot is not None and alice.snapshot["you"]["user"] == "alice@example.com"
    async with Client(gateway.url) as client:
        asking = asyncio.ensure_future(
            client.ask(session, QUESTIONS, id="r1", answerers=["alice@example.com"])
        )
        shown = await bob.next_request()
        assert shown["answerers"] == ["alice@example.com"]
        await bob.answer("r1", [{"header": "Pick", "selected": ["A"]}], wait=False)
        refused = await bob.next_rejection()
        assert refused["errors"][0]["code"] == "forbidden"
        await alice.next_request()
        resolved = await alice.answer("r1", [{"header": "Pick", "selected": ["B"]}])
        assert resolved["user"] == "alice@example.com"
        outcome = await asyncio.wait_for(asking, 15)
    assert outcome.user == "alice@example.com"
    assert outcome.by == (alice.snapshot or {}).get("tab")
    assert outcome.model_text == '{"Pick":["B"]}'


async def test_an_escalation_lets_its_people_answer_and_a_bad_one_is_refused_here(
    gateway: Gateway, session: str, tabs: Callable[[str], Awaitable[Tab]]
) -> None:
    bob = await tabs(personal_link(gateway, session, "bob@example.com"))
    async with Client(gateway.url) as client:
        with pytest.raises(ValueError, match=r"^escalate.to: a non-empty list"):
            await client.ask(session, QUESTIONS, escalate={"after_s": 1, "to": []})
        with pytest.raises(ValueError, match=r"^remind_after_s: positive seconds, got 0"):
            await client.ask(session, QUESTIONS, remind_after_s=0)
        asking = asyncio.ensure_future(
            client.ask(
                session,
                QUESTIONS,
                id="r2",
                answerers=["alice@example.com"],
                remind_after_s=0.1,
                escalate={"after_s": 0.2, "to": ["bob@example.com"]},
            )
        )
        escalated = await asyncio.wait_for(bob.escalations.get(), 15)
        assert escalated["to"] == ["bob@example.com"]
        assert escalated["answerers"] == ["alice@example.com", "bob@example.com"]
        resolved = await bob.answer("r2", [{"header": "Pick", "selected": ["A"]}])
        assert resolved["user"] == "bob@example.com"
        outcome = await asyncio.wait_for(asking, 15)
    assert outcome.user == "bob@example.com"
