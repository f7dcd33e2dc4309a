"""A scripted Claude Code CLI for the SDK's `Transport` seam: the CLI's half of the control
protocol for one tool call that needs permission, with no process and no model. It answers
`initialize`, sends a `can_use_tool` control request once the prompt arrives, keeps the SDK's
`control_response`, and ends the run with a result whose text is that response as JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from claude_agent_sdk._internal.transport import Transport

PERMISSION = "perm-1"


class ScriptedCLI(Transport):
    """The CLI's half of the control protocol for one tool call that needs permission."""

    def __init__(
        self, tool_name: str, input: dict[str, Any], *, tool_use_id: str = "toolu_01", title: str | None = None
    ) -> None:
        self.request: dict[str, Any] = {
            "subtype": "can_use_tool",
            "tool_name": tool_name,
            "input": input,
            "tool_use_id": tool_use_id,
            "permission_suggestions": [],
        }
        if title is not None:
            self.request["title"] = title
        self._send, self._receive = anyio.create_memory_object_stream[dict[str, Any]](100)
        self.written: list[dict[str, Any]] = []
        self.answer: dict[str, Any] | None = None
        self._ready = False

    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready

    async def end_input(self) -> None:
        pass

    async def close(self) -> None:
        self._ready = False
        self._send.close()
        self._receive.close()

    async def write(self, data: str) -> None:
        message = json.loads(data)
        self.written.append(message)
        if message["type"] == "control_request" and message["request"]["subtype"] == "initialize":
            response = {"subtype": "success", "request_id": message["request_id"], "response": {"commands": []}}
            await self._send.send({"type": "control_response", "response": response})
        elif message["type"] == "user":
            await self._send.send({"type": "control_request", "request_id": PERMISSION, "request": self.request})
        elif message["type"] == "control_response" and message["response"].get("request_id") == PERMISSION:
            self.answer = message["response"]
            await self._send.send(_result(json.dumps(message["response"].get("response"))))
            self._send.close()

    async def cancel(self) -> None:
        """Give up on the permission request, as the CLI does when its run is interrupted, and
        end the run."""
        await self._send.send({"type": "control_cancel_request", "request_id": PERMISSION})
        await self._send.send(_result(None))
        self._send.close()

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        async for message in self._receive:
            yield message

    def permission(self) -> dict[str, Any]:
        """What the SDK answered the permission request with."""
        assert self.answer is not None, "the SDK never answered the permission request"
        assert self.answer["subtype"] == "success", self.answer
        response: dict[str, Any] = self.answer["response"]
        return response


def _result(text: str | None) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "duration_ms": 1,
        "duration_api_ms": 1,
        "is_error": False,
        "num_turns": 1,
        "session_id": "claude-session",
        "result": text,
    }
