"""askgate for MCP (the official Python SDK, `mcp` 2.x): a person answers a server's elicitations.

An MCP server asks its client for input with an elicitation (`ctx.elicit(message, schema=...)`
on the server): a form whose fields a flat JSON Schema describes, or, in URL mode, consent to
open a link. `elicitation_callback` returns the client callback that puts each one to a person
through the gateway (dialect `form`), waits for the answer, and hands the server MCP's own
`ElicitResult`:

```python
from mcp import ClientSession

callback = askgate.mcp.elicitation_callback(URL, "thread-1")
async with ClientSession(read, write, elicitation_callback=callback) as session:
    ...
```

It works with `ClientSession(..., elicitation_callback=...)` and `mcp.Client(...,
elicitation_callback=...)`, on both protocol versions the SDK speaks: a standalone
`elicitation/create` request (up to 2025-11-25), and the requests embedded in an
`input_required` result (2026-07-28), which the SDK routes through the same callback.

- form mode: the person sees the message and one field per property of the requested schema;
  accepting returns `ElicitResult(action="accept", content={...})`, checked by the gateway
  against the schema (required fields, types, lengths, bounds, formats, choices);
- URL mode: the person sees the message and the full URL (its host highlighted), and accepting
  is consent to open it: `ElicitResult(action="accept")`. The link is never opened here;
- the person **declines**: `ElicitResult(action="decline")`;
- the person presses **Not now**, the request's **deadline** (`timeout_s`) passes unanswered,
  or someone withdraws it: `ElicitResult(action="cancel")`.

The card names the server that asks: `server=`, or else the name the server gave in its
initialize (or discover) result. The outcome is acknowledged only once the `ElicitResult` is
built. When the gateway refuses the elicitation (a schema outside what MCP allows) or cannot be
reached, the callback returns `ErrorData` (`INVALID_PARAMS` for a refusal, `INTERNAL_ERROR`
otherwise), which the SDK sends the server as the request's error. When the server gives up on
the elicitation (it cancels the request, or the session closes), the request is withdrawn.

Needs `mcp` (`pip install 'askgate[mcp]'`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import mcp_types as types
from mcp.client.session import ClientRequestContext, ElicitationFnT
from pydantic import ValidationError

from ._approval import OnPosted
from ._ask import ask_one, derived_id
from ._errors import ApiError, AskgateError
from ._http import ask_body
from ._wire import Outcome

__all__ = ["DIALECT", "elicit_body", "elicit_result", "elicitation_callback"]

DIALECT = "form"


def _server_name(context: ClientRequestContext | None) -> str | None:
    """The name the server gave in its initialize (or discover) result, when the session has it."""
    session: Any = getattr(context, "session", None)
    try:
        info: Any = getattr(session, "server_info", None)
    except Exception:  # noqa: BLE001 - a session type that cannot tell
        return None
    name: Any = getattr(info, "name", None)
    return name if isinstance(name, str) and name else None


def elicit_body(
    params: types.ElicitRequestParams,
    *,
    id: str,
    server: str | None = None,
    timeout_s: float | None = None,
    title: str | None = None,
    answerers: Sequence[str] | None = None,
    default: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The body of the `form` request that asks a person for `params`; `default` is the
    `ElicitResult` given if nobody answers before `timeout_s`."""
    fields: dict[str, Any] = {"message": params.message, "mode": params.mode}
    if isinstance(params, types.ElicitRequestURLParams):
        fields["url"] = params.url
        fields["elicitation_id"] = params.elicitation_id
    else:
        fields["schema"] = params.requested_schema
    fields["server"] = server
    return ask_body(
        id=id,
        dialect=DIALECT,
        fields=fields,
        timeout_s=timeout_s,
        title=title,
        answerers=answerers,
        default=dict(default) if default is not None else None,
    )


def elicit_result(outcome: Outcome) -> types.ElicitResult:
    """MCP's `ElicitResult` for a resolved `form` request: the outcome's `response` is one
    (`{"action": ..., "content"?: ...}`); a request withdrawn without one is a `cancel`.
    `AskgateError` for a response that is not an `ElicitResult`."""
    if outcome.response is None:
        return types.ElicitResult(action="cancel")
    try:
        return types.ElicitResult.model_validate(outcome.response)
    except ValidationError as error:
        raise AskgateError(
            f"request {outcome.id!r} in session {outcome.session!r} came back without an ElicitResult: "
            f"{outcome.response!r:.300} ({error.error_count()} problem(s))"
        ) from None


def _error_data(error: Exception) -> types.ErrorData:
    if isinstance(error, ApiError) and 400 <= error.status < 500 and error.status not in (401, 403):
        data = [{"path": e.path, "message": e.message, "code": e.code} for e in error.errors]
        message = f"askgate refused the elicitation: {error}"
        return types.ErrorData(code=types.INVALID_PARAMS, message=message, data=data)
    return types.ErrorData(code=types.INTERNAL_ERROR, message=f"askgate could not ask a person: {error}")


def elicitation_callback(
    url: str,
    session: str,
    *,
    server: str | None = None,
    timeout_s: float | None = None,
    key: str | None = None,
    title: str | None = None,
    answerers: Sequence[str] | None = None,
    on_posted: OnPosted | None = None,
    client: httpx.AsyncClient | None = None,
    default: Callable[[types.ElicitRequestParams], Mapping[str, Any] | None] | None = None,
) -> ElicitationFnT:
    """The elicitation callback for `ClientSession(..., elicitation_callback=...)` or
    `mcp.Client(..., elicitation_callback=...)`: every elicitation the server sends is put to a
    person in askgate session `session` of the gateway at `url`, and answered with their
    `ElicitResult`.

    `server` names the MCP server on the card (default: the name from the server's initialize
    result). `timeout_s` gives each request a gateway deadline (then `cancel`). `key` is the
    agent key, `title` the card's title, `answerers` who may answer. `on_posted` is called with
    each posted request before the wait, to show the person its `viewer_url`. `client` is an
    `httpx.AsyncClient` to reuse (by default one per elicitation). `default`, given the
    elicitation, returns the `ElicitResult` given if nobody answers before `timeout_s`
    (`{"action": "accept", "content": {...}}` or `{"action": "decline"}`; `None` for none): the
    server then receives it instead of `cancel`."""

    async def callback(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        body = elicit_body(
            params,
            id=derived_id("mcp", None),
            server=server or _server_name(context),
            timeout_s=timeout_s,
            title=title,
            answerers=answerers,
            default=default(params) if default is not None and timeout_s is not None else None,
        )
        try:
            return await ask_one(url, session, body, elicit_result, key=key, on_posted=on_posted, client=client)
        except (AskgateError, httpx.HTTPError) as error:
            return _error_data(error)

    return callback
