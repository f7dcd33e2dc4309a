"""The package README's tool-call approval examples run as written, with `model` set to a fake
model (each framework's own testing model), against the test gateway, approved in a headless tab."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gateway import Gateway
from tab import RunExample

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

README = Path(__file__).resolve().parents[1] / "README.md"

OPENAI_MODEL = '''
from agents import set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage

set_tracing_disabled(True)

class FakeModel(Model):
    async def get_response(self, system_instructions, input, *args, **kwargs):
        outputs = [i["output"] for i in input if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if outputs:
            output = [assistant_message("The tool said: " + outputs[-1])]
        else:
            output = [function_call("run_sql", {"query": "DELETE FROM users WHERE inactive"}, call_id="call_readme")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError

model = FakeModel()
'''

LANGCHAIN_MODEL = '''
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

class FakeChat(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if isinstance(messages[-1], ToolMessage):
            message = AIMessage(content="The tool said: " + messages[-1].content)
        else:
            call = {"name": "run_sql", "args": {"query": "DELETE FROM users WHERE inactive"}, "id": "call_readme"}
            message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])

model = FakeChat(messages=iter(()))
'''

PYDANTIC_AI_MODEL = '''
import json
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import DeltaToolCall, FunctionModel

CALL = ("run_sql", {"query": "DELETE FROM users WHERE inactive"}, "call_readme")

def returned(messages):
    return [p.content for p in messages[-1].parts if isinstance(p, ToolReturnPart)]

def respond(messages, info):
    if returned(messages):
        return ModelResponse(parts=[TextPart("The tool said: " + returned(messages)[-1])])
    return ModelResponse(parts=[ToolCallPart(CALL[0], CALL[1], tool_call_id=CALL[2])])

async def stream(messages, info):
    if returned(messages):
        yield "The tool said: " + returned(messages)[-1]
    else:
        yield {0: DeltaToolCall(name=CALL[0], json_args=json.dumps(CALL[1]), tool_call_id=CALL[2])}

model = FunctionModel(respond, stream_function=stream)
'''

EXAMPLES = [
    ("OpenAI Agents SDK", 0, OPENAI_MODEL, "The tool said: ran DELETE FROM users WHERE inactive"),
    ("LangChain", 0, LANGCHAIN_MODEL, "The tool said: ran DELETE FROM users WHERE inactive"),
    ("pydantic-ai", 0, PYDANTIC_AI_MODEL, "The tool said: ran DELETE FROM users WHERE inactive"),
    ("pydantic-ai", 1, PYDANTIC_AI_MODEL, "The tool said: ran DELETE FROM users WHERE inactive"),
    ("AG-UI", 0, PYDANTIC_AI_MODEL, "[{'interruptId': 'int-call_readme', 'status': 'resolved', 'payload': {'approved': True}}]"),
]


def example(heading: str, index: int) -> str:
    text = README.read_text(encoding="utf-8")
    section = re.split(rf"\n### {re.escape(heading)}[:\n]", text, maxsplit=1)
    assert len(section) == 2, f"README.md has no section {heading!r}"
    body = re.split(r"\n##", section[1], maxsplit=1)[0]
    blocks = re.findall(r"```python\n(.*?)```", body, flags=re.S)
    assert len(blocks) > index, f"expected a python block #{index} under {heading!r}"
    return str(blocks[index])


@pytest.mark.parametrize(("heading", "index", "prelude", "expected"), EXAMPLES)
async def test_readme_approval_example_runs(
    gateway: Gateway, session: str, run_example: RunExample, heading: str, index: int, prelude: str, expected: str
) -> None:
    code = example(heading, index)
    assert "http://127.0.0.1:8080" in code and '"thread-1"' in code
    code = code.replace("http://127.0.0.1:8080", gateway.url).replace('"thread-1"', repr(session))
    shown, text = await run_example(prelude + "\n" + code, 60)
    assert shown["dialect"] == "approval"
    assert shown["calls"][0]["name"] == "run_sql"
    assert shown["calls"][0]["args"] == {"query": "DELETE FROM users WHERE inactive"}
    assert text.rstrip().endswith(expected), text
