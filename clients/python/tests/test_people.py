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
