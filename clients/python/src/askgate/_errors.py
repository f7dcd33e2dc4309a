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


class NotAnswered(AskgateError, TimeoutError):
    """`wait` ran out before every posted request was resolved. Nothing was acknowledged:
    collect again later (the gateway keeps the requests and their outcomes)."""

    def __init__(self, pending: tuple[str, ...]) -> None:
        self.pending = pending
        super().__init__(f"still waiting for {len(pending)} request(s): {', '.join(pending)}")
