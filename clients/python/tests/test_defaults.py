"""An ask's `default`: the answer given when its deadline passes with none. For every dialect the
outcome is exactly what a tab giving the same answer would have produced (the same `response`,
`result` and `model_text`, which the adapters' tests hold to what each framework reads), with
`by` and `via` saying `default` and no person."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from gateway import Gateway
from tab import Tabs

from askgate import Client
from askgate._http import AsyncApi, ask_body

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

HARNESS = [{"header": "When", "question": "Deploy when?", "options": [{"label": "Now"}, {"label": "Monday"}]}]
CASES: list[tuple[str, str | None, Any, Any, dict[str, Any]]] = [
    # (name, dialect, request, default and the tab's answer, extra ask fields)
    ("harness", None, HARNESS, {"answers": [{"header": "When", "selected": ["Monday"]}]}, {}),
    (
        "deepagents",
        "deepagents",
        [{"question": "Which region?", "type": "multiple_choice", "choices": [{"value": "eu"}, {"value": "us"}]}],
        {"answers": ["eu"]},
        {},
    ),
    (
        "claude",
        "claude",
        [
            {
                "question": "Which database?",
                "header": "DB",
                "options": [{"label": "Postgres", "description": "p"}, {"label": "SQLite", "description": "s"}],
                "multiSelect": False,
            }
        ],
        {"answers": {"Which database?": "SQLite"}},
        {},
    ),
    ("approval", "approval", [{"name": "run_sql", "args": {"query": "DROP TABLE users"}}], {"decisions": [{"type": "reject"}]}, {}),
]


async def defaulted_and_answered(
    gateway: Gateway, tabs: Tabs, session: str, dialect: str | None, request: Any, answer: Any, default: Any
) -> tuple[Any, Any]:
    async with Client(gateway.url) as client:
        opened = await client.open(session)
        assert opened.viewer_url
        defaulted = await client.ask(session, request, dialect=dialect, timeout_s=0.3, default=default)
        tab = await tabs(opened.viewer_url)
        asked = asyncio.ensure_future(client.ask(session, request, dialect=dialect, timeout_s=30))
        shown = await tab.next_request()
        await tab.answer(shown["id"], answer)
        return defaulted, await asked


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
async def test_the_default_is_what_a_tab_giving_it_makes(
    gateway: Gateway, tabs: Tabs, session: str, case: tuple[str, str | None, Any, Any, dict[str, Any]]
) -> None:
    _, dialect, request, answer, _ = case
    defaulted, answered = await defaulted_and_answered(gateway, tabs, session, dialect, request, answer, answer)
    assert defaulted.outcome == "answered"
    assert (defaulted.by, defaulted.via, defaulted.user) == ("default", "default", None)
    assert (defaulted.response, defaulted.result, defaulted.model_text) == (
        answered.response,
        answered.result,
        answered.model_text,
    )
    assert answered.via != "default"


FORM = {"message": "Where should the report go?", "schema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}}


@pytest.mark.parametrize(
    ("default", "tab_ending"),
    [
        ({"action": "accept", "content": {"to": "ops@example.com"}}, {"content": {"to": "ops@example.com"}}),
        ({"action": "decline"}, None),
    ],
    ids=["accept", "decline"],
)
async def test_a_forms_default_is_mcps_elicit_result(
    gateway: Gateway, tabs: Tabs, session: str, default: dict[str, Any], tab_ending: dict[str, Any] | None
) -> None:
    """A form's default is the `ElicitResult` itself: accepted with content, or declined, as a
    tab's answer or decline would have made it."""
    async with httpx.AsyncClient() as http:
        api = AsyncApi(gateway.url, session, client=http)
        unanswered = await api.post(ask_body(id=uuid.uuid4().hex, dialect="form", fields=FORM, timeout_s=0.3, default=default))
        defaulted = await api.get(unanswered.id, wait_s=10)
        posted = await api.post(ask_body(id=uuid.uuid4().hex, dialect="form", fields=FORM, timeout_s=30))
        tab = await tabs(posted.viewer_url)
        assert (await tab.next_request())["id"] == posted.id
        if tab_ending is None:
            await tab.decline(posted.id)
        else:
            await tab.answer(posted.id, tab_ending)
        answered = await api.get(posted.id, wait_s=10)
    assert defaulted is not None and answered is not None
    assert defaulted.response == default
    assert (defaulted.outcome, defaulted.response, defaulted.result) == (answered.outcome, answered.response, answered.result)
    assert (defaulted.by, defaulted.via, defaulted.user) == ("default", "default", None)
