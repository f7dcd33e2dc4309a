"""A scripted pydantic-ai model: a `FunctionModel` that plays fixed responses and records what
it was sent, so a test can read the tool returns the model received."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness.ask_user import TOOL_NAME


def ask_call(questions: list[dict[str, Any]] | str, call_id: str) -> ToolCallPart:
    """An `ask_user_question` call; `questions` may be the whole args as JSON text."""
    args: Any = questions if isinstance(questions, str) else {"questions": questions}
    return ToolCallPart(tool_name=TOOL_NAME, args=args, tool_call_id=call_id)


class Scripted:
    """Plays `responses` in order (then answers "done"), recording each call's messages."""

    def __init__(self, *responses: list[ToolCallPart]) -> None:
        self.responses = list(responses)
        self.calls: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls.append(list(messages))
        if self.responses:
            return ModelResponse(parts=list(self.responses.pop(0)))
        return ModelResponse(parts=[TextPart("done")])

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self)

    def tool_returns(self, call: int = 1) -> dict[str, ToolReturnPart]:
        """The tool returns the model received on call number `call` (0-based), by call id."""
        message = self.calls[call][-1]
        assert isinstance(message, ModelRequest), message
        return {part.tool_call_id: part for part in message.parts if isinstance(part, ToolReturnPart)}


def tool_return_contents(messages: list[ModelMessage]) -> dict[str, Any]:
    """What the model read for each tool call in the last of `messages` (its last request), by
    call id."""
    message = messages[-1]
    assert isinstance(message, ModelRequest), message
    return {part.tool_call_id: part.content for part in message.parts if isinstance(part, ToolReturnPart)}
