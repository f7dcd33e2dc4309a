#!/usr/bin/env python3
"""The MCP Python SDK's server side (mcp 2.3.0), judging elicitation forms for askgate's tests.

Run with the interpreter of .venv/mcp (see scripts/setup-test-env.sh): CPython 3.11 with
mcp 2.3.0, mcp-types 2.3.0, pydantic 2.14.4 and email-validator 2.4.0. Reads one JSON line
per model on stdin and writes one JSON line per input on stdout:

    in:  {"fields": [FIELD...], "contents": [{...}, ...]}
    out: {"ok": true, "schema": <the requestedSchema sent>, "verdicts": [VERDICT...]}
         {"ok": false, "error": "..."}        the SDK refuses to send this model

FIELD describes one pydantic field: `{"name", "kind", ...}` with kind
`str` (`min_length`?, `max_length`?), `email` (EmailStr), `url` (AnyUrl), `date`,
`datetime`, `int` / `float` (`ge`?, `le`?), `bool`, `literal` (`options`: Literal[...]),
`multi` (`options`, `min_items`?, `max_items`?: list[Literal[...]]); `title`?,
`description`?; and how it may be left out: `"required": true`, or `"default": <JSON>`
(a date or datetime default is given as its ISO text), or `"optional": true`
(`T | None = None`). The model is built with `pydantic.create_model`.

What runs is the SDK's own code, not a copy of it: `Context.elicit` is
`mcp.server.elicitation.elicit_with_validation`, called here with a stand-in session whose
`elicit_form` and `send_request` are `mcp.server.session.ServerSession`'s own functions, so
that the model is rendered by `render_elicitation_schema` (which refuses what the spec's
`PrimitiveSchemaDefinition` does not admit), the request is dumped for the wire as the SDK
dumps it (the schema reported is the one in those wire params), and each answer, handed in
as the client's raw JSON-RPC result `{"action": "accept", "content": {...}}`, goes through
the version gate (`mcp_types.methods.validate_client_result`, protocol 2025-11-25), then
`ElicitResult.model_validate`, then the model's `model_validate`, as a real server's would.

VERDICT: `{"ok": true}` when the SDK returns `AcceptedElicitation`, else
`{"ok": false, "stage": "result" | "model", "errors": [pydantic error types]}`: `result`
when the wire result itself was refused (a value that is not str|int|float|bool|list[str]|
null), `model` when the content does not fit the model.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
from typing import Annotated, Any, Literal, Optional

from mcp.server.elicitation import AcceptedElicitation, elicit_with_validation
from mcp.server.session import ServerSession
from pydantic import AnyUrl, EmailStr, Field, ValidationError, create_model

PROTOCOL_VERSION = "2025-11-25"


class _Outbound:
    """The channel a server request goes out on: records the params, answers with `result`."""

    def __init__(self) -> None:
        self.sent: dict[str, Any] | None = None
        self.result: Any = None

    async def send_raw_request(self, method: str, params: Any, opts: Any = None) -> Any:
        self.sent = {"method": method, "params": params}
        return self.result


class _Connection:
    def __init__(self, outbound: _Outbound) -> None:
        self.outbound = outbound
        self.protocol_version = PROTOCOL_VERSION


class StandInSession:
    """Just enough of a session for ServerSession's own `elicit_form` and `send_request`."""

    elicit_form = ServerSession.elicit_form
    send_request = ServerSession.send_request

    def __init__(self) -> None:
        self.outbound = _Outbound()
        self._request_outbound = self.outbound
        self._connection = _Connection(self.outbound)

    @property
    def protocol_version(self) -> str:
        return PROTOCOL_VERSION


def annotation(field: dict[str, Any]) -> Any:
    kind = field["kind"]
    constraints: dict[str, Any] = {}
    if kind == "str":
        base: Any = str
        for key in ("min_length", "max_length"):
            if key in field:
                constraints[key] = field[key]
    elif kind == "email":
        base = EmailStr
    elif kind == "url":
        base = AnyUrl
    elif kind == "date":
        base = datetime.date
    elif kind == "datetime":
        base = datetime.datetime
    elif kind in ("int", "float"):
        base = int if kind == "int" else float
        for key in ("ge", "le"):
            if key in field:
                constraints[key] = field[key]
    elif kind == "bool":
        base = bool
    elif kind == "literal":
        base = Literal[tuple(field["options"])]
    elif kind == "multi":
        base = list[Literal[tuple(field["options"])]]
        if "min_items" in field:
            constraints["min_length"] = field["min_items"]
        if "max_items" in field:
            constraints["max_length"] = field["max_items"]
    else:
        raise ValueError(f"unknown field kind {kind!r}")
    for key in ("title", "description"):
        if key in field:
            constraints[key] = field[key]
    if field.get("optional"):
        base = Optional[base]
    return Annotated[base, Field(**constraints)] if constraints else base


def default_of(field: dict[str, Any]) -> Any:
    if field.get("required"):
        return ...
    if field.get("optional"):
        return None
    value = field["default"]
    if field["kind"] == "date":
        return datetime.date.fromisoformat(value)
    if field["kind"] == "datetime":
        return datetime.datetime.fromisoformat(value)
    if field["kind"] == "url":
        return AnyUrl(value)
    return value


def build_model(fields: list[dict[str, Any]]) -> type:
    definitions = {f["name"]: (annotation(f), default_of(f)) for f in fields}
    return create_model("Form", **definitions)


async def judge(line: dict[str, Any]) -> dict[str, Any]:
    model = build_model(line["fields"])
    session = StandInSession()
    verdicts = []
    schema = None
    for content in line["contents"]:
        session.outbound.result = {"action": "accept", "content": content}
        try:
            result = await elicit_with_validation(session, "Fill in the form", model)
        except TypeError as e:
            # render_elicitation_schema: the model is not a spec-valid form.
            return {"ok": False, "error": str(e)}
        except ValidationError as e:
            # The client's result did not parse (send_request's gate or ElicitResult).
            verdicts.append({"ok": False, "stage": "result", "errors": [x["type"] for x in e.errors()]})
        except ValueError as e:
            cause = e.__cause__
            errors = [x["type"] for x in cause.errors()] if isinstance(cause, ValidationError) else [str(e)]
            verdicts.append({"ok": False, "stage": "model", "errors": errors})
        else:
            if not isinstance(result, AcceptedElicitation):
                raise AssertionError(f"an accepted answer came back as {result!r}")
            verdicts.append({"ok": True})
        if schema is None:
            sent = session.outbound.sent
            if sent is None or sent["method"] != "elicitation/create":
                raise AssertionError(f"the SDK sent {sent!r}")
            schema = sent["params"]["requestedSchema"]
    if schema is None:
        # No contents: render only, as the SDK would before sending.
        from mcp.server.elicitation import render_elicitation_schema

        try:
            schema = render_elicitation_schema(model)
        except TypeError as e:
            return {"ok": False, "error": str(e)}
    return {"ok": True, "schema": schema, "verdicts": verdicts}


def main() -> None:
    loop = asyncio.new_event_loop()
    for text in sys.stdin:
        if not text.strip():
            continue
        try:
            answer = loop.run_until_complete(judge(json.loads(text)))
        except Exception as e:  # a bug in the test, not a verdict
            answer = {"ok": False, "oracle_failure": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer, ensure_ascii=True) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
