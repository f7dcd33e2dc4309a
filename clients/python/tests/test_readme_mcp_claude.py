"""The package README's MCP and Claude Agent SDK examples run as written, against the test gateway,
answered in a headless tab with its first choices. The MCP example needs nothing else (its server
runs in process); the Claude example gets the scripted CLI (`claude_cli.ScriptedCLI`) as its
`transport`, in place of the Claude Code CLI and a model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from gateway import Gateway
from tab import RunExample

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

README = Path(__file__).resolve().parents[1] / "README.md"
TESTS = Path(__file__).resolve().parent


def example(heading: str) -> str:
    """The first python block of the README's `## <heading>` section."""
    text = README.read_text(encoding="utf-8")
    section = re.split(rf"\n## {re.escape(heading)}[:\n]", text, maxsplit=1)
    assert len(section) == 2, f"README.md has no section {heading!r}"
    body = re.split(r"\n## ", section[1], maxsplit=1)[0]
    blocks = re.findall(r"```python\n(.*?)```", body, flags=re.S)
    assert blocks, f"expected a python block under {heading!r}"
    return str(blocks[0])


def on_gateway(code: str, gateway: Gateway, session: str) -> str:
    assert "http://127.0.0.1:8080" in code and '"thread-1"' in code
    return code.replace("http://127.0.0.1:8080", gateway.url).replace('"thread-1"', repr(session))


async def test_readme_mcp_example_runs(gateway: Gateway, session: str, run_example: RunExample) -> None:
    code = on_gateway(example("MCP"), gateway, session)
    shown, text = await run_example(code, 60)
    assert shown["dialect"] == "form"
    assert shown["server"] == "bistro"
    assert [field["name"] for field in shown["fields"]] == ["name", "guests", "vegetarian"]
    assert text.rstrip().endswith("booked for askgate, 1 guest(s)"), text


QUESTION = {
    "question": "Which database should the service use?",
    "header": "Database",
    "options": [{"label": "Postgres", "description": "Relational"}, {"label": "SQLite", "description": "One file"}],
    "multiSelect": False,
}


@pytest.mark.parametrize(
    ("tool", "input", "dialect", "expected"),
    [
        (
            "AskUserQuestion",
            {"questions": [QUESTION]},
            "claude",
            {"behavior": "allow", "updatedInput": {"questions": [QUESTION], "answers": {QUESTION["question"]: "Postgres"}}},
        ),
        ("Bash", {"command": "ls"}, "approval", {"behavior": "allow", "updatedInput": {"command": "ls"}}),
    ],
)
async def test_readme_claude_example_runs(
    gateway: Gateway,
    session: str,
    run_example: RunExample,
    tool: str,
    input: dict[str, object],
    dialect: str,
    expected: dict[str, object],
) -> None:
    code = on_gateway(example("Claude Agent SDK"), gateway, session)
    assert code.count("options=options)") == 1
    code = code.replace("options=options)", "options=options, transport=transport)")
    prelude = (
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from claude_cli import ScriptedCLI\n"
        f"transport = ScriptedCLI({tool!r}, {input!r})\n"
    )
    shown, text = await run_example(prelude + code, 60)
    assert shown["dialect"] == dialect
    # The scripted CLI ends the run with what the SDK answered it, which the example prints.
    assert json.loads(text.strip().splitlines()[-1]) == expected, text
