"""The conversion helpers, without a gateway."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from pydantic_ai_harness.ask_user import (
    DECLINED,
    TIMED_OUT,
    AskUserAnswer,
    AskUserRequest,
    AskUserResponse,
    ask_user_result,
)
from scripted import ask_call

from askgate import (
    AskRejected,
    Backoff,
    FieldError,
    Outcome,
    PostedRequest,
    RequestWithdrawn,
    agent_url,
    http_base,
)
from askgate._client import _Ask, is_fatal_close
from askgate._errors import field_errors
from askgate._wire import check_request_id, check_session_id, requests_path
from askgate.harness import gateway_timeout, response_from_json, response_from_outcome, result_from_outcome
from askgate.langgraph import resume_payload


def outcome(kind: str, response: object = None, result: object = None) -> Outcome:
    return Outcome.from_json(
        {"session": "s", "id": "r", "outcome": kind, "response": response, "result": result, "model_text": None}
    )


@pytest.mark.parametrize(
    ("url", "ws", "http"),
    [
        ("http://127.0.0.1:8080", "ws://127.0.0.1:8080/v1/agent", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/", "ws://127.0.0.1:8080/v1/agent", "http://127.0.0.1:8080"),
        ("https://gate.example/prefix/", "wss://gate.example/prefix/v1/agent", "https://gate.example/prefix"),
        ("ws://h:1", "ws://h:1/v1/agent", "http://h:1"),
        ("ws://h:1/v1/agent", "ws://h:1/v1/agent", "http://h:1"),
        ("wss://h/custom", "wss://h/custom", "https://h/custom"),
        ("http://h/v1/agent", "ws://h/v1/agent", "http://h"),
    ],
)
def test_urls(url: str, ws: str, http: str) -> None:
    assert agent_url(url) == ws
    assert http_base(url) == http


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "ftp://h", "http://", "http://h/?x=1", "http://h/#k=1"])
def test_bad_urls(url: str) -> None:
    with pytest.raises(ValueError):
        agent_url(url)


def test_ids() -> None:
    assert check_session_id("thread-42.a_b:c") == "thread-42.a_b:c"
    # A URL path resolves `.` and `..` away, so their viewer links would lead elsewhere.
    assert check_session_id("...") == "..."
    assert check_session_id(".a") == ".a"
    for bad in ["", "a b", "x" * 129, "é", ".", ".."]:
        with pytest.raises(ValueError):
            check_session_id(bad)
    assert check_request_id("call_abc/1?#") == "call_abc/1?#"
    for bad in ["", "a b", "x" * 257, "é"]:
        with pytest.raises(ValueError):
            check_request_id(bad)
    assert requests_path("s", "a/b?c") == "/v1/sessions/s/requests/a%2Fb%3Fc"


@pytest.mark.parametrize(
    ("remaining", "cap", "expected"),
    [
        (None, None, (None, False)),
        (1.5, None, (1.35, True)),
        (10.0, None, (9.0, True)),
        (600.0, None, (599.0, True)),
        (0.0, None, (0.001, True)),
        (-1.0, None, (0.001, True)),
        (float("inf"), None, (None, False)),
        (None, 30.0, (30.0, False)),
        (600.0, 30.0, (30.0, False)),
        (10.0, 600.0, (9.0, True)),
    ],
)
def test_gateway_timeout(remaining: float | None, cap: float | None, expected: tuple[float | None, bool]) -> None:
    got = gateway_timeout(remaining, cap)
    assert got[1] == expected[1]
    assert got[0] == pytest.approx(expected[0]) if expected[0] is not None else got[0] is None


def test_response_from_json_keeps_order_selected_and_custom() -> None:
    response = response_from_json(
        {
            "answers": [
                {"header": "B", "selected": ["y", "x"]},
                {"header": "A", "custom_answer": "mine\nsecond line"},
            ],
            "cancelled": False,
        }
    )
    assert response == AskUserResponse(
        answers=(
            AskUserAnswer(header="B", selected=("y", "x")),
            AskUserAnswer(header="A", custom_answer="mine\nsecond line"),
        )
    )


def test_response_and_result_per_outcome() -> None:
    answered = outcome(
        "answered",
        response={"answers": [{"header": "Color", "selected": ["Red"]}], "cancelled": False},
        result={"Color": ["Red"]},
    )
    assert response_from_outcome(answered) == AskUserResponse(answers=(AskUserAnswer(header="Color", selected=("Red",)),))
    assert result_from_outcome(answered) == {"Color": ["Red"]}
    request = AskUserRequest.from_tool_call(
        ask_call([{"header": "Color", "question": "?", "options": [{"label": "Red"}, {"label": "Blue"}]}], "c")
    )
    assert result_from_outcome(answered) == ask_user_result(request, response_from_outcome(answered))

    declined = outcome("declined", response={"answers": [], "cancelled": True}, result=DECLINED)
    assert response_from_outcome(declined) == AskUserResponse(cancelled=True)
    assert result_from_outcome(declined) == DECLINED == ask_user_result(request, response_from_outcome(declined))

    timed_out = outcome("timed_out", response={"answers": [], "cancelled": True}, result=TIMED_OUT)
    assert response_from_outcome(timed_out) == AskUserResponse(cancelled=True)
    assert result_from_outcome(timed_out) == TIMED_OUT

    withdrawn = outcome("withdrawn")
    with pytest.raises(RequestWithdrawn):
        response_from_outcome(withdrawn)
    with pytest.raises(RequestWithdrawn):
        result_from_outcome(withdrawn)
    with pytest.raises(RequestWithdrawn):
        resume_payload(withdrawn)


def test_resume_payload() -> None:
    assert resume_payload(outcome("answered", response={"answers": ["a"]})) == {"answers": ["a"]}
    cancelled = {"status": "cancelled", "answers": ["", ""]}
    assert resume_payload(outcome("declined", response=cancelled)) == cancelled


def test_outcome_from_json() -> None:
    frame = {
        "type": "outcome",
        "session": "s",
        "id": "r",
        "outcome": "answered",
        "response": {},
        "result": {},
        "model_text": "{}",
        "by": "t-1",
        "at_ms": 12,
    }
    got = Outcome.from_json(frame)
    assert (got.session, got.id, got.outcome, got.model_text, got.by, got.at_ms) == ("s", "r", "answered", "{}", "t-1", 12)
    assert Outcome.from_json({"id": "r", "outcome": "declined"}, session="x").session == "x"
    with pytest.raises(ValueError):
        Outcome.from_json({"outcome": "maybe"})


def test_errors() -> None:
    errors = field_errors([{"path": "questions[0].header", "message": "too long", "code": "too_long"}, "junk"])
    assert errors == (FieldError(path="questions[0].header", message="too long", code="too_long"),)
    assert "questions[0].header: too long" in str(AskRejected("s", "r", errors))
    assert field_errors(None) == ()


def test_posted_request_round_trip() -> None:
    posted = PostedRequest(id="call_1", viewer_url="http://h/s/x#k=y", deadline_ms=5)
    assert PostedRequest.from_json(posted.to_json()) == posted


def test_backoff_and_close_codes() -> None:
    backoff = Backoff()
    assert [backoff.ceiling(n) for n in range(8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert all(0.05 <= backoff.delay(3) <= 0.8 for _ in range(100))
    assert backoff.ceiling(10_000) == 5.0
    for code in (4400, 4401, 4404, 4413, 1002, 1008):
        assert is_fatal_close(code), code
    for code in (1000, 1001, 1006, 1011, 1012, 1013, 4408, 4429):
        assert not is_fatal_close(code), code


def test_resent_ask_carries_what_is_left_of_its_deadline() -> None:
    loop = asyncio.new_event_loop()
    try:
        ask = _Ask(
            session="s",
            id="r",
            dialect="harness",
            questions=[],
            title="t",
            deadline=100.0,
            future=loop.create_future(),
        )
        assert ask.frame(90.0) == {
            "type": "ask",
            "session": "s",
            "id": "r",
            "questions": [],
            "dialect": "harness",
            "timeout_s": 10.0,
            "title": "t",
        }
        assert ask.frame(101.0)["timeout_s"] == 0.001
        ask.deadline = None
        assert "timeout_s" not in ask.frame(0.0)
    finally:
        loop.close()


def test_import_askgate_needs_no_framework() -> None:
    code = (
        "import sys, askgate\n"
        "assert 'pydantic_ai_harness' not in sys.modules and 'langgraph' not in sys.modules\n"
        "askgate.GatewayAnswerer\n"
        "assert 'pydantic_ai_harness' in sys.modules and 'langgraph' not in sys.modules\n"
        "askgate.answer_interrupts\n"
        "assert 'langgraph' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_an_http_ask_carries_its_reminder_and_escalation_checked() -> None:
    from askgate._http import ask_body

    body = ask_body(
        id="r", questions=[], remind_after_s=900, escalate={"after_s": 1.5, "to": ["group:leads"]}
    )
    assert body["remind_after_s"] == 900.0
    assert body["escalate"] == {"after_s": 1.5, "to": ["group:leads"]}
    assert "remind_after_s" not in ask_body(id="r", questions=[])
    with pytest.raises(ValueError, match=r"^escalate.after_s: positive seconds, got None"):
        ask_body(id="r", questions=[], escalate={"to": ["a"]})
    with pytest.raises(ValueError, match=r"^escalate.soon: escalate takes"):
        ask_body(id="r", questions=[], escalate={"after_s": 1, "to": ["a"], "soon": True})
    with pytest.raises(ValueError, match=r"^remind_after_s: positive seconds, got True"):
        ask_body(id="r", questions=[], remind_after_s=True)
