"""One request over the HTTP API, for adapters that answer a framework's callback in place.

`ask_one` posts a request body, long-polls its outcome, hands it to `convert`, and only then
acknowledges it, so an answer is never forgotten by the gateway before the framework has it.
Cancelling the call (the framework gave up on the callback) withdraws the request, so tabs stop
showing it. `askgate.mcp` and `askgate.claude` use it; the approval adapters use
`askgate._approval.Asking`, which takes the same steps for tool calls.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import httpx

from ._approval import OnPosted, open_client, withdraw
from ._http import AsyncApi, PostedRequest
from ._wire import Outcome

__all__ = ["ask_one", "derived_id"]

_T = TypeVar("_T")


def derived_id(prefix: str, key: str | None) -> str:
    """A request id for a question known by `key` (a tool call id): the same key always gets
    the same id, so asking again collects the same request. Without a key, a fresh id."""
    if not key:
        return f"{prefix}-{uuid.uuid4().hex}"
    return f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:40]}"


async def ask_one(
    url: str,
    session: str,
    body: dict[str, Any],
    convert: Callable[[Outcome], _T],
    *,
    key: str | None = None,
    wait: float | None = None,
    on_posted: OnPosted | None = None,
    client: httpx.AsyncClient | None = None,
) -> _T:
    """Post `body`, wait for its outcome (`wait` bounds the wait: `NotAnswered`, nothing
    acknowledged), and return `convert(outcome)`; the outcome is acknowledged after `convert`
    returns (a failed acknowledgement is logged, not raised). Cancelling withdraws the request."""
    async with open_client(client, httpx.AsyncClient) as http:
        api = AsyncApi(url, session, key=key, client=http)
        posted: list[PostedRequest] = []
        try:
            posted.append(await api.post(body))
            if on_posted is not None:
                on_posted(list(posted))
            outcomes = await api.collect([posted[0].id], wait)
        except anyio.get_cancelled_exc_class():
            await withdraw(api, posted)
            raise
        result = convert(outcomes[posted[0].id])
        await api.ack_collected([posted[0].id])
        return result
