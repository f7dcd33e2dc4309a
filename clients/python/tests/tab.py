"""A headless browser tab: the answer page's protocol (`/v1/sessions/{session}/live`) in Python.

As a script it answers every question in a session, for trying the README examples without a
browser:

    python clients/python/tests/tab.py 'http://127.0.0.1:8080/s/demo#k=...' [--decline] [--count N]

It picks the first option of each harness question (the first two of a multi-select), for
deepagents the first choice, or `"askgate"` for a text question, approves every call of an
approval request, fills an MCP form with its defaults (or sample values that fit) and consents
to an MCP link, and picks the first label of each Claude question (the first two of a
multi-select). `answer_example` does the same for the tests: it runs a README example and
answers it in a tab.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from websockets.asyncio.client import ClientConnection, connect

DEFAULT_TIMEOUT = 15.0


def live_url(viewer_url: str) -> tuple[str, str]:
    """(the tab's WebSocket URL, the viewer key) for a viewer link `http://h/s/{session}#k={key}`."""
    parts = urlsplit(viewer_url)
    assert parts.path.startswith("/s/"), viewer_url
    session = unquote(parts.path[len("/s/") :])
    fragment = dict(p.split("=", 1) for p in parts.fragment.split("&") if "=" in p)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}/v1/sessions/{session}/live", fragment["k"]


class Tab:
    """One tab watching a session. Frames are sorted into queues by a reader task."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.snapshot: dict[str, Any] | None = None
        self.requests: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.resolved: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.rejections: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.escalations: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.frames: list[dict[str, Any]] = []
        self._snapshot = asyncio.get_running_loop().create_future()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, viewer_url: str, *, tab: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> Tab:
        url, key = live_url(viewer_url)
        ws = await connect(url, open_timeout=timeout)
        hello: dict[str, Any] = {"type": "hello", "key": key}
        if tab is not None:
            hello["tab"] = tab
        await ws.send(json.dumps(hello))
        self = cls(ws)
        self.snapshot = await asyncio.wait_for(asyncio.shield(self._snapshot), timeout)
        return self

    def _resolved(self, id: str) -> asyncio.Future[dict[str, Any]]:
        if id not in self.resolved:
            self.resolved[id] = asyncio.get_running_loop().create_future()
        return self.resolved[id]

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                frame = json.loads(message)
                self.frames.append(frame)
                kind = frame.get("type")
                if kind == "snapshot":
                    for request in frame.get("requests", []):
                        self.requests.put_nowait(request)
                    if not self._snapshot.done():
                        self._snapshot.set_result(frame)
                elif kind == "request":
                    self.requests.put_nowait(frame["request"])
                elif kind == "resolved":
                    future = self._resolved(frame["id"])
                    if not future.done():
                        future.set_result(frame)
                elif kind == "answer_rejected":
                    self.rejections.put_nowait(frame)
                elif kind == "escalated":
                    self.escalations.put_nowait(frame)
        finally:
            if not self._snapshot.done():
                self._snapshot.set_exception(ConnectionError("the tab was closed before its snapshot"))

    async def next_request(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The next request shown to this tab (open ones from the snapshot first)."""
        return await asyncio.wait_for(self.requests.get(), timeout)

    async def wait_resolved(self, id: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """The `resolved` frame for request `id`."""
        return await asyncio.wait_for(asyncio.shield(self._resolved(id)), timeout)

    async def next_rejection(self, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
        return await asyncio.wait_for(self.rejections.get(), timeout)

    async def answer(self, id: str, response: Any, *, wait: bool = True, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """Send an answer; a list is taken as harness `answers`. Returns the `resolved` frame."""
        if isinstance(response, list):
            response = {"answers": response}
        await self.ws.send(json.dumps({"type": "answer", "id": id, "response": response}))
        if wait:
            return await self.wait_resolved(id, timeout)
        return None

    async def decline(self, id: str, *, wait: bool = True, timeout: float = DEFAULT_TIMEOUT) -> Any:
        await self.ws.send(json.dumps({"type": "decline", "id": id}))
        if wait:
            return await self.wait_resolved(id, timeout)
        return None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 5)
        self._reader.cancel()
        with contextlib.suppress(BaseException):
            await self._reader


_SAMPLE_TEXT = {
    "email": "askgate@example.com",
    "uri": "https://example.com/",
    "date": "2026-01-01",
    "date-time": "2026-01-01T00:00:00Z",
}


def form_content(request: dict[str, Any]) -> dict[str, Any]:
    """A valid answer to a `form` request: consent for URL mode; else each field's default, or a
    sample value that fits it (`"askgate"`, the lowest number from 1, true, the first options)."""
    if request.get("mode") == "url":
        return {"content": {}}
    content: dict[str, Any] = {}
    for field in request["fields"]:
        kind = field["kind"]
        options = [o["value"] for o in field.get("options") or []]
        value: Any
        if "default" in field:
            value = field["default"]
        elif kind in _SAMPLE_TEXT:
            value = _SAMPLE_TEXT[kind]
        elif kind == "text":
            value = "askgate".ljust(field.get("min_length") or 0, "!")[: field.get("max_length") or None]
        elif kind in ("number", "integer"):
            value = max(field.get("minimum", 1), min(field.get("maximum", 1), 1))
            value = int(value) if kind == "integer" else value
        elif kind == "boolean":
            value = True
        elif kind == "choice":
            value = options[0]
        else:
            value = options[: max(field.get("min_items") or 1, 1)]
        content[field["name"]] = value
    return {"content": content}


def first_choices(request: dict[str, Any]) -> dict[str, Any]:
    """A plausible answer to any request: first options / first choices / fixed text / approve."""
    if request.get("dialect") == "approval":
        return {"decisions": [{"type": "approve"} for _ in request["calls"]]}
    if request.get("dialect") == "form":
        return form_content(request)
    questions = request["questions"]
    if request.get("dialect") == "claude":
        return {
            "answers": {
                q["question"]: [o["label"] for o in q["options"][:2]] if q.get("multiSelect") else q["options"][0]["label"]
                for q in questions
            }
        }
    if request.get("dialect") == "deepagents":
        answers: list[Any] = []
        for q in questions:
            choices = [c["value"] for c in q.get("choices") or []]
            if q["type"] == "text":
                answers.append("askgate")
            elif q["type"] == "multi_select":
                answers.append(choices[:2])
            else:
                answers.append(choices[0])
        return {"answers": answers}
    return {
        "answers": [
            {
                "header": q["header"],
                "selected": [o["label"] for o in q["options"][: 2 if q.get("multi_select") else 1]],
            }
            for q in questions
        ]
    }


Tabs = Callable[[str], Awaitable[Tab]]
"""The `tabs` fixture: opens a tab on a viewer link (closed after the test)."""

RunExample = Callable[[str, float], Awaitable[tuple[dict[str, Any], str]]]
"""The `run_example` fixture: `answer_example(tabs, code, timeout)`."""


async def answer_example(tabs: Tabs, code: str, timeout: float) -> tuple[dict[str, Any], str]:
    """Run a README example's code as a script until it prints `Answer at <link>`, answer the
    request a tab shows on that link with its first choices, and return that request and all the
    script printed, once it has exited 0 (all within `timeout` seconds)."""
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
        async with asyncio.timeout(timeout):
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
    return shown, text


async def _main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("viewer_url")
    parser.add_argument("--decline", action="store_true", help="decline instead of answering")
    parser.add_argument("--count", type=int, default=0, help="stop after N questions (0: never)")
    parser.add_argument("--timeout", type=float, default=0, help="give up after N seconds idle (0: never)")
    args = parser.parse_args()
    tab = await Tab.connect(args.viewer_url)
    handled = 0
    try:
        while args.count == 0 or handled < args.count:
            request = await tab.next_request(timeout=args.timeout or None)  # type: ignore[arg-type]
            if args.decline:
                resolved = await tab.decline(request["id"])
            else:
                resolved = await tab.answer(request["id"], first_choices(request))
            print(f"[tab] {request['id']}: {resolved['outcome']}", flush=True)
            handled += 1
    finally:
        await tab.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(_main()))
