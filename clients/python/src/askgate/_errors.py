"""The exceptions askgate raises."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast


@dataclass(frozen=True, kw_only=True)
class FieldError:
    """One problem the gateway found, with a path into what was sent (`questions[0].header`)."""

    path: str
    message: str
    code: str

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FieldError:
        return cls(
            path=str(value.get("path", "")),
            message=str(value.get("message", "")),
            code=str(value.get("code", "")),
        )

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def field_errors(values: Any) -> tuple[FieldError, ...]:
    """The `errors` list of a `rejected` frame or an HTTP error body."""
    if isinstance(values, (str, bytes, Mapping)):
        return ()
    try:
        items: list[Any] = list(values)
    except TypeError:
        return ()
    return tuple(FieldError.from_json(cast(Mapping[str, Any], v)) for v in items if isinstance(v, Mapping))


class AskgateError(Exception):
    """Base class of every error askgate raises."""


class AskRejected(AskgateError):
    """The gateway refused an ask: the questions do not validate, the id is taken by other
    questions, or a limit was reached. `errors` lists every problem with its path."""

    def __init__(self, session: str, id: str | None, errors: tuple[FieldError, ...]) -> None:
        self.session = session
        self.id = id
        self.errors = errors
        detail = "; ".join(str(e) for e in errors) or "no reason given"
        super().__init__(f"the gateway rejected request {id!r} in session {session!r}: {detail}")


class Forbidden(AskgateError):
    """The agent key may not act on this session: the gateway binds the key to sessions whose id
    starts with another prefix (`--agent-key KEY:PREFIX`). The same key is refused every time,
    so nothing is sent again, and nothing of the session was read or changed.

    A refused `open` raises this; a refused ask raises it as an `AskRejected` too, and a refused
    HTTP call as an `ApiError` (status 403), so handlers of those still see it."""

    def __init__(self, session: str, message: str) -> None:
        self.session = session
        self.message = message
        super().__init__(_forbidden(session, message))


def _forbidden(session: str, message: str) -> str:
    return f"the agent key may not act on session {session!r} (forbidden): {message or 'no reason given'}"


def _refusal(errors: tuple[FieldError, ...]) -> FieldError | None:
    """The error that says the session is outside the key's scope, if one does."""
    return next((e for e in errors if e.code == "forbidden"), None)


class GatewayClosed(AskgateError):
    """The gateway closed the agent connection for good (a wrong key: 4401, a malformed or
    too large frame: 4400/4413) or refused the WebSocket upgrade with an HTTP client error.
    Reconnecting cannot help, so every ask in flight fails with this."""

    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason
        super().__init__(f"the gateway closed the connection ({code}): {reason}")


class ClientClosed(AskgateError):
    """The client was closed while the ask was in flight, or used after `aclose()`."""


class RequestWithdrawn(AskgateError):
    """The request ended as `withdrawn`: someone withdrew it (a `cancel` frame or an HTTP
    `DELETE`) before a person answered, so there is no answer to hand back."""

    def __init__(self, session: str, id: str) -> None:
        self.session = session
        self.id = id
        super().__init__(f"request {id!r} in session {session!r} was withdrawn before it was answered")


class ApiError(AskgateError):
    """The HTTP API answered with an error status; `errors` carries the gateway's reasons."""

    def __init__(self, status: int, errors: tuple[FieldError, ...], text: str = "") -> None:
        self.status = status
        self.errors = errors
        detail = "; ".join(str(e) for e in errors) or text.strip() or "no reason given"
        super().__init__(f"the gateway answered HTTP {status}: {detail}")


class AskForbidden(AskRejected, Forbidden):
    """An ask rejected because its session is outside the agent key's scope."""

    def __init__(self, session: str, id: str | None, errors: tuple[FieldError, ...]) -> None:
        refusal = _refusal(errors)
        self.session = session
        self.id = id
        self.errors = errors
        self.message = refusal.message if refusal is not None else ""
        Exception.__init__(self, f"request {id!r}: " + _forbidden(session, self.message))


class ApiForbidden(ApiError, Forbidden):
    """An HTTP call refused (403) because its session is outside the agent key's scope."""

    def __init__(self, session: str, errors: tuple[FieldError, ...]) -> None:
        refusal = _refusal(errors)
        self.status = 403
        self.errors = errors
        self.session = session
        self.message = refusal.message if refusal is not None else ""
        Exception.__init__(self, "the gateway answered HTTP 403: " + _forbidden(session, self.message))


def rejection(session: str, id: str | None, errors: tuple[FieldError, ...]) -> AskRejected:
    """The error for a `rejected` ask: `AskForbidden` when the session is outside the key's
    scope, since no change to the questions gets it through."""
    if _refusal(errors) is not None:
        return AskForbidden(session, id, errors)
    return AskRejected(session, id, errors)


def api_error(status: int, errors: tuple[FieldError, ...], text: str, session: str) -> ApiError:
    """The error for an HTTP error status of a call about `session`."""
    if status == 403 and _refusal(errors) is not None:
        return ApiForbidden(session, errors)
    return ApiError(status, errors, text)


class NotAnswered(AskgateError, TimeoutError):
    """`wait` ran out before every posted request was resolved. Nothing was acknowledged:
    collect again later (the gateway keeps the requests and their outcomes)."""

    def __init__(self, pending: tuple[str, ...]) -> None:
        self.pending = pending
        super().__init__(f"still waiting for {len(pending)} request(s): {', '.join(pending)}")
