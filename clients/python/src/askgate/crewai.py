"""askgate for CrewAI Flows (`crewai` 1.15): a person gives the feedback `@human_feedback` asks for.

A Flow method decorated with `@human_feedback(message=..., emit=[...], provider=...)` hands its
output to a feedback provider, and the flow goes on with the feedback: with `emit`, CrewAI has
the decorator's `llm` map it to one of the outcomes, and the listeners of that outcome run.
`GatewayFeedback` is such a provider. It puts the message, the method's output and the outcomes
to a person through the gateway (dialect `form`: a choice of outcome, and a text field for
anything they want to say), waits for the answer, and hands the flow the feedback:

```python
feedback = askgate.crewai.GatewayFeedback(URL, "thread-1")

class Review(Flow):
    @start()
    @human_feedback(message="Publish this?", emit=["approved", "rejected"], llm=MODEL,
                    default_outcome="rejected", provider=feedback)
    def draft(self) -> str: ...
```

- the person **picks an outcome**: the feedback is that outcome (`"approved"`), or the outcome
  and what they wrote (`"rejected: the title is wrong"`), which any model maps to the outcome
  they picked; `HumanFeedbackResult.feedback` carries it to the listeners. Without `emit` the
  form is one text field, and the feedback what they wrote;
- the person **declines** (or presses Not now), or the request's **deadline** (`timeout_s`)
  passes: the feedback is empty, and CrewAI takes `default_outcome` (or, without one, the
  first of `emit`), as when a person skips the console's prompt: set `default_outcome` to
  the outcome a flow should take when nobody says;
- a request withdrawn by someone else raises `RequestWithdrawn` in the flow.

By default `request_feedback` waits for the answer (CrewAI runs it in a worker thread), and the
flow goes on once the person answers. With `pause=True` it posts the question and raises
CrewAI's `HumanFeedbackPending` instead: `kickoff` returns that (the flow's state and the
pending feedback saved by its persistence), and once the person has answered, `resume` (or
`resume_sync`) collects the answer and resumes the flow restored with
`Flow.from_pending(flow_id, persistence)`. The request id comes from the flow id, the method
and the time the feedback was asked for, so the same pause always finds the same request. An
outcome is acknowledged only once the flow has the feedback.

`GatewayFeedback` answers `Flow.ask()` too, as a flow's `input_provider`: the question as a
form with one text field, the person's text as the answer (`None` when they decline or the
deadline passes).

Needs `crewai` (`pip install 'askgate[crewai]'`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import httpx
from crewai.flow.async_feedback import HumanFeedbackPending, PendingFeedbackContext
from crewai.flow.flow import Flow
from crewai.llms.base_llm import BaseLLM
from pydantic import BaseModel

from ._approval import OnPosted, open_client
from ._ask import derived_id
from ._errors import AskgateError, RequestWithdrawn
from ._http import AsyncApi, SyncApi, ask_body
from ._wire import Outcome

__all__ = [
    "DIALECT",
    "GatewayFeedback",
    "feedback_body",
    "feedback_from_outcome",
    "request_id",
    "resume",
    "resume_sync",
]

DIALECT = "form"

_MESSAGE_MAX = 10_000
"""The longest `message` the `form` dialect takes."""

_OUTPUT_MARK = "\n\n"


def request_id(context: PendingFeedbackContext) -> str:
    """The request id of the feedback `context` asks for: the same pause (flow, method, time
    it was asked) always gets the same id, also once the context is saved and loaded back."""
    return derived_id("crewai", f"{context.flow_id}/{context.method_name}/{context.requested_at.isoformat()}")


def _rendered(output: Any) -> str:
    """The method's output as text for the person: text as it is, a model or JSON data as
    indented JSON, anything else as `str` does it."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json(indent=2)
    try:
        return json.dumps(output, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(output)


def _message(context: PendingFeedbackContext) -> str:
    """The message, and below it the output under review, cut to what a form message holds."""
    message = context.message.strip() or "Your feedback?"
    if context.method_output is None:
        text = message
    else:
        text = message + _OUTPUT_MARK + _rendered(context.method_output)
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


def _schema(emit: Sequence[str] | None) -> dict[str, Any]:
    feedback = {"type": "string", "title": "Feedback"}
    if not emit:
        return {"type": "object", "properties": {"feedback": feedback}}
    return {
        "type": "object",
        "properties": {
            "outcome": {"type": "string", "title": "Outcome", "enum": list(emit)},
            "feedback": {**feedback, "description": "Anything the flow should know (optional)"},
        },
        "required": ["outcome"],
    }


def feedback_body(
    context: PendingFeedbackContext,
    *,
    timeout_s: float | None = None,
    title: str | None = None,
    answerers: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The body of the `form` request that asks a person for the feedback `context` wants."""
    return ask_body(
        id=request_id(context),
        dialect=DIALECT,
        fields={"message": _message(context), "mode": "form", "schema": _schema(context.emit)},
        timeout_s=timeout_s,
        title=title,
        answerers=answerers,
    )


def _content(outcome: Outcome) -> dict[str, Any] | None:
    """What the person filled in; `None` when they gave nothing (declined, Not now, the
    deadline). `RequestWithdrawn` for a withdrawn request."""
    response: Any = outcome.response
    if outcome.outcome == "withdrawn" or response is None:
        raise RequestWithdrawn(outcome.session, outcome.id)
    if not isinstance(response, Mapping) or response.get("action") != "accept":
        return None
    content: Any = cast(Mapping[str, Any], response).get("content")
    if not isinstance(content, Mapping):
        raise AskgateError(f"request {outcome.id!r} in session {outcome.session!r} came back without content: {response!r:.300}")
    return dict(cast(Mapping[str, Any], content))


def feedback_from_outcome(outcome: Outcome) -> str:
    """The feedback for a resolved request: the outcome picked (and, after `": "`, what the
    person wrote), or what they wrote when there were no outcomes; `""` when they gave none."""
    content = _content(outcome)
    if content is None:
        return ""
    picked: Any = content.get("outcome")
    written: Any = content.get("feedback")
    said = written.strip() if isinstance(written, str) else ""
    if isinstance(picked, str):
        return f"{picked}: {said}" if said else picked
    return said


class GatewayFeedback:
    """A CrewAI feedback provider (`@human_feedback(provider=...)`) and input provider
    (`Flow.input_provider`) that asks a person through the gateway at `url`, in askgate session
    `session`.

    `timeout_s` gives each request a gateway deadline; `wait` bounds the wait here (`NotAnswered`
    in the flow, nothing acknowledged: the same pause asked again collects the same request).
    `key` is the agent key, `title` the card's title, `answerers` who may answer. `on_posted` is
    called with each posted request before the wait, to show the person its `viewer_url`.
    `pause=True` posts the feedback question and pauses the flow (`HumanFeedbackPending`)
    instead of waiting: resume it with `resume`. `client` is an `httpx.Client` to reuse (by
    default one per request)."""

    def __init__(
        self,
        url: str,
        session: str,
        *,
        key: str | None = None,
        title: str | None = None,
        timeout_s: float | None = None,
        wait: float | None = None,
        answerers: Sequence[str] | None = None,
        on_posted: OnPosted | None = None,
        pause: bool = False,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = url
        self.session = session
        self.key = key
        self.title = title
        self.timeout_s = timeout_s
        self.wait = wait
        self.answerers = answerers
        self.on_posted = on_posted
        self.pause = pause
        self.client = client

    def _ask(self, body: dict[str, Any], *, pause: PendingFeedbackContext | None = None) -> Outcome:
        with open_client(self.client, httpx.Client) as http:
            api = SyncApi(self.url, self.session, key=self.key, client=http)
            posted = api.post(body)
            if self.on_posted is not None:
                self.on_posted([posted])
            if pause is not None:
                raise HumanFeedbackPending(context=pause, callback_info={"askgate": posted.to_json()})
            return api.collect([posted.id], self.wait)[posted.id]

    def _ack(self, id: str) -> None:
        with open_client(self.client, httpx.Client) as http:
            SyncApi(self.url, self.session, key=self.key, client=http).ack_collected([id])

    def request_feedback(self, context: PendingFeedbackContext, flow: Flow[Any]) -> str:
        """Put `context` to the person and return their feedback (blocking); with `pause`, post
        it and raise `HumanFeedbackPending`."""
        body = feedback_body(context, timeout_s=self.timeout_s, title=self.title, answerers=self.answerers)
        outcome = self._ask(body, pause=context if self.pause else None)
        feedback = feedback_from_outcome(outcome)
        # The flow has the feedback once this returns; nothing after it here can lose it.
        self._ack(outcome.id)
        return feedback

    def request_input(self, message: str, flow: Flow[Any], metadata: dict[str, Any] | None = None) -> str | None:
        """`Flow.ask(message)`: the person's text, or `None` when they gave none."""
        text = message.strip() or "Your answer?"
        body = ask_body(
            id=derived_id("crewai-ask", None),
            dialect=DIALECT,
            fields={
                "message": text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…",
                "mode": "form",
                "schema": {"type": "object", "properties": {"answer": {"type": "string", "title": "Answer"}}, "required": ["answer"]},
            },
            timeout_s=self.timeout_s,
            title=self.title,
            answerers=self.answerers,
        )
        outcome = self._ask(body)
        content = _content(outcome)
        self._ack(outcome.id)
        answer: Any = content.get("answer") if content is not None else None
        return answer if isinstance(answer, str) else None


def _pending(flow: Flow[Any], llm: BaseLLM | None) -> PendingFeedbackContext:
    context = flow.pending_feedback
    if context is None:
        raise ValueError(
            f"flow {type(flow).__name__} ({flow.flow_id}) is not paused on feedback: restore it with "
            f"{type(flow).__name__}.from_pending(flow_id, persistence) first"
        )
    if llm is not None:
        # The flow maps the feedback to an outcome with the model its context names; a model
        # given here stands in for one whose saved config cannot be built again.
        context.llm = cast(Any, llm)
    return context


async def resume(
    flow: Flow[Any],
    *,
    url: str,
    session: str,
    key: str | None = None,
    wait: float | None = None,
    llm: BaseLLM | None = None,
    client: httpx.AsyncClient | None = None,
) -> Any:
    """Wait for the person's answer to the feedback `flow` paused on (posted by a
    `GatewayFeedback(pause=True)`), resume the flow with it (`flow.resume_async`) and return
    what that returns: the flow's result, or a new `HumanFeedbackPending`.

    ```python
    result = Review(persistence=persistence).kickoff()            # HumanFeedbackPending
    flow = Review.from_pending(result.context.flow_id, persistence)
    result = await askgate.crewai.resume(flow, url=URL, session="thread-1")
    ```

    `wait` bounds the wait (`NotAnswered`, nothing acknowledged: call again later). `llm` is the
    model that maps the feedback to an outcome, for a flow whose model cannot be built again
    from the config saved with the pause (a custom `BaseLLM`). The outcome is acknowledged once
    the flow has resumed."""
    context = _pending(flow, llm)
    id = request_id(context)
    async with open_client(client, httpx.AsyncClient) as http:
        api = AsyncApi(url, session, key=key, client=http)
        outcome = (await api.collect([id], wait))[id]
        result = await flow.resume_async(feedback_from_outcome(outcome))
        await api.ack_collected([id])
        return result


def resume_sync(
    flow: Flow[Any],
    *,
    url: str,
    session: str,
    key: str | None = None,
    wait: float | None = None,
    llm: BaseLLM | None = None,
    client: httpx.Client | None = None,
) -> Any:
    """`resume`, blocking (`flow.resume`: not from a running event loop)."""
    context = _pending(flow, llm)
    id = request_id(context)
    with open_client(client, httpx.Client) as http:
        api = SyncApi(url, session, key=key, client=http)
        outcome = api.collect([id], wait)[id]
        result = flow.resume(feedback_from_outcome(outcome))
        api.ack_collected([id])
        return result

