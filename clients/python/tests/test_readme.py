"""The repository README's "Use it from pydantic-ai" and "Use it from LangGraph" examples run as
written (against the test gateway instead of 127.0.0.1:8080), answered by a headless tab."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Awaitable, Callable

import pytest
from gateway import REPO, Gateway
from tab import Tab, first_choices

pytestmark = pytest.mark.anyio

Tabs = Callable[[str], Awaitable[Tab]]


def example(heading: str) -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"\n## {heading}\n", 1)
    assert len(section) == 2, f"README.md has no section {heading!r}"
    body = section[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", body, flags=re.S)
    assert len(blocks) == 1, f"expected one python block under {heading!r}, found {len(blocks)}"
    return blocks[0]


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Use it from pydantic-ai", "The tool returned {'Database': ['PostgreSQL']}"),
        ("Use it from LangGraph", "{'answers': ['askgate', 'stable']}"),
    ],
)
async def test_readme_example_runs(gateway: Gateway, tabs: Tabs, heading: str, expected: str) -> None:
    code = example(heading)
    assert "http://127.0.0.1:8080" in code
    code = code.replace("http://127.0.0.1:8080", gateway.url)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-u",
        "-c",
        code,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    output: list[str] = []
    try:
        async with asyncio.timeout(30):
            while True:
                line = (await process.stdout.readline()).decode()
                assert line, "the example ended before printing its link:\n" + "".join(output)
                output.append(line)
                if line.startswith("Answer at "):
                    break
            tab = await tabs(line.removeprefix("Answer at ").strip())
            shown = await tab.next_request()
            resolved = await tab.answer(shown["id"], first_choices(shown))
            assert resolved["outcome"] == "answered"
            rest, _ = await process.communicate()
            output.append(rest.decode())
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    text = "".join(output)
    assert process.returncode == 0, text
    assert text.rstrip().endswith(expected), text
