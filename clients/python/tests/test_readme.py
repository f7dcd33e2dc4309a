"""The repository README's "Use it from pydantic-ai" and "Use it from LangGraph" examples run as
written (against the test gateway instead of 127.0.0.1:8080), answered by a headless tab; the
package README's snippets import what they use, and the signatures it shows are the code's."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from gateway import REPO, Gateway
from tab import RunExample

import askgate

pytestmark = pytest.mark.anyio


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
async def test_readme_example_runs(gateway: Gateway, run_example: RunExample, heading: str, expected: str) -> None:
    code = example(heading)
    assert "http://127.0.0.1:8080" in code
    _, text = await run_example(code.replace("http://127.0.0.1:8080", gateway.url), 30)
    assert text.rstrip().endswith(expected), text


PACKAGE_README = Path(__file__).resolve().parents[1] / "README.md"

PLACEHOLDERS = {"model", "URL", "graph", "inputs", "config"}
"""What the package README's snippets leave to the reader."""


def unbound_names(code: str) -> set[str]:
    """Names `code` reads that it neither imports nor binds, builtins aside."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(code, "README.md", "exec", flags=flags, dont_inherit=True)
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            bound.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    return read - bound - set(dir(builtins))


def test_package_readme_snippets_import_what_they_use() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PACKAGE_README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 3
    for block in blocks:
        assert unbound_names(block) <= PLACEHOLDERS, block


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
