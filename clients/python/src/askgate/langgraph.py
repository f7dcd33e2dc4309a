"""askgate for LangGraph: answer deepagents-style `ask_user` interrupts through the gateway.

A graph that calls `interrupt({"type": "ask_user", "questions": [...], "tool_call_id": ...})`
(deepagents' `ask_user` tool does) pauses with that `Interrupt`. These helpers post its questions
to the gateway in the `deepagents` dialect, wait for a person to answer in a browser tab, and
build the `Command(resume={interrupt.id: payload})` that continues the graph, `payload` being the
resume payload deepagents' TUI would send (`{"answers": [...]}`, or the `cancelled` / `error`
forms for a decline or a timeout).

Needs `langgraph` (`pip install 'askgate[langgraph]'`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import httpx
from langgraph.types import Command

from ._errors import RequestWithdrawn
from ._http import AsyncApi, PostedRequest, SyncApi, ask_body, request_ids
from ._wire import Outcome

__all__ = [
    "PostedRequest",
    "ServerThread",
    "answer_interrupts",
    "answer_interrupts_sync",
    "collect_resume",
    "collect_resume_sync",
    "is_ask_user",
    "post_interrupts",
    "post_interrupts_sync",
    "resume_payload",
]

DIALECT = "deepagents"


class InterruptLike(Protocol):
    """What is read of a `langgraph.types.Interrupt`."""

    @property
    def id(self) -> str: ...

    @property
    def value(self) -> Any: ...


def is_ask_user(interrupt: InterruptLike) -> bool:
    """Whether an interrupt carries a deepagents `ask_user` payload
    (`{"type": "ask_user", "questions": [...]}`)."""
    value: Any = interrupt.value
    if not isinstance(value, Mapping):
        return False
    payload = cast(Mapping[str, Any], value)
    return payload.get("type") == "ask_user" and isinstance(payload.get("questions"), list)


def resume_payload(outcome: Outcome) -> Any:
    """The deepagents resume payload for an outcome: the gateway's `response`
    (`{"answers": [...]}` when answered, `{"status": "cancelled", ...}` when declined,
    `{"status": "error", ...}` when the deadline passed). `withdrawn` raises `RequestWithdrawn`."""
    if outcome.outcome == "withdrawn" or outcome.response is None:
        raise RequestWithdrawn(outcome.session, outcome.id)
    return outcome.response


@dataclass(frozen=True, kw_only=True)
class ServerThread:
    """A thread on a LangGraph Agent Server (`langgraph dev`, LangGraph Platform) that the
    gateway resumes itself once a person answers: it POSTs a run of `assistant_id` with
    `command.resume` (keyed by the interrupt's id) to `{url}/threads/{thread_id}/runs`, so no
    process of the agent's waits for the answer (docs/PROTOCOL.md, Callbacks). `api_key` goes
    in `x-api-key`."""

    url: str
    thread_id: str
    assistant_id: str
    api_key: str | None = None

    def callback(self, interrupt_id: str) -> dict[str, Any]:
        """The ask's `callback` resuming `interrupt_id` on this thread."""
        callback: dict[str, Any] = {
            "url": self.url,
            "format": "langgraph-server",
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "interrupt_id": interrupt_id,
        }
        if self.api_key is not None:
            callback["api_key"] = self.api_key
        return callback


def _as_list(interrupts: InterruptLike | Iterable[InterruptLike]) -> list[InterruptLike]:
    if isinstance(interrupts, Iterable):
        return list(interrupts)
    return [interrupts]


def _body(
    interrupt: InterruptLike, title: str | None, timeout_s: float | None, resume_thread: ServerThread | None = None
) -> dict[str, Any]:
    if not is_ask_user(interrupt):
        raise ValueError(
            f"interrupt {interrupt.id!r} is not an ask_user interrupt (filter with is_ask_user): {interrupt.value!r:.200}"
        )
    return ask_body(
        id=interrupt.id,
        dialect=DIALECT,
        questions=interrupt.value["questions"],
        title=title,
        timeout_s=timeout_s,
        callback=None if resume_thread is None else resume_thread.callback(interrupt.id),
    )


async def post_interrupts(
    url: str,
    session: str,
    interrupts: InterruptLike | Iterable[InterruptLike],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    client: httpx.AsyncClient | None = None,
    resume_thread: ServerThread | None = None,
) -> list[PostedRequest]:
    """Post the questions of `ask_user` interrupts to the gateway (request id = interrupt id,
    so posting again is harmless). Returns one `PostedRequest` per interrupt; show their
    `viewer_url` to the person. `timeout_s` gives the questions a gateway deadline. With
    `resume_thread`, the gateway itself resumes that Agent Server thread with each answer
    (nothing need wait for it here)."""
    items = _as_list(interrupts)
    bodies = [_body(i, title, timeout_s, resume_thread) for i in items]
    if client is None:
        async with httpx.AsyncClient() as own:
            return await post_interrupts(
                url,
                session,
                items,
                key=key,
                title=title,
                timeout_s=timeout_s,
                client=own,
                resume_thread=resume_thread,
            )
    api = AsyncApi(url, session, key=key, client=client)
    return [await api.post(body) for body in bodies]


def post_interrupts_sync(
    url: str,
    session: str,
    interrupts: InterruptLike | Iterable[InterruptLike],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    client: httpx.Client | None = None,
    resume_thread: ServerThread | None = None,
) -> list[PostedRequest]:
    """`post_interrupts`, blocking."""
    items = _as_list(interrupts)
    bodies = [_body(i, title, timeout_s, resume_thread) for i in items]
    if client is None:
        with httpx.Client() as own:
            return post_interrupts_sync(
                url,
                session,
                items,
                key=key,
                title=title,
                timeout_s=timeout_s,
                client=own,
                resume_thread=resume_thread,
            )
    api = SyncApi(url, session, key=key, client=client)
    return [api.post(body) for body in bodies]


async def collect_resume(
    url: str,
    session: str,
    posted: Sequence[PostedRequest | str],
    *,
    key: str | None = None,
    wait: float | None = None,
    ack: bool = True,
    client: httpx.AsyncClient | None = None,
) -> Command[Any]:
    """Wait until every posted interrupt is answered and return
    `Command(resume={interrupt_id: payload, ...})` to continue the graph with.

    `wait` bounds the whole wait in seconds (`None`: no bound); when it runs out, `NotAnswered`
    is raised and nothing is acknowledged. With `ack=True` the outcomes are acknowledged before
    returning (an acknowledgement that fails is logged, not raised). Transport errors are retried
    until `wait` runs out, as `askgate.collect_results` does."""
    ids = request_ids(posted)
    if client is None:
        async with httpx.AsyncClient() as own:
            return await collect_resume(url, session, ids, key=key, wait=wait, ack=ack, client=own)
    api = AsyncApi(url, session, key=key, client=client)
    outcomes = await api.collect(ids, wait)
    command: Command[Any] = Command(resume={id: resume_payload(outcomes[id]) for id in ids})
    if ack:
        await api.ack_collected(ids)
    return command


def collect_resume_sync(
    url: str,
    session: str,
    posted: Sequence[PostedRequest | str],
    *,
    key: str | None = None,
    wait: float | None = None,
    ack: bool = True,
    client: httpx.Client | None = None,
) -> Command[Any]:
    """`collect_resume`, blocking."""
    ids = request_ids(posted)
    if client is None:
        with httpx.Client() as own:
            return collect_resume_sync(url, session, ids, key=key, wait=wait, ack=ack, client=own)
    api = SyncApi(url, session, key=key, client=client)
    outcomes = api.collect(ids, wait)
    command: Command[Any] = Command(resume={id: resume_payload(outcomes[id]) for id in ids})
    if ack:
        api.ack_collected(ids)
    return command


async def answer_interrupts(
    url: str,
    session: str,
    interrupts: InterruptLike | Iterable[InterruptLike],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
) -> Command[Any]:
    """Post `ask_user` interrupts, wait for the answers, and return the `Command` to resume
    with: `post_interrupts` then `collect_resume`. `on_posted` is called with the posted
    requests before the wait, to show the person their `viewer_url`.

    ```python
    result = graph.invoke(inputs, config)
    command = await answer_interrupts("http://127.0.0.1:8080", "thread-1", result["__interrupt__"])
    result = graph.invoke(command, config)
    ```
    """
    async with httpx.AsyncClient() as client:
        posted = await post_interrupts(
            url, session, interrupts, key=key, title=title, timeout_s=timeout_s, client=client
        )
        if on_posted is not None:
            on_posted(posted)
        return await collect_resume(url, session, posted, key=key, wait=wait, client=client)


def answer_interrupts_sync(
    url: str,
    session: str,
    interrupts: InterruptLike | Iterable[InterruptLike],
    *,
    key: str | None = None,
    title: str | None = None,
    timeout_s: float | None = None,
    wait: float | None = None,
    on_posted: Callable[[list[PostedRequest]], None] | None = None,
) -> Command[Any]:
    """`answer_interrupts`, blocking."""
    with httpx.Client() as client:
        posted = post_interrupts_sync(
            url, session, interrupts, key=key, title=title, timeout_s=timeout_s, client=client
        )
        if on_posted is not None:
            on_posted(posted)
        return collect_resume_sync(url, session, posted, key=key, wait=wait, client=client)
