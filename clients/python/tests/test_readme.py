"""The READMEs' code, read without running it: every ```python block of both READMEs is either
a whole program (run by `test_readme_blocks.py`) or a fragment that says so and parses, and the
signatures the package README shows are the code's."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
from pathlib import Path
from typing import Any

from readme_examples import FRAGMENT, READMES, REPO, blocks, problems, python_blocks

import askgate

PACKAGE_README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_python_block_is_a_program_or_a_marked_fragment() -> None:
    found = python_blocks()
    # Both READMEs were read: the main one's pydantic-ai, LangGraph, approval and MCP examples,
    # the package's ten.
    assert len(found) >= 14, [block.id for block in found]
    wrong = {f"{block.where} ({block.id})": problems(block) for block in found if problems(block)}
    assert not wrong, wrong


def test_no_python_block_hides_under_another_label() -> None:
    # A block fenced ```py, ```python3 or with no language at all would not be collected: every
    # opening fence names its language, and Python's is spelled `python`.
    for path in READMES:
        for block in blocks(path):
            assert block.language, f"{block.where}: a code block without a language"
            if re.fullmatch(r"(?i)py(thon)?\d?|pycon|ipython|py3", block.language):
                assert block.language == "python", f"{block.where}: spell the language `python`"


def test_the_package_readmes_other_blocks_are_marked_fragments_that_parse() -> None:
    # The Python package's README runs its python blocks (test_readme_blocks.py), the TypeScript
    # package's its js blocks (its own test/readme.test.ts); what else they hold are commands to
    # type (pip install, npm install ...), which say so and must at least parse.
    typescript = REPO / "clients" / "typescript" / "README.md"
    checked = 0
    for path, run_elsewhere in ((PACKAGE_README, "python"), (typescript, "js")):
        for block in blocks(path):
            if block.language == run_elsewhere:
                continue
            assert block.language == "sh", f"{block.where}: a {block.language} block no test reads"
            first = block.code.splitlines()[0] if block.code else ""
            assert block.is_fragment and first[len(FRAGMENT) :].strip(), (
                f"{block.where}: a command block no test runs says so: `{FRAGMENT} <why>` first"
            )
            parsed = subprocess.run(["bash", "-n"], input=block.code, text=True, capture_output=True, check=False)
            assert parsed.returncode == 0, f"{block.where}: {parsed.stderr}"
            checked += 1
    assert checked >= 2, checked


def test_fragments_and_programs_are_told_apart(tmp_path: Path) -> None:
    # The checks on a README of our own, so that each of them is seen to fail.
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Top\n\n## A section\n\n```python\n# a comment, not a heading\nprint(1)\n```\n\n"
        f"```python\n{FRAGMENT} shows one call\nresult = await client.ask(session, questions)\n```\n\n"
        f"```python\n{FRAGMENT}\nx = 1\n```\n\n"
        f"```python\n{FRAGMENT} a broken one\ndef f(:\n```\n\n"
        "### Another\n\n```python\nimport asyncio\nawait asyncio.sleep(0)\n```\n\n"
        "```python\nprint(model, 'http://127.0.0.1:8080')\n```\n\n```sh\nls\n```\n",
        encoding="utf-8",
    )
    found = blocks(readme)
    assert [(b.heading, b.index, b.language, b.is_fragment) for b in found] == [
        ("A section", 0, "python", False),
        ("A section", 1, "python", True),
        ("A section", 2, "python", True),
        ("A section", 3, "python", True),
        ("Another", 0, "python", False),
        ("Another", 1, "python", False),
        ("Another", 0, "sh", False),
    ]
    assert found[0].code == "# a comment, not a heading\nprint(1)\n"
    assert [problems(block) for block in found[:2]] == [["does not use the gateway at http://127.0.0.1:8080"], []]
    assert problems(found[2]) == ["the fragment marker gives no reason"]
    assert [p.split(":")[0] for p in problems(found[3])] == ["the fragment does not parse"]
    assert "'await' outside function" in problems(found[4])[0]
    assert problems(found[5]) == ["reads names it never binds or imports: model"]


ADAPTER_MODULES = ("openai_agents", "langchain", "pydantic_ai", "agui", "mcp", "claude")
"""The approval, MCP and Claude adapters, whose functions the README names without their module."""


def documented(name: str) -> Any:
    """The askgate callable a README span names, or None for anything else."""
    owner, _, attribute = name.rpartition(".")
    instances = {"client": askgate.Client("http://h"), "answerer": askgate.GatewayAnswerer("http://h")}
    if owner in instances:
        return getattr(instances[owner], attribute, None)
    if owner in ("", "askgate") and attribute in askgate.__all__:
        return getattr(askgate, attribute)
    for module_name in ADAPTER_MODULES:
        module = importlib.import_module(f"askgate.{module_name}")
        if owner in ("", f"askgate.{module_name}") and attribute in module.__all__:
            return getattr(module, attribute)
    return None


def test_package_readme_signatures_are_the_codes() -> None:
    spans = re.findall(r"`(?:await )?([\w.]+)\(([^`]*)\)`", PACKAGE_README.read_text(encoding="utf-8"))
    checked = 0
    names: set[str] = set()
    for name, params in spans:
        target = documented(name)
        if target is None:
            continue
        try:
            shown = ast.parse(f"def f({params}): pass").body[0]
        except SyntaxError:
            continue  # a call with arguments, not a signature
        assert isinstance(shown, ast.FunctionDef)
        defaults = [ast.literal_eval(d) for d in shown.args.defaults + [d for d in shown.args.kw_defaults if d]]
        if Ellipsis in defaults:
            continue  # a call with its arguments elided
        real = inspect.signature(target).parameters
        positional = [p for p in real.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for index, arg in enumerate(shown.args.args):
            assert index < len(positional) and positional[index].name == arg.arg, (
                f"`{name}({params})`: {arg.arg!r} cannot be passed as argument {index + 1}"
            )
        for arg in shown.args.kwonlyargs:
            assert arg.arg in real and real[arg.arg].kind != real[arg.arg].POSITIONAL_ONLY, f"`{name}({params})`"
        given = shown.args.args[len(shown.args.args) - len(shown.args.defaults) :] + [
            a for a, d in zip(shown.args.kwonlyargs, shown.args.kw_defaults, strict=True) if d is not None
        ]
        for arg, default in zip(given, defaults, strict=True):
            assert real[arg.arg].default == default, f"`{name}({params})`: {arg.arg} defaults to {real[arg.arg].default!r}"
        checked += 1
        names.add(name)
    assert checked >= 4
    # Every approval, MCP and Claude adapter's signature is shown, and is the code's.
    adapters = {"approve_interruptions", "answer_hitl", "collect_approvals", "GatewayApprovals", "resume"}
    assert adapters | {"elicitation_callback", "can_use_tool"} <= names
