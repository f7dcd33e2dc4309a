"""Every block of the main README that is not Python (```sh, ```toml, ```rust) is held to what it
shows, as `test_readme_blocks.py` holds the Python ones:

- a shell block made of curl calls runs as written (bash, the test gateway's address in place of
  `http://127.0.0.1:8080`), each call succeeds with the status and the reply its `#` comments
  show, and a call that waits for a person is answered in a headless tab meanwhile;
- a fragment (`# fragment: <why>` on its first line) parses (`bash -n`); those that show the
  gateway's own commands have them run apart (the notify file's `serve`, the operator's
  `askgate requests`), each against a gateway of its own started with the block's flags;
- the notify file parses (tomllib) and the gateway starts on it;
- the config file passes `askgate config check`, and `serve --config` takes it;
- the Rust block is the crate docs' example, which `cargo test --doc` compiles.

BLOCKS names every such block and how it is checked: a block added to the README, or one of a
language not listed, fails `test_every_block_is_covered` until it is given a check here."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from gateway import REPO, Gateway, binary
from readme_examples import FRAGMENT, GATEWAY_URL, Block, blocks
from readme_shell_support import (
    ANY,
    MORE,
    Call,
    ShellRun,
    bash_parses,
    calls,
    conforms,
    doc_example,
    fragment_reason,
    run_shell,
    shape,
)
from tab import Tab, first_choices, live_url
from websockets.asyncio.client import connect

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

MAIN = REPO / "README.md"
CRATE_DOCS = REPO / "crates" / "client" / "src" / "lib.rs"

RUN_IT = ("README.md > Run it", "sh")
CONFIG_FILE = ("README.md > Run it", "toml")
TEST_IT = ("README.md > Test it", "sh")
RUST = ("README.md > Use it from Rust", "rust")
HTTP = ("README.md > Use it over WebSocket or HTTP", "sh")
LINK = ("README.md > People, who may answer, and the audit trail", "sh")
NOTIFY_FILE = ("README.md > Tell people: webhooks, e-mail, Slack, push, reminders", "toml")
NOTIFY_SERVE = ("README.md > Tell people: webhooks, e-mail, Slack, push, reminders", "sh")
DEFAULT = ("README.md > When nobody answers, and what is open", "sh")
OPERATOR = ("README.md > When nobody answers, and what is open #2", "sh")

BLOCKS: dict[tuple[str, str], str] = {
    RUN_IT: "fragment",  # builds the workspace and serves on :8080 until stopped
    CONFIG_FILE: "toml",  # test_config_file_is_checked_and_served
    TEST_IT: "fragment",  # the whole test suite, this file among it
    RUST: "crate docs",  # test_rust_block_is_the_crate_docs_example
    HTTP: "curl",  # test_http_block_runs_as_written
    LINK: "curl",  # test_link_block_runs_as_written
    NOTIFY_FILE: "toml",  # test_notify_file_parses, test_notify_block_against_its_file
    NOTIFY_SERVE: "fragment",  # `serve` holds the shell: test_notify_block_against_its_file
    DEFAULT: "curl",  # test_default_block_runs_as_written
    OPERATOR: "fragment",  # starts a second gateway: test_operator_commands_as_written
}
"""Every non-Python block of the main README, by (id, language), and how it is checked."""

LANGUAGES = {"sh", "toml", "rust"}


def key(block: Block) -> tuple[str, str]:
    return (block.id, block.language)


def coverage_problems(found: list[Block], table: dict[tuple[str, str], str]) -> list[str]:
    """What keeps the non-Python blocks of a README from being exactly those `table` covers, each
    as the kind it says: a fragment marked and parsing, a runnable shell block of curl calls
    against GATEWAY_URL, a TOML file tomllib reads."""
    wrong: list[str] = []
    others = [block for block in found if block.language != "python"]
    for block in others:
        if block.language not in LANGUAGES:
            wrong.append(f"{block.where}: a ```{block.language} block, which no test here runs or checks")
        elif key(block) not in table:
            wrong.append(f"{block.where}: {key(block)} is not covered: add it to BLOCKS with a check")
    keys = [key(block) for block in others]
    wrong += [f"two blocks are {k}" for k in sorted(set(keys)) if keys.count(k) > 1]
    wrong += [f"BLOCKS covers {k}, which the README no longer has" for k in table if k not in keys]
    for block in others:
        kind = table.get(key(block))
        if kind is None:
            continue
        if block.is_fragment != (kind == "fragment"):
            wrong.append(
                f"{block.where}: marked as a fragment, but {kind!r} here"
                if block.is_fragment
                else f"{block.where}: a fragment here, but its first line is not `{FRAGMENT} <why>`"
            )
            continue
        if block.is_fragment and not fragment_reason(block.code):
            wrong.append(f"{block.where}: the fragment marker gives no reason")
        if block.language == "sh" and (complaint := bash_parses(block.code)):
            wrong.append(f"{block.where}: bash cannot parse it: {complaint}")
        if block.language == "toml":
            try:
                tomllib.loads(block.code)
            except tomllib.TOMLDecodeError as error:
                wrong.append(f"{block.where}: not TOML: {error}")
        if kind == "curl":
            for call in calls(block.code):
                if call.program != "curl" or GATEWAY_URL not in call.command:
                    wrong.append(f"{block.where}: not a curl call to {GATEWAY_URL}: {call.command!r}")
    return wrong


def main_blocks() -> dict[tuple[str, str], Block]:
    return {key(block): block for block in blocks(MAIN) if block.language != "python"}


def test_every_block_is_covered() -> None:
    found = blocks(MAIN)
    assert len([block for block in found if block.language != "python"]) == len(BLOCKS)
    wrong = coverage_problems(found, BLOCKS)
    assert not wrong, "\n".join(wrong)


def test_coverage_problems_are_found(tmp_path: Path) -> None:
    # The checks on a README of our own, so that each of them is seen to fail.
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Top\n\n## A\n\n```sh\ncurl http://127.0.0.1:8080/v1/x\n```\n\n"
        "```sh\n# fragment: shows one step\nls -l\n```\n\n"
        "```sh\n# fragment:\nls\n```\n\n"
        "```sh\n# fragment: broken\nif then fi (\n```\n\n"
        "```sh\nls /\n```\n\n"
        "## B\n\n```toml\n[a\n```\n\n```yaml\na: 1\n```\n\n```sh\ncurl http://elsewhere/\n```\n",
        encoding="utf-8",
    )
    top = str(readme)
    table = {
        (f"{top} > A", "sh"): "curl",
        (f"{top} > A #2", "sh"): "fragment",
        (f"{top} > A #3", "sh"): "fragment",
        (f"{top} > A #4", "sh"): "fragment",
        (f"{top} > A #5", "sh"): "fragment",
        (f"{top} > B", "toml"): "toml",
        (f"{top} > C", "sh"): "curl",
    }
    broken = bash_parses("# fragment: broken\nif then fi (\n")
    assert broken and "syntax error" in broken
    wrong = [problem.split(": ", 1)[-1] for problem in coverage_problems(blocks(readme), table)]
    assert wrong[:6] == [
        "a ```yaml block, which no test here runs or checks",
        f"{(top + ' > B', 'sh')} is not covered: add it to BLOCKS with a check",
        f"BLOCKS covers {(top + ' > C', 'sh')}, which the README no longer has",
        "the fragment marker gives no reason",
        f"bash cannot parse it: {broken}",
        f"a fragment here, but its first line is not `{FRAGMENT} <why>`",
    ], wrong
    assert len(wrong) == 7 and wrong[6].startswith("not TOML: "), wrong
    assert coverage_problems(blocks(readme)[:2], {(f"{top} > A", "sh"): "curl", (f"{top} > A #2", "sh"): "fragment"}) == []


# --- the replies the comments show -------------------------------------------------------------


def test_comments_say_what_each_call_gets() -> None:
    code = (
        "curl -X POST http://127.0.0.1:8080/v1/a -d '{\"id\":\n  1}'\n"
        '# 201 {"state":"pending","n":null,"url":"http://127.0.0.1:8080/s/x#k=..."}\n'
        "curl 'http://127.0.0.1:8080/v1/a?wait_s=60'   # wait for it\n"
        '# {"state":"resolved",...,"text":"{\\"a\\":[1]}","at":...}\n'
        "curl -X POST http://127.0.0.1:8080/v1/a/ack   # 204: gone\n"
    )
    found = calls(code)
    assert [c.command for c in found] == [
        "curl -X POST http://127.0.0.1:8080/v1/a -d '{\"id\":\n  1}'",
        "curl 'http://127.0.0.1:8080/v1/a?wait_s=60'",
        "curl -X POST http://127.0.0.1:8080/v1/a/ack",
    ]
    assert [c.status for c in found] == [201, None, 204]
    first, second, third = (c.reply("http://h:1") for c in found)
    assert first == {"state": "pending", "n": None, "url": "http://h:1/s/x#k=..."}
    assert second == {"state": "resolved", MORE: None, "text": '{"a":[1]}', "at": ANY}
    assert third is None
    assert conforms({"state": "pending", "n": None, "url": "http://h:1/s/x#k=abc"}, first)
    assert not conforms({"state": "pending", "n": None, "url": "http://h:1/s/x#k="}, first)  # nothing after
    assert not conforms({"state": "pending", "n": 0, "url": "http://h:1/s/x#k=abc"}, first)  # null is null
    assert not conforms({"state": "pending", "n": None, "url": "http://h:1/s/x#k=a", "more": 1}, first)  # no `...`
    assert conforms({"state": "resolved", "id": "q", "text": '{"a":[1]}', "at": 5}, second)
    assert not conforms({"state": "resolved", "text": '{"a":[2]}', "at": 5}, second)
    assert not conforms({"state": "resolved", "text": '{"a":[1]}'}, second)  # `at` is shown, so it is there
    assert shape('{"a":[1,"x..."]}') == {"a": [1, "x..."]}


def check_calls(block: Block, run: ShellRun, gateway_url: str, statuses: list[int]) -> None:
    """Every curl of `block` ran, in order, and got the status in `statuses` and the status and
    reply its comments show."""
    assert run.returncode == 0, f"{block.where}: {run}"
    shown = [call for call in calls(block.code) if call.program == "curl"]
    assert len(run.curls) == len(shown) == len(statuses), f"{block.where}: {run}"
    for n, (call, made, status) in enumerate(zip(shown, run.curls, statuses, strict=True), 1):
        what = f"{block.where}, call {n} ({call.command.splitlines()[0]})"
        assert made.exit == 0, f"{what}: curl exited {made.exit}\n{run}"
        assert made.status == status, f"{what}: HTTP {made.status}, not {status}\n{run}"
        if call.status is not None:
            assert made.status == call.status, f"{what}: HTTP {made.status}, the comment says {call.status}"
        reply = call.reply(gateway_url)
        if reply is not None:
            assert conforms(made.json(), reply), f"{what}: replied {made.body}\nthe comment shows {reply}"
        if made.status == 204:
            assert made.body == "", f"{what}: a 204 with a body: {made.body!r}"


def started(tmp: Path, *extra: str) -> Gateway:
    return Gateway(tmp / "gateway", extra=list(extra)).start()


async def http(method: str, url: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    """(status, JSON reply) of one call, off the event loop."""

    def call() -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            text = error.read()
            return error.code, json.loads(text) if text else None

    return await asyncio.to_thread(call)


# --- the runnable shell blocks -----------------------------------------------------------------


async def test_http_block_runs_as_written(tmp_path: Path) -> None:
    block = main_blocks()[HTTP]
    gateway = started(tmp_path)
    tabs: list[Tab] = []
    answered: list[dict[str, Any]] = []

    async def answer_once_posted(reply: Any) -> None:
        # The first reply carries the viewer link: a person opens it and answers, while the
        # block's long-poll waits.
        if isinstance(reply, dict) and reply.get("state") == "pending" and not tabs:
            tabs.append(await Tab.connect(reply["viewer_url"]))
            request = await tabs[0].next_request()
            resolved = await tabs[0].answer(request["id"], first_choices(request))
            answered.append(resolved)

    try:
        run = await run_shell(block.code, gateway.url, tmp_path, on_reply=answer_once_posted)
        check_calls(block, run, gateway.url, [201, 200, 204])
        assert len(answered) == 1 and answered[0]["outcome"] == "answered", f"{block.where}: {run}"
        # "204: the gateway forgets it": the request the block posted is gone.
        session = re.findall(r"/v1/sessions/([^/]+)/requests", run.curls[0].args[2])[0]
        status, _ = await http("GET", f"{gateway.url}/v1/sessions/{session}/requests/{run.curls[0].json()['id']}")
        assert status == 404, f"{block.where}: the acknowledged request is still there ({status})"
    finally:
        for tab in tabs:
            await tab.close()
        gateway.stop()


async def test_link_block_runs_as_written(tmp_path: Path) -> None:
    block = main_blocks()[LINK]
    gateway = started(tmp_path)
    try:
        run = await run_shell(block.code, gateway.url, tmp_path)
        check_calls(block, run, gateway.url, [201])
        link = run.curls[0].json()
        # The link answers as its person.
        tab = await Tab.connect(link["url"])
        try:
            assert tab.snapshot is not None
            assert tab.snapshot["you"]["user"] == link["user"] == "alice@example.com", tab.snapshot["you"]
            assert tab.snapshot["you"]["may_answer"] is True, tab.snapshot["you"]
        finally:
            await tab.close()
    finally:
        gateway.stop()


async def test_default_block_runs_as_written(tmp_path: Path) -> None:
    block = main_blocks()[DEFAULT]
    gateway = started(tmp_path)
    try:
        run = await run_shell(block.code, gateway.url, tmp_path)
        check_calls(block, run, gateway.url, [201])
        posted = run.curls[0].json()
        assert posted["state"] == "pending" and posted["deadline_ms"] is not None, posted
        # The page is shown the default, as the ask sent it.
        sent = json.loads(shlex.split(calls(block.code)[0].command)[-1])
        tab = await Tab.connect(posted["viewer_url"])
        try:
            request = await tab.next_request()
            assert request["id"] == sent["id"] and request["default"] == sent["default"], request
        finally:
            await tab.close()
    finally:
        gateway.stop()


# --- the config file --------------------------------------------------------------------------


def test_config_file_is_checked_and_served(tmp_path: Path) -> None:
    config = main_blocks()[CONFIG_FILE]
    assert config.code.splitlines()[0] == "# askgate.toml", config.code
    path = tmp_path / "askgate.toml"
    path.write_text(config.code, encoding="utf-8")
    checked = subprocess.run(
        [binary(), "config", "check", path], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert checked.returncode == 0 and checked.stdout.strip() == f"{path}: ok", checked
    # Served with the test's own loopback port, store and folder, flags that win over the file's:
    # the operator key the gateway takes is the file's.
    gateway = Gateway(tmp_path / "gateway", store="embedded", extra=["--config", str(path)])
    gateway.start()
    try:
        status, _ = asyncio.run(http("GET", f"{gateway.url}/v1/requests", token="change-me-operator"))
        assert status == 200
        status, _ = asyncio.run(http("GET", f"{gateway.url}/v1/requests", token="some-other-key"))
        assert status == 401
    finally:
        gateway.stop()


# --- the notify file and the block that serves it ---------------------------------------------


def test_notify_file_parses() -> None:
    notify = main_blocks()[NOTIFY_FILE]
    parsed = tomllib.loads(notify.code)
    assert {"people", "groups", "webhooks", "email", "slack", "push"} <= set(parsed), parsed
    # Its first line names the file the next block serves.
    assert notify.code.splitlines()[0] == "# notify.toml"
    serve = calls(main_blocks()[NOTIFY_SERVE].code)[0]
    assert shlex.split(serve.command)[:4] == ["askgate", "serve", "--notify", "notify.toml"], serve


def serve_flags(call: Call, **values: str) -> list[str]:
    """The flags of a block's `askgate serve` line, `$NAME`s given `values`, without a trailing `&`."""
    words = shlex.split(call.command)
    assert words[:2] == ["askgate", "serve"], call.command
    words = [values.get(word[1:], word) if word.startswith("$") else word for word in words[2:]]
    return words[:-1] if words[-1:] == ["&"] else words


async def test_notify_block_against_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The block starts `askgate serve` in the foreground, which holds the shell until stopped, so
    # a reader sends its curl from another: here the gateway is started with the block's flags
    # (the file being the README's own) and the rest of the block is run as written against it.
    notify, block = main_blocks()[NOTIFY_FILE], main_blocks()[NOTIFY_SERVE]
    (tmp_path / "notify.toml").write_text(notify.code, encoding="utf-8")
    serve, *rest = calls(block.code)
    flags = [str(tmp_path / "notify.toml") if flag == "notify.toml" else flag for flag in serve_flags(serve)]
    for name in ("ASKGATE_SLACK_BOT_TOKEN", "ASKGATE_SLACK_SIGNING_SECRET", "ASKGATE_SMTP_URL", "ASKGATE_NOTIFY"):
        monkeypatch.delenv(name, raising=False)
    # The file leaves Slack's two secrets to the environment, as its comment says: without them
    # the gateway refuses it, naming the first; given them, it starts.
    secrets = re.findall(r"ASKGATE_SLACK_\w+", notify.code)
    assert secrets == ["ASKGATE_SLACK_BOT_TOKEN", "ASKGATE_SLACK_SIGNING_SECRET"], notify.code
    with pytest.raises(RuntimeError, match=r"slack\.bot_token: missing \(give it here or in ASKGATE_SLACK_BOT_TOKEN\)"):
        started(tmp_path / "without-slack", *flags)
    for name in secrets:
        monkeypatch.setenv(name, f"test-{name.lower()}")
    gateway = started(tmp_path, *flags)
    try:
        lines = block.code.splitlines()
        assert lines[0].startswith(FRAGMENT) and lines[1] == serve.command, lines[:2]
        assert [call.program for call in rest] == ["curl"], rest
        run = await run_shell("\n".join(lines[2:]) + "\n", gateway.url, tmp_path, timeout=30)
        check_calls(block, run, gateway.url, [201])
        posted = run.curls[0].json()
        # The group is the file's, the viewer link on the public URL the block gives.
        public_url = flags[flags.index("--public-url") + 1]
        assert posted["state"] == "pending" and posted["viewer_url"].startswith(f"{public_url}/s/billing-7#k="), posted
    finally:
        gateway.stop()


# --- the operator's commands -------------------------------------------------------------------


async def orphaned(viewer_url: str, request_id: str) -> None:
    """Returns once a tab on `viewer_url` is told `request_id` is orphaned."""
    url, viewer_key = live_url(viewer_url)
    async with connect(url) as ws:
        await ws.send(json.dumps({"type": "hello", "key": viewer_key}))
        async for message in ws:
            frame = json.loads(message)
            if frame.get("type") == "orphaned" and frame.get("id") == request_id:
                return
            if frame.get("type") == "snapshot" and any(
                r["id"] == request_id and r.get("orphaned") for r in frame.get("requests", [])
            ):
                return


async def test_operator_commands_as_written(tmp_path: Path) -> None:
    # The block starts a gateway of its own in the background and lists, at once, a request
    # orphaned an hour ago: here a gateway is started with its `serve` flags (and a grace of a
    # second), the request its comment shows is asked and left to be orphaned, and the block's
    # other lines run as written, with `askgate` on PATH.
    block = main_blocks()[OPERATOR]
    lines = block.code.splitlines()
    assert lines[0].startswith(FRAGMENT), lines[0]
    serve, *rest = calls(block.code)
    assert lines[1] == serve.command and serve.command.endswith("&"), lines[1]
    assert [call.program for call in rest] == ["askgate", "askgate"], rest
    listed = rest[0].comments
    assert len(listed) == 1, rest[0]
    session, request_id, age, state, title = listed[0].split("\t")
    assert re.fullmatch(r"\d+s", age) and state == "orphaned", listed

    operator_key = "readme-operator-key"
    gateway = started(tmp_path, *serve_flags(serve, OPERATOR_KEY=operator_key), "--agent-grace-s", "1")
    try:
        question = {"header": "Deploy", "question": title, "options": [{"label": "Yes"}, {"label": "No"}]}
        status, posted = await http(
            "POST",
            f"{gateway.url}/v1/sessions/{session}/requests",
            {"id": request_id, "title": title, "questions": [question]},
        )
        assert status == 201, posted
        await asyncio.wait_for(orphaned(posted["viewer_url"], request_id), 30)
        tab = await Tab.connect(posted["viewer_url"])
        try:
            run = await run_shell(
                "\n".join(lines[2:]) + "\n",
                gateway.url,
                tmp_path,
                askgate=binary(),
                env={"OPERATOR_KEY": operator_key},
                timeout=30,
            )
            assert run.returncode == 0, f"{block.where}: {run}"
            output = run.stdout.splitlines()
            # The listing's line is the comment's, but for the request's age.
            pattern = "\t".join([re.escape(session), re.escape(request_id), r"\d+s", "orphaned", re.escape(title)])
            assert len(output) == 2 and re.fullmatch(pattern, output[0]), f"{block.where}: {run}"
            assert output[1] == f"{session} {request_id}: withdrawn (by the operator)", f"{block.where}: {run}"
            resolved = await tab.wait_resolved(request_id)
            assert resolved["outcome"] == "withdrawn", resolved
        finally:
            await tab.close()
    finally:
        gateway.stop()


# --- the Rust block ----------------------------------------------------------------------------


def test_rust_block_is_the_crate_docs_example() -> None:
    # The README copies the example of `askgate-client`'s crate docs, which `cargo test --doc`
    # compiles (`no_run`: it needs a gateway): the same text, its hidden lines shown.
    info, shown = doc_example(CRATE_DOCS.read_text(encoding="utf-8"))
    assert info in ("", "rust", "no_run", "rust,no_run"), f"{CRATE_DOCS}: the example is fenced ```{info}, not compiled"
    block = main_blocks()[RUST]
    assert block.code == shown, f"{block.where} differs from the example in {CRATE_DOCS.relative_to(REPO)}"


def test_doc_example_shows_what_rustdoc_shows() -> None:
    source = (
        "//! Text.\n//!\n//! ```no_run\n//! use a::b;\n//!\n//! # fn f() -> u8 {\n//! let x = [\n"
        "//!     1,\n//! ];\n//! # 0\n//! # }\n//! ```\n//!\n//! ```\n//! other\n//! ```\nfn main() {}\n"
    )
    assert doc_example(source) == ("no_run", "use a::b;\n\nfn f() -> u8 {\n    let x = [\n        1,\n    ];\n    0\n}\n")
