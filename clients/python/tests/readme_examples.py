"""The READMEs' code blocks, and a runner that runs one as a new user would and answers it.

Every ```python block of `README.md` and `clients/python/README.md` is one of two kinds:

- runnable (the default): it runs as written against a gateway on `http://127.0.0.1:8080`
  (the tests put their own gateway's address in its place; nothing else is changed), prints
  `Answer at <viewer link>` for whatever it asks, and exits 0 once a person has answered;
- a fragment: its first line is `# fragment: <why>`, and it is only checked to parse.

There is no third kind, so a block added later is run unless it says it is a fragment.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway import REPO
from tab import Tab, first_choices

READMES = (REPO / "README.md", REPO / "clients" / "python" / "README.md")

FRAGMENT = "# fragment:"
"""The first line of a block that is deliberately not a whole program."""

GATEWAY_URL = "http://127.0.0.1:8080"
"""The gateway address the runnable examples use, replaced with the test gateway's."""

_FENCE = re.compile(r"^```(\S*)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a README."""

    path: Path
    line: int
    """The line of its opening fence (1-based)."""
    heading: str
    """The nearest heading above it."""
    index: int
    """Its position among the blocks of its language under that heading (0-based)."""
    language: str
    code: str

    @property
    def id(self) -> str:
        """Stable across edits elsewhere in the file: the README, the heading and the position."""
        suffix = f" #{self.index + 1}" if self.index else ""
        return f"{self.file} > {self.heading}{suffix}"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def file(self) -> str:
        return str(self.path.relative_to(REPO)) if self.path.is_relative_to(REPO) else str(self.path)

    @property
    def is_fragment(self) -> bool:
        return self.code.startswith(FRAGMENT)


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order. Fences are read line by line (not with a
    regex over the text) so that a `#` comment inside a block is never taken for a heading."""
    found: list[Block] = []
    heading = ""
    counts: dict[tuple[str, str], int] = {}
    opened: tuple[int, str] | None = None
    lines: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line)
        if opened is None:
            if fence:
                opened, lines = (number, fence.group(1)), []
            elif match := _HEADING.match(line):
                heading = match.group(2)
            continue
        if fence and not fence.group(1):
            start, language = opened
            index = counts.get((heading, language), 0)
            counts[(heading, language)] = index + 1
            found.append(Block(path, start, heading, index, language, "".join(f"{text}\n" for text in lines)))
            opened = None
        else:
            lines.append(line)
    assert opened is None, f"{path}:{opened[0]}: a code block is never closed"
    return found


def python_blocks() -> list[Block]:
    return [block for path in READMES for block in blocks(path) if block.language == "python"]


def unbound_names(tree: ast.AST) -> set[str]:
    """Names the code reads that it neither imports nor binds anywhere, builtins aside. Scopes are
    not followed, so this only catches a name bound nowhere (a `model` left to the reader), which
    is what a README example gets wrong; running it catches the rest."""
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    return read - bound - set(dir(builtins))


def problems(block: Block) -> list[str]:
    """What keeps `block` from being what it says it is, read without running it: a fragment
    must say why and parse; a runnable block must be a whole program (no top-level `await`, every
    name bound) that uses the gateway at GATEWAY_URL."""
    if block.is_fragment:
        found = [] if block.code.splitlines()[0].removeprefix(FRAGMENT).strip() else ["the fragment marker gives no reason"]
        try:
            ast.parse(block.code)
        except SyntaxError as error:
            found.append(f"the fragment does not parse: {error}")
        return found
    try:
        # Compiled to bytecode, as `python -c` does: a top-level `await` passes the parser and is
        # refused only here.
        compile(block.code, block.where, "exec", dont_inherit=True)
        tree = ast.parse(block.code)
    except SyntaxError as error:
        return [f"not a program Python runs ({error}); a deliberate fragment starts with `{FRAGMENT} <why>`"]
    found = []
    if unbound := unbound_names(tree):
        found.append(f"reads names it never binds or imports: {', '.join(sorted(unbound))}")
    if GATEWAY_URL not in block.code:
        found.append(f"does not use the gateway at {GATEWAY_URL}")
    return found


@dataclass
class ExampleRun:
    """What a run printed, and every request a tab was shown (and answered) meanwhile."""

    returncode: int
    stdout: str
    stderr: str
    shown: list[dict[str, Any]] = field(default_factory=list)

    @property
    def last_line(self) -> str:
        lines = self.stdout.strip().splitlines()
        return lines[-1] if lines else ""

    def __str__(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout}--- stderr\n{self.stderr}"


async def run_example(code: str, gateway_url: str, cwd: Path, timeout: float) -> ExampleRun:
    """Run `code` as a script, pointed at `gateway_url`, until it exits. For every link it prints
    (`Answer at <link>`) a headless tab answers each request shown there, as it comes, with its
    first choices (`tab.first_choices`: approve every call, the first option, a form's
    defaults); the example's own prints are left as they are. Fails after `timeout` seconds."""
    assert GATEWAY_URL in code, f"the example does not use the gateway at {GATEWAY_URL}"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code.replace(GATEWAY_URL, gateway_url),
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PYTHONUNBUFFERED": "1", "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )
    assert process.stdout is not None and process.stderr is not None
    run = ExampleRun(returncode=-1, stdout="", stderr="")
    tabs: dict[str, Tab] = {}

    async def answer_every_request(tab: Tab) -> None:
        while True:
            request = await tab.requests.get()
            run.shown.append(request)
            resolved = await tab.answer(request["id"], first_choices(request))
            assert resolved["outcome"] == "answered", resolved

    try:
        async with asyncio.timeout(timeout), asyncio.TaskGroup() as group:
            stderr = group.create_task(process.stderr.read())
            answering = []
            while line := (await process.stdout.readline()).decode():
                run.stdout += line
                link = line.removeprefix("Answer at ").strip()
                if line.startswith("Answer at ") and link not in tabs:
                    tabs[link] = await Tab.connect(link)
                    answering.append(group.create_task(answer_every_request(tabs[link])))
            run.returncode = await process.wait()
            run.stderr = (await stderr).decode()
            for task in answering:
                task.cancel()
    except TimeoutError:
        raise AssertionError(f"the example did not end within {timeout} s:\n{run}") from None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        for tab in tabs.values():
            with contextlib.suppress(Exception):
                await tab.close()
    return run
