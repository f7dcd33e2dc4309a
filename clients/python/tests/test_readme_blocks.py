"""Every runnable ```python block of `README.md` and `clients/python/README.md` runs as written, as
a new user would run it: a script on its own, against a gateway of its own (its address put in
place of `http://127.0.0.1:8080`, nothing else changed), answered in a headless tab with the
first choices, and it prints what EXPECTED says.

A block added to either README is run here too unless its first line is `# fragment: <why>`
(`test_readme.py` checks those parse). It needs an entry in EXPECTED: the test that compares
the two lists names what is missing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gateway import Gateway
from readme_examples import Block, python_blocks, run_example

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


@dataclass(frozen=True)
class Expect:
    output: str
    """The last line the example prints."""
    shown: list[dict[str, Any]]
    """What the tab was shown, request by request, in order: each entry lists only the fields
    that matter (see `matches`)."""


def approval(query: str) -> dict[str, Any]:
    return {"dialect": "approval", "calls": [{"name": "run_sql", "args": {"query": query}}]}


RAN = "The tool returned 'ran DELETE FROM users WHERE inactive'"
COLOR = {"dialect": "harness", "questions": [{"header": "Color", "options": [{"label": "Red"}, {"label": "Blue"}]}]}
PY = "clients/python/README.md > "

EXPECTED = {
    "README.md > Use it from pydantic-ai": Expect(
        "The tool returned {'Database': ['PostgreSQL']}", [{"dialect": "harness", "questions": [{"header": "Database"}]}]
    ),
    "README.md > Use it from LangGraph": Expect("{'answers': ['askgate', 'stable']}", [{"dialect": "deepagents"}]),
    "README.md > Approve tool calls (OpenAI Agents, LangChain, pydantic-ai, AG-UI)": Expect(
        "The tool returned 'ran DROP TABLE users'", [approval("DROP TABLE users")]
    ),
    "README.md > Answer MCP forms and Claude's questions": Expect(
        "accept: version='askgate' notify=True",
        [{"dialect": "form", "server": "deployer", "fields": [{"name": "version"}, {"name": "notify", "default": True}]}],
    ),
    PY + "pydantic-ai-harness: `GatewayAnswerer`": Expect("The tool returned {'Color': ['Red']}", [COLOR]),
    PY + "pydantic-ai-harness: paused runs": Expect("The tool returned {'Color': ['Red']}", [COLOR]),
    PY + "LangGraph: `ask_user` interrupts": Expect("{'answers': ['stable']}", [{"dialect": "deepagents"}]),
    PY + "OpenAI Agents SDK: `approve_interruptions`": Expect(RAN, [approval("DELETE FROM users WHERE inactive")]),
    PY + "LangChain: `answer_hitl`": Expect(RAN, [approval("DELETE FROM users WHERE inactive")]),
    PY + "pydantic-ai: `collect_approvals` and `GatewayApprovals`": Expect(
        RAN, [approval("DELETE FROM users WHERE inactive")]
    ),
    PY + "pydantic-ai: `collect_approvals` and `GatewayApprovals` #2": Expect(
        RAN, [approval("DELETE FROM users WHERE inactive")]
    ),
    PY + "AG-UI: `resume`": Expect(
        "[{'interruptId': 'int-call_1', 'status': 'resolved', 'payload': {'approved': True}}]",
        [approval("DELETE FROM users WHERE inactive")],
    ),
    PY + "MCP: elicitation": Expect(
        "booked for askgate, 1 guest(s)",
        [{"dialect": "form", "server": "bistro", "fields": [{"name": "name"}, {"name": "guests"}, {"name": "vegetarian"}]}],
    ),
    PY + "Google ADK: `answer_requests`": Expect("Done.", [approval("DELETE FROM users WHERE inactive")]),
    PY + "CrewAI Flows: `GatewayFeedback`": Expect("Published (approved: askgate)", [{"dialect": "form"}]),
    PY + "Claude Agent SDK: `AskUserQuestion` and tool approvals": Expect(
        "Answered: {'Which database should the service use?': 'Postgres'}",
        [{"dialect": "claude", "questions": [{"header": "Database"}]}],
    ),
}

RUNNABLE = [block for block in python_blocks() if not block.is_fragment]


def matches(actual: Any, expected: Any) -> bool:
    """`actual` has what `expected` lists: a dict's listed keys (others are ignored), a list's
    items one for one, any other value equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(key in actual and matches(actual[key], value) for key, value in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(matches, actual, expected))
    return bool(actual == expected)


def test_every_runnable_block_has_its_expectation() -> None:
    ids = [block.id for block in RUNNABLE]
    assert len(ids) == len(set(ids)), ids
    assert not set(ids) - set(EXPECTED), f"README blocks with no entry in EXPECTED: {sorted(set(ids) - set(EXPECTED))}"
    assert not set(EXPECTED) - set(ids), f"EXPECTED entries with no README block: {sorted(set(EXPECTED) - set(ids))}"


def test_matches() -> None:
    shown = {"dialect": "form", "fields": [{"name": "a", "kind": "text"}, {"name": "b"}]}
    assert matches(shown, {"fields": [{"name": "a"}, {"name": "b"}]})
    assert not matches(shown, {"fields": [{"name": "a"}]})
    assert not matches(shown, {"fields": [{"name": "a"}, {"name": "c"}]})
    assert not matches(shown, {"server": None})


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.id for block in RUNNABLE])
async def test_readme_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    expect = EXPECTED.get(block.id)
    assert expect is not None, f"{block.where}: add {block.id!r} to EXPECTED"
    # A gateway of its own: examples reuse session names and tool call ids ("thread-1", "call_1"),
    # which on a shared gateway would collect another example's answer.
    gateway = Gateway(tmp_path / "gateway").start()
    try:
        run = await run_example(block.code, gateway.url, cwd=tmp_path, timeout=90)
    finally:
        gateway.stop()
    assert run.returncode == 0, f"{block.where}: {run}"
    assert run.shown, f"{block.where}: the example asked nothing (it must print `Answer at <link>`):\n{run}"
    assert run.last_line == expect.output, f"{block.where}: {run}"
    assert matches(run.shown, expect.shown), f"{block.where}: the tab was shown {run.shown}"
    # What a new user would see on the terminal: no traceback, no warning.
    assert not re.search(r"Traceback|\w+Warning:", run.stderr), f"{block.where}: {run}"
