#!/usr/bin/env python3
"""The real pydantic-ai-harness 0.62.0, answering askgate's `validate` lines.

Run with the interpreter of a virtualenv that holds pydantic-ai-harness==0.62.0 (see
scripts/setup-test-env.sh). Reads JSON lines `{"dialect":"harness","kind",...,"input":{...}}` on
stdin and writes one line per input on stdout, in the shape `askgate validate` answers:

    {"ok": true, "normalized": ...}  or  {"ok": false, "error": "..."}

* request:  input {"args": {...}} (a dict tool call) or {"args_json": "..."} (a string tool call),
            judged by the very validator pydantic-ai runs on a model's `ask_user_question` call.
* response: input {"request": {"questions": [...]}, "response": {...}}; `ask_user_result`.
* render:   as response, or {"timed_out": true}; the text the model reads.

Lines are decoded with Python's json module, so lone surrogates survive as they would in a
Python host. Output escapes them (ensure_ascii) so it stays valid UTF-8.

Each answer is flushed at once (the tests drive it line by line); with `--bulk` output is
block-buffered instead, as a program judging a whole file would write it (bench/validate.sh).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from pydantic import ValidationError
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai_harness.ask_user import (
        TIMED_OUT,
        AskUserAnswer,
        AskUserRequest,
        AskUserResponse,
        AskUserToolset,
        ask_user_result,
    )

    validator = AskUserToolset(answerer=None).tools["ask_user_question"].function_schema.validator

    def model_text(result) -> str:
        part = ToolReturnPart(tool_name="ask_user_question", content=result, tool_call_id="oracle")
        return part.model_response_str()

    def validate(payload: dict):
        if "args_json" in payload:
            return validator.validate_json(payload["args_json"])
        return validator.validate_python(payload["args"])

    def request(payload: dict) -> dict:
        try:
            validated = validate(payload)
        except ValidationError as exc:
            return {"ok": False, "error": str(exc.errors(include_url=False))}
        return {"ok": True, "normalized": {"questions": [q.model_dump(mode="json") for q in validated["questions"]]}}

    def response(payload: dict):
        validated = validator.validate_python(payload["request"])
        req = AskUserRequest(questions=tuple(validated["questions"]), id="oracle")
        raw = dict(payload["response"])
        answers = []
        for item in raw.pop("answers", []):
            item = dict(item)
            item["selected"] = tuple(item.get("selected", ()))
            answers.append(AskUserAnswer(**item))
        resp = AskUserResponse(answers=tuple(answers), **raw)
        try:
            result = ask_user_result(req, resp)
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "normalized": {"result": result, "model_text": model_text(result)}}

    def render(payload: dict) -> dict:
        if payload.get("timed_out"):
            return {"ok": True, "normalized": model_text(TIMED_OUT)}
        out = response(payload)
        if out["ok"]:
            out["normalized"] = out["normalized"]["model_text"]
        return out

    handlers = {"request": request, "response": response, "render": render}
    bulk = "--bulk" in sys.argv[1:]
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            out = handlers[item["kind"]](item["input"])
        except Exception as exc:  # a broken line is the test's fault: say so, never guess a verdict
            out = {"ok": False, "oracle_failure": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(out, ensure_ascii=True) + "\n")
        if not bulk:
            sys.stdout.flush()


if __name__ == "__main__":
    main()
