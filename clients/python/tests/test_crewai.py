"""CrewAI Flows: `@human_feedback` answered by a person in a headless tab through the gateway
(`askgate.crewai.GatewayFeedback`), waiting in the flow or pausing it (`HumanFeedbackPending`,
saved by CrewAI's SQLite persistence) and resuming it with `askgate.crewai.resume`. CrewAI
maps feedback to an outcome with a model: here a `BaseLLM` that reads the feedback in the
prompt CrewAI writes and answers with the outcome it begins with, as a model would."""

from __future__ import annotations

import os

# Offline: CrewAI's telemetry would try to reach its servers (and hold the process at exit).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")

import asyncio  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402
import pytest  # noqa: E402
from approvals import person  # noqa: E402
from crewai.flow import Flow, HumanFeedbackPending, human_feedback, listen, start  # noqa: E402
from crewai.flow.persistence import SQLiteFlowPersistence  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from gateway import Gateway  # noqa: E402
from tab import Tabs  # noqa: E402

from askgate import PostedRequest  # noqa: E402
from askgate.crewai import GatewayFeedback, request_id, resume, resume_sync  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

_COLLAPSE = re.compile(r"Feedback: (?P<feedback>.*?)\n\nPossible outcomes: (?P<outcomes>[^\n]*)", re.S)


class Outcomes(BaseLLM):
    """The model CrewAI maps feedback to an outcome with: the outcome the feedback begins with."""

    heard: list[str] = []

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        prompt = messages if isinstance(messages, str) else messages[-1]["content"]
        found = _COLLAPSE.search(prompt)
        assert found, f"not CrewAI's collapse prompt: {prompt!r}"
        self.heard.append(found["feedback"])
        return next(o for o in found["outcomes"].split(", ") if found["feedback"].startswith(o))


def review_flow(provider: GatewayFeedback, llm: BaseLLM, *, emit: bool = True) -> type[Flow[Any]]:
    """A flow that drafts a post and asks for feedback on it: with outcomes, it then publishes
    or revises the post; without, it reads the feedback."""

    if not emit:

        class Notes(Flow):  # type: ignore[type-arg]
            @start()
            @human_feedback(message="Publish this post?", provider=provider)
            def draft(self) -> str:
                return "Hello, world."

            @listen(draft)
            def read(self) -> str:
                return "read: " + self.last_human_feedback.feedback  # type: ignore[union-attr]

        return Notes

    class Review(Flow):  # type: ignore[type-arg]
        @start()
        @human_feedback(
            message="Publish this post?",
            emit=["approved", "rejected"],
            default_outcome="rejected",
            llm=llm,
            provider=provider,
        )
        def draft(self) -> str:
            return "Hello, world."

        @listen("approved")
        def publish(self) -> str:
            return "published"

        @listen("rejected")
        def revise(self) -> str:
            return "revised after: " + self.last_human_feedback.feedback  # type: ignore[union-attr]

    return Review


async def asked(tabs: Tabs, posted: list[PostedRequest]) -> tuple[Any, dict[str, Any]]:
    tab, shown = await person(tabs, posted, "form")
    return tab, shown


async def test_the_outcome_the_person_picks_routes_the_flow(gateway: Gateway, session: str, tabs: Tabs) -> None:
    llm = Outcomes(model="outcomes", heard=[])
    posted: list[PostedRequest] = []
    flow = review_flow(GatewayFeedback(gateway.url, session, title="blog", on_posted=posted.extend), llm)()
    running = asyncio.ensure_future(flow.kickoff_async())
    tab, shown = await asked(tabs, posted)
    assert shown["title"] == "blog"
    assert shown["message"] == "Publish this post?\n\nHello, world."
    fields = {field["name"]: field for field in shown["fields"]}
    assert fields["outcome"]["kind"] == "choice" and fields["outcome"]["required"]
    assert [o["value"] for o in fields["outcome"]["options"]] == ["approved", "rejected"]
    assert fields["feedback"]["kind"] == "text" and not fields["feedback"]["required"]
    assert not running.done(), "the flow waits for the person"
    await tab.answer(shown["id"], {"content": {"outcome": "approved"}})
    assert await asyncio.wait_for(running, 15) == "published"
    assert flow.last_human_feedback is not None
    assert (flow.last_human_feedback.outcome, flow.last_human_feedback.feedback) == ("approved", "approved")
    assert llm.heard == ["approved"]


async def test_what_the_person_writes_goes_with_the_outcome(gateway: Gateway, session: str, tabs: Tabs) -> None:
    llm = Outcomes(model="outcomes", heard=[])
    posted: list[PostedRequest] = []
    flow = review_flow(GatewayFeedback(gateway.url, session, on_posted=posted.extend), llm)()
    running = asyncio.ensure_future(flow.kickoff_async())
    tab, shown = await asked(tabs, posted)
    await tab.answer(shown["id"], {"content": {"outcome": "rejected", "feedback": " Too short. "}})
    assert await asyncio.wait_for(running, 15) == "revised after: rejected: Too short."
    assert flow.last_human_feedback is not None and flow.last_human_feedback.outcome == "rejected"


async def test_a_decline_takes_the_default_outcome(gateway: Gateway, session: str, tabs: Tabs) -> None:
    llm = Outcomes(model="outcomes", heard=[])
    posted: list[PostedRequest] = []
    flow = review_flow(GatewayFeedback(gateway.url, session, on_posted=posted.extend), llm)()
    running = asyncio.ensure_future(flow.kickoff_async())
    tab, shown = await asked(tabs, posted)
    resolved = await tab.decline(shown["id"])
    assert resolved["outcome"] == "declined"
    assert await asyncio.wait_for(running, 15) == "revised after: "
    assert flow.last_human_feedback is not None and flow.last_human_feedback.outcome == "rejected"
    assert llm.heard == [], "no feedback: CrewAI takes default_outcome without asking the model"


async def test_no_answer_in_time_takes_the_default_outcome(gateway: Gateway, session: str) -> None:
    llm = Outcomes(model="outcomes", heard=[])
    flow = review_flow(GatewayFeedback(gateway.url, session, timeout_s=0.5, wait=10), llm)()
    assert await asyncio.wait_for(flow.kickoff_async(), 15) == "revised after: "
    assert flow.last_human_feedback is not None and flow.last_human_feedback.outcome == "rejected"


async def test_without_outcomes_the_feedback_is_the_text(gateway: Gateway, session: str, tabs: Tabs) -> None:
    posted: list[PostedRequest] = []
    flow = review_flow(GatewayFeedback(gateway.url, session, on_posted=posted.extend), Outcomes(model="x"), emit=False)()
    running = asyncio.ensure_future(flow.kickoff_async())
    tab, shown = await asked(tabs, posted)
    [field] = shown["fields"]
    assert (field["name"], field["kind"], field["required"]) == ("feedback", "text", False)
    await tab.answer(shown["id"], {"content": {"feedback": "Add a picture."}})
    assert await asyncio.wait_for(running, 15) == "read: Add a picture."


async def test_a_paused_flow_resumes_with_the_answer(gateway: Gateway, session: str, tabs: Tabs, tmp_path: Path) -> None:
    persistence = SQLiteFlowPersistence(db_path=str(tmp_path / "flows.db"))
    llm = Outcomes(model="outcomes", heard=[])
    posted: list[PostedRequest] = []
    Review = review_flow(GatewayFeedback(gateway.url, session, pause=True, on_posted=posted.extend), llm)
    paused = await Review(persistence=persistence).kickoff_async()
    assert isinstance(paused, HumanFeedbackPending)
    assert paused.callback_info["askgate"]["id"] == posted[0].id == request_id(paused.context)

    # Another process would restore the flow from its persistence, and could resume it before
    # the person answers: the resume waits for the answer.
    flow = Review.from_pending(paused.context.flow_id, persistence)
    assert flow.pending_feedback is not None and request_id(flow.pending_feedback) == posted[0].id
    resuming = asyncio.ensure_future(resume(flow, url=gateway.url, session=session, llm=llm, wait=15))
    tab, shown = await asked(tabs, posted)
    assert not resuming.done()
    await tab.answer(shown["id"], {"content": {"outcome": "approved", "feedback": "Ship it."}})
    assert await asyncio.wait_for(resuming, 15) == "published"
    assert llm.heard == ["approved: Ship it."]
    assert persistence.load_pending_feedback(paused.context.flow_id) is None


async def test_a_paused_flow_resumes_blocking_with_a_decline(
    gateway: Gateway, session: str, tabs: Tabs, tmp_path: Path
) -> None:
    persistence = SQLiteFlowPersistence(db_path=str(tmp_path / "flows.db"))
    llm = Outcomes(model="outcomes", heard=[])
    posted: list[PostedRequest] = []
    Review = review_flow(GatewayFeedback(gateway.url, session, pause=True, on_posted=posted.extend), llm)
    paused = await Review(persistence=persistence).kickoff_async()
    assert isinstance(paused, HumanFeedbackPending)
    tab, shown = await asked(tabs, posted)
    await tab.decline(shown["id"])
    flow = Review.from_pending(paused.context.flow_id, persistence)
    result = await anyio.to_thread.run_sync(lambda: resume_sync(flow, url=gateway.url, session=session, llm=llm, wait=15))
    assert result == "revised after: "
    assert llm.heard == []


async def test_resuming_a_flow_that_is_not_paused_says_so(gateway: Gateway, session: str) -> None:
    flow = review_flow(GatewayFeedback(gateway.url, session), Outcomes(model="x"))()
    with pytest.raises(ValueError, match="is not paused on feedback"):
        await resume(flow, url=gateway.url, session=session)


async def test_flow_ask_is_answered_by_the_person(gateway: Gateway, session: str, tabs: Tabs) -> None:
    posted: list[PostedRequest] = []
    provider = GatewayFeedback(gateway.url, session, on_posted=posted.extend)

    class Research(Flow):  # type: ignore[type-arg]
        input_provider = provider

        @start()
        def topic(self) -> str:
            return f"researching {self.ask('Which topic?')}"

    flow = Research()
    running = asyncio.ensure_future(flow.kickoff_async())
    tab, shown = await asked(tabs, posted)
    assert shown["message"] == "Which topic?"
    await tab.answer(shown["id"], {"content": {"answer": "askgate"}})
    assert await asyncio.wait_for(running, 15) == "researching askgate"
