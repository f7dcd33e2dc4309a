"""What `test_readme_shell.py` needs to run the main README's shell blocks as written: the calls a
block makes and the replies its `#` comments show, a `curl` that records each call it makes, a
runner that answers a block's questions in a headless tab, and the Rust example as rustdoc
shows it.

A block's comments say what its calls get back, and the test holds the gateway to them:

    curl -X POST http://127.0.0.1:8080/v1/...   # 204: the gateway forgets it
    curl http://127.0.0.1:8080/v1/...
    # 201 {"state":"pending","id":"q1",...,"viewer_url":"http://127.0.0.1:8080/s/release-1#k=..."}

A comment on a command's line, or on the lines after it, belongs to that command. It may start
with the HTTP status, and may show the reply's JSON, where `...` stands for more: `"k":...` any
value, a bare `...` member other keys, `"text..."` a string that starts with `text`. Without a
bare `...` the reply has exactly the keys shown.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import stat
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from readme_examples import FRAGMENT, GATEWAY_URL

ANY = "\0any"
"""A value the comment elides (`"key":...`)."""
MORE = "\0more"
"""The key that marks an object whose comment has a bare `...` member: other keys may follow."""

_COMMAND = re.compile(r"^(curl|askgate)\s|^[A-Z_]+=\S*\s")
_TRAILING_COMMENT = re.compile(r"\s#\s(.*)$")
_STATUS = re.compile(r"^(\d{3})\b:?\s*(.*)$")


@dataclass
class Call:
    """One command of a block (a line starting with `curl`, `askgate` or `VAR=value`, with the
    lines that continue it) and the comments that belong to it."""

    command: str
    comments: list[str] = field(default_factory=list)

    @property
    def program(self) -> str:
        return re.sub(r"^([A-Z_]+=\S*\s+)*", "", self.command).split()[0]

    @property
    def status(self) -> int | None:
        """The HTTP status a comment shows, if one does."""
        found = [int(m.group(1)) for text in self.comments if (m := _STATUS.match(text))]
        assert len(found) <= 1, f"{self.command!r}: more than one status in its comments: {self.comments}"
        return found[0] if found else None

    def reply(self, gateway_url: str) -> Any | None:
        """The reply's shape a comment shows (see `shape`), if one does."""
        bodies = [rest for text in self.comments if (rest := _STATUS.sub(r"\2", text)).startswith("{")]
        assert len(bodies) <= 1, f"{self.command!r}: more than one reply in its comments: {self.comments}"
        return shape(bodies[0].replace(GATEWAY_URL, gateway_url)) if bodies else None


def calls(code: str) -> list[Call]:
    """The commands of a shell block, in order, each with its comments. A comment above the first
    command (the fragment marker) belongs to none."""
    found: list[Call] = []
    for line in code.splitlines():
        text = line.strip()
        if text.startswith("#"):
            if found:
                found[-1].comments.append(text[1:].strip())
            continue
        comment = _TRAILING_COMMENT.search(line)
        if comment:
            line = line[: comment.start()]
        if _COMMAND.match(line):
            found.append(Call(line.rstrip()))
        elif text:
            assert found, f"a block's first line is not a command: {line!r}"
            found[-1].command += "\n" + line.rstrip()
        if comment:
            found[-1].comments.append(comment.group(1).strip())
    return found


def shape(text: str) -> Any:
    """A reply comment's JSON, with its `...` made into ANY and MORE (see the module's doc)."""
    text = re.sub(r"(?<=:)\.\.\.(?=[,}])", lambda _: json.dumps(ANY), text)
    text = re.sub(r"(?<=[{,])\.\.\.(?=[,}])", lambda _: json.dumps(MORE) + ":null", text)
    return json.loads(text)


def conforms(actual: Any, expected: Any) -> bool:
    """`actual` is a reply of the `expected` shape (from `shape`)."""
    if expected == ANY:
        return True
    if isinstance(expected, dict):
        keys = set(expected) - {MORE}
        if not isinstance(actual, dict) or not keys <= set(actual):
            return False
        if MORE not in expected and set(actual) != keys:
            return False
        return all(conforms(actual[key], expected[key]) for key in keys)
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(conforms, actual, expected))
    if isinstance(expected, str) and expected.endswith("..."):
        prefix = expected.removesuffix("...")
        return isinstance(actual, str) and actual.startswith(prefix) and len(actual) > len(prefix)
    return type(actual) is type(expected) and bool(actual == expected)


# --- running a block --------------------------------------------------------------------------

_CURL_SHIM = """#!/bin/bash
# curl, as called, and a record of the call: its arguments, the reply's headers and body, and
# its exit status, in $README_CURL_LOG/<n>.*. The block's output is curl's own.
n=$(find "$README_CURL_LOG" -name '*.args' | wc -l)
printf '%s\\0' "$@" > "$README_CURL_LOG/$n.args"
"$README_REAL_CURL" --dump-header "$README_CURL_LOG/$n.headers" "$@" | tee "$README_CURL_LOG/$n.body"
code=${PIPESTATUS[0]}
echo "$code" > "$README_CURL_LOG/$n.exit"
exit "$code"
"""


@dataclass
class CurlCall:
    """What one `curl` of a block did."""

    args: list[str]
    exit: int
    status: int | None
    """The last HTTP status line's code (none if nothing was answered)."""
    body: str

    def json(self) -> Any:
        return json.loads(self.body) if self.body.strip() else None


@dataclass
class ShellRun:
    returncode: int
    stdout: str
    stderr: str
    curls: list[CurlCall]

    def __str__(self) -> str:
        made = "\n".join(f"  curl exit {c.exit}, HTTP {c.status}: {c.body!r}" for c in self.curls)
        return f"exit {self.returncode}\n--- calls\n{made}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def shell_dir(tmp: Path, askgate: Path | None = None) -> Path:
    """A directory for the front of PATH: the recording `curl`, and `askgate` if given (a link to
    the gateway binary, as an installed one would be found)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (tmp / "curl-log").mkdir(exist_ok=True)
    shim = bin_dir / "curl"
    shim.write_text(_CURL_SHIM, encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    if askgate is not None:
        (bin_dir / "askgate").symlink_to(askgate.resolve())
    return bin_dir


def recorded_curls(log: Path) -> list[CurlCall]:
    made = []
    for n in range(len(list(log.glob("*.args")))):
        headers = (log / f"{n}.headers").read_text(errors="replace") if (log / f"{n}.headers").exists() else ""
        statuses = re.findall(r"^HTTP/\S+ (\d{3})", headers, re.MULTILINE)
        exit_file = log / f"{n}.exit"
        made.append(
            CurlCall(
                args=(log / f"{n}.args").read_bytes().decode().split("\0")[:-1],
                exit=int(exit_file.read_text()) if exit_file.exists() else -1,
                status=int(statuses[-1]) if statuses else None,
                body=(log / f"{n}.body").read_text(errors="replace") if (log / f"{n}.body").exists() else "",
            )
        )
    return made


OnReply = Callable[[Any], Awaitable[None]]


async def run_shell(
    code: str,
    gateway_url: str,
    tmp: Path,
    *,
    askgate: Path | None = None,
    env: dict[str, str] | None = None,
    on_reply: OnReply | None = None,
    timeout: float = 60,
) -> ShellRun:
    """Run `code` with bash as a script, as written but for GATEWAY_URL (made `gateway_url`), with
    the recording `curl` (and `askgate`, if given) first on PATH. `on_reply` is called with each
    JSON value the block prints, as it prints it (a reply is printed whole, so a block that waits
    afterwards can be answered meanwhile)."""
    real_curl = shutil.which("curl")
    assert real_curl, "curl is missing: the README's shell blocks call it"
    bin_dir = shell_dir(tmp, askgate)
    script = tmp / "block.sh"
    script.write_text(code.replace(GATEWAY_URL, gateway_url), encoding="utf-8")
    work = tmp / "cwd"
    work.mkdir(exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        "bash",
        str(script),
        cwd=work,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(work),
            "README_CURL_LOG": str(tmp / "curl-log"),
            "README_REAL_CURL": real_curl,
            **(env or {}),
        },
    )
    assert process.stdout is not None and process.stderr is not None
    stdout = ""
    decoder = json.JSONDecoder()
    seen = 0
    try:
        async with asyncio.timeout(timeout):
            stderr = asyncio.ensure_future(process.stderr.read())
            while chunk := await process.stdout.read(65536):
                stdout += chunk.decode()
                while True:
                    rest = stdout[seen:]
                    start = len(rest) - len(rest.lstrip())
                    if not rest[start:].startswith(("{", "[")):
                        break
                    try:
                        value, end = decoder.raw_decode(rest, start)
                    except json.JSONDecodeError:
                        break  # not all of it yet
                    seen += end
                    if on_reply is not None:
                        await on_reply(value)
            returncode = await process.wait()
            err = (await stderr).decode()
    except TimeoutError:
        raise AssertionError(f"the block did not end within {timeout} s; it printed:\n{stdout}") from None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return ShellRun(returncode, stdout, err, recorded_curls(tmp / "curl-log"))


def bash_parses(code: str) -> str | None:
    """bash's complaint about `code` (`bash -n`), or None if it parses."""
    result = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True, check=False)
    return None if result.returncode == 0 else result.stderr.strip() or f"bash -n exited {result.returncode}"


def fragment_reason(code: str) -> str:
    """What a fragment's first line says it is (empty when it gives no reason)."""
    first = code.splitlines()[0] if code else ""
    assert first.startswith(FRAGMENT), f"not a fragment: {first!r}"
    return first.removeprefix(FRAGMENT).strip()


# --- the Rust example -------------------------------------------------------------------------

_DOC_FENCE = re.compile(r"^```(\S*)$")


def doc_example(source: str) -> tuple[str, str]:
    """The first code example of a Rust file's crate docs (`//!`): (its fence's info string, the
    code as the docs page shows it, hidden `# ` lines shown and the body of a hidden function
    indented four spaces, which is how a reader copies it into a program of their own)."""
    docs = [line.removeprefix("//!").removeprefix(" ") for line in source.splitlines() if line.startswith("//!")]
    start = next(i for i, line in enumerate(docs) if _DOC_FENCE.match(line))
    info = _DOC_FENCE.match(docs[start])
    assert info is not None
    end = next(i for i in range(start + 1, len(docs)) if docs[i] == "```")
    shown: list[str] = []
    depth = 0
    for line in docs[start + 1 : end]:
        hidden = line == "#" or line.startswith("# ")
        text = line[2:] if hidden else line
        if hidden and text == "}":
            depth -= 1
        shown.append(" " * 4 * depth + text if text else "")
        if hidden and text.endswith("{"):
            depth += 1
    assert depth == 0, "the example's hidden lines open more than they close"
    return info.group(1), "".join(f"{line}\n" for line in shown)
