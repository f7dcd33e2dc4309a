#!/usr/bin/env python3
"""The real deepagents-code 0.2.2 `ask_user`, answering askgate's `validate` lines.

Run with the interpreter of .venv/deepagents (see scripts/setup-test-env.sh): CPython 3.13
with langchain 1.5.2, langchain-core 1.8.3, langgraph 1.2.24 and pydantic 2.14.4. Reads JSON
lines `{"dialect": "deepagents", "kind": ..., "input": {...}}` on stdin and writes one line per
input on stdout, in the shape `askgate validate` answers.

Where the code comes from
-------------------------
deepagents-code 0.2.2 is published only as a wheel that declares Python >= 3.14, and its
`_ask_user_types.py` uses the 3.14-only PEP 758 syntax `except A, B:` once. The setup script
unpacks the wheel into .venv/deepagents/src without installing it; this script then loads just
the two modules the tool lives in:

* `deepagents_code._ask_user_types`, compiled from its source after spelling that one clause
  the 3.13 way, `except (A, B):`, which means the same thing. Nothing else is touched, and the
  rewrite must apply exactly once or the oracle refuses to start.
* `deepagents_code.ask_user`, imported as is.

The package `__init__` is not run (it sets up the CLI's debug logging and log buffer). The
tool body imports two more modules lazily to find the active user turn:
`deepagents_code.auto_mode`, of which only the constant `USER_PROMPT_METADATA_KEY` is used (its
value is read out of the real source), and `deepagents_code.goal_state_notice`, of which only
`is_pinned_skill_message` is used (no test message is a pinned skill message, so it answers
False). Those two are stand-in modules.

One effect belongs to LangGraph, not deepagents: the resumed tool reads its arguments back from
the checkpoint, whose serializer writes a lone surrogate as `?`, so a question text holding one
reads with `?` in the transcript. askgate reproduces that.

What runs
---------
* request:  the model's tool call `{"args": {...}}` (or `{"args_json": "..."}`, decoded with
  Python's json module as a provider SDK would) goes through a real LangGraph `ToolNode`.
  Accepted: `{"ok": true, "normalized": <the interrupt value>}`. Refused: `{"ok": false,
  "error": <the error ToolMessage content>, "errors": [{type, loc, msg}]}`, the errors being
  the ones ToolNode kept after filtering out injected arguments.
* response: `{"request": {...}, "resume": <any>, "thread_id"?, "turn_id"?, "tool_call_id"?}`.
  The tool is called (thread `thread-1` and turn `turn-1` unless given; null or a non-string
  means the runtime does not vouch for it), interrupted, and resumed with
  `Command(resume={interrupt_id: resume})` as deepagents' TUI resumes it. The answer is the
  resulting ToolMessage: `{"ok": true, "normalized": {"content", "status", "receipt"}}`.
* render:   `{"op": ...}` calls the helper of that name in `_ask_user_types` directly.

A line the oracle cannot judge (a bug in the test, not a verdict) answers
`{"ok": false, "oracle_failure": "..."}`. Output is ASCII JSON: lone surrogates come out as
`\\udXXX` escapes, which askgate reads back as the same lone surrogates.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import sys
import types
from pathlib import Path

PEP_758_CLAUSE = "except json.JSONDecodeError, RecursionError:"
PEP_758_SPELLED_FOR_313 = "except (json.JSONDecodeError, RecursionError):"


def source_dir() -> Path:
    """Where the unpacked wheel's `deepagents_code` package is."""
    default = Path(__file__).resolve().parents[2] / ".venv" / "deepagents" / "src"
    return Path(os.environ.get("ASKGATE_DEEPAGENTS_SRC", default)) / "deepagents_code"


def load_modules(src: Path):
    """The real `_ask_user_types` and `ask_user` modules, loaded without the package init."""
    package = types.ModuleType("deepagents_code")
    package.__path__ = [str(src)]
    sys.modules["deepagents_code"] = package

    types_path = src / "_ask_user_types.py"
    text = types_path.read_text(encoding="utf-8")
    if sys.version_info < (3, 14):
        count = text.count(PEP_758_CLAUSE)
        if count != 1:
            raise SystemExit(f"deepagents oracle: expected one PEP 758 clause in {types_path}, found {count}")
        text = text.replace(PEP_758_CLAUSE, PEP_758_SPELLED_FOR_313)
    ask_types = types.ModuleType("deepagents_code._ask_user_types")
    ask_types.__file__ = str(types_path)
    sys.modules[ask_types.__name__] = ask_types
    exec(compile(text, str(types_path), "exec"), ask_types.__dict__)

    auto_source = (src / "auto_mode.py").read_text(encoding="utf-8")
    found = re.search(r'^USER_PROMPT_METADATA_KEY\s*=\s*"([^"]+)"', auto_source, re.MULTILINE)
    if found is None:
        raise SystemExit("deepagents oracle: USER_PROMPT_METADATA_KEY not found in auto_mode.py")
    auto_mode = types.ModuleType("deepagents_code.auto_mode")
    auto_mode.USER_PROMPT_METADATA_KEY = found.group(1)
    sys.modules[auto_mode.__name__] = auto_mode
    goal = types.ModuleType("deepagents_code.goal_state_notice")
    goal.is_pinned_skill_message = lambda message: False
    sys.modules[goal.__name__] = goal

    spec = importlib.util.spec_from_file_location("deepagents_code.ask_user", src / "ask_user.py")
    ask_user = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = ask_user
    spec.loader.exec_module(ask_user)
    return ask_types, ask_user, auto_mode.USER_PROMPT_METADATA_KEY


def share_one_thread_pool() -> None:
    """Makes LangGraph run its tasks on one thread pool kept for the whole process.

    LangGraph opens a thread pool for every graph run and every tool step, and joins its
    threads when the step ends: three to four thread starts and joins per line, which on a
    loaded machine cost several times the CPU the graph itself takes (a run of 12,000 lines
    waited on threads for most of its minute). With one pool kept open, every task runs as it
    did, in a worker thread with a copy of its caller's context, and each run still waits for
    its own tasks (BackgroundExecutor waits on the futures it submitted, not on the pool).
    """
    from contextlib import contextmanager

    import langgraph.prebuilt.tool_node as tool_node
    import langgraph.pregel._executor as pregel_executor
    from langchain_core.runnables.config import ContextThreadPoolExecutor

    pool = ContextThreadPoolExecutor()

    @contextmanager
    def the_shared_pool(_config):
        yield pool

    for module in (pregel_executor, tool_node):
        if not hasattr(module, "get_executor_for_config"):
            raise SystemExit(f"{module.__name__} no longer uses get_executor_for_config: look again")
        module.get_executor_for_config = the_shared_pool


class Oracle:
    """One ToolNode graph around the real tool, compiled once, run once per line on an
    emptied checkpointer (as good as a fresh one, without compiling the graph per line)."""

    def __init__(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode
        from langgraph.prebuilt.tool_node import ToolInvocationError
        from langgraph.types import Command

        self.types, ask_user, self.prompt_key = load_modules(source_dir())
        self.AIMessage, self.HumanMessage, self.Command = AIMessage, HumanMessage, Command
        self.invocation_error = None

        def keep_invocation_error(exc: Exception) -> str:
            # What ToolNode's default handler does, remembering the error for its list.
            if isinstance(exc, ToolInvocationError):
                self.invocation_error = exc
                return exc.message
            raise exc

        tool = ask_user.AskUserMiddleware().tools[0]
        graph = StateGraph(MessagesState, context_schema=dict)
        graph.add_node("tools", ToolNode([tool], handle_tool_errors=keep_invocation_error))
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        self.saver = InMemorySaver()
        self.app = graph.compile(checkpointer=self.saver)

    def forget_every_thread(self) -> None:
        """Empties the checkpointer, so that a line starts as on a fresh one."""
        saver = self.saver
        threads = {*saver.storage, *(k[0] for k in saver.writes), *(k[0] for k in saver.blobs)}
        for thread in threads:
            saver.delete_thread(thread)

    def call_tool(self, args, tool_call_id: str, thread_id, turn_id):
        """A model's `ask_user` call on a fresh thread; returns (app, config, context, output)."""
        self.forget_every_thread()
        app = self.app
        trusted_thread = thread_id if isinstance(thread_id, str) and thread_id else None
        config = {"configurable": {"thread_id": trusted_thread or "untrusted-thread"}}
        context = {}
        if thread_id is not None:
            context["thread_id"] = thread_id
        if turn_id is not None:
            context["turn_id"] = turn_id
        metadata = {self.prompt_key: {"turn_id": turn_id}} if turn_id is not None else {}
        human = self.HumanMessage(content="please ask me", additional_kwargs=metadata)
        call = {"name": "ask_user", "args": args, "id": tool_call_id, "type": "tool_call"}
        model = self.AIMessage(content="", tool_calls=[call])
        self.invocation_error = None
        output = app.invoke({"messages": [human, model]}, config, context=context)
        return app, config, context, output

    @staticmethod
    def tool_message(output) -> dict:
        message = output["messages"][-1]
        return {
            "content": message.content,
            "status": message.status,
            "receipt": message.additional_kwargs.get("deepagents_code_ask_user_authorization"),
        }

    def request(self, data: dict) -> dict:
        args = json.loads(data["args_json"]) if "args_json" in data else data["args"]
        _, _, _, output = self.call_tool(args, data.get("tool_call_id", "call_1"), None, None)
        if "__interrupt__" in output:
            return {"ok": True, "normalized": output["__interrupt__"][0].value}
        answer = {"ok": False, "error": self.tool_message(output)["content"]}
        if self.invocation_error is not None:
            answer["errors"] = [
                {"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]}
                for e in self.invocation_error.filtered_errors or []
            ]
        return answer

    def response(self, data: dict) -> dict:
        app, config, context, output = self.call_tool(
            data["request"],
            data.get("tool_call_id", "call_1"),
            data.get("thread_id", "thread-1"),
            data.get("turn_id", "turn-1"),
        )
        if "__interrupt__" not in output:
            return {"ok": False, "error": "invalid request: " + self.tool_message(output)["content"]}
        interrupt_id = output["__interrupt__"][0].id
        resumed = app.invoke(self.Command(resume={interrupt_id: data["resume"]}), config, context=context)
        if "__interrupt__" in resumed:
            return {"ok": False, "oracle_failure": "the graph is still interrupted after the resume"}
        return {"ok": True, "normalized": self.tool_message(resumed)}

    def render(self, data: dict) -> dict:
        t = self.types
        op = data.get("op", "transcript")
        if op == "transcript":
            transcript = t.format_ask_user_transcript(data["questions"], data["answers"])
            display = t.render_ask_user_transcript_for_display(data["questions"], transcript)
            return {"ok": True, "normalized": {"transcript": transcript, "display": display}}
        if op == "display":
            return {"ok": True, "normalized": t.render_ask_user_transcript_for_display(data["questions"], data["transcript"])}
        if op == "encode_multi_select":
            return {"ok": True, "normalized": t.encode_multi_select_answer(data["values"])}
        if op == "decode_multi_select":
            return {"ok": True, "normalized": t.decode_multi_select_answer(data["raw"])}
        if op == "answer_is_empty":
            return {"ok": True, "normalized": t.ask_user_answer_is_empty(data["answer"], data.get("type"))}
        return {"ok": False, "oracle_failure": f"unknown render op {op!r}"}


def main() -> None:
    logging.disable(logging.CRITICAL)  # deepagents logs every malformed resume it sees
    share_one_thread_pool()
    oracle = Oracle()
    handlers = {"request": oracle.request, "response": oracle.response, "render": oracle.render}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            answer = handlers[item["kind"]](item["input"])
        except Exception as exc:  # a broken line is the test's fault: say so, never guess a verdict
            answer = {"ok": False, "oracle_failure": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer, ensure_ascii=True) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
