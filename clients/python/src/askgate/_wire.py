"""What travels on the wire: outcomes, ids, and the URLs derived from a gateway's base URL."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlsplit, urlunsplit

OutcomeKind = Literal["answered", "declined", "timed_out", "withdrawn"]
"""How a request ended."""

OUTCOMES: tuple[OutcomeKind, ...] = ("answered", "declined", "timed_out", "withdrawn")
_OUTCOMES: dict[Any, OutcomeKind] = {kind: kind for kind in OUTCOMES}

AGENT_PATH = "/v1/agent"
"""The agent WebSocket endpoint under a gateway's base URL."""

# Not `.` or `..`: a URL path resolves those away, so their viewer links would lead elsewhere.
_SESSION_ID = re.compile(r"(?!\.\.?\Z)[A-Za-z0-9._:-]{1,128}")
_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,256}")


def check_session_id(session: str) -> str:
    """Return `session` if it is a valid session id (1-128 of `A-Z a-z 0-9 . _ : -`, but not `.`
    or `..`)."""
    if not _SESSION_ID.fullmatch(session):
        raise ValueError(f"not a session id (1-128 of A-Z a-z 0-9 . _ : -, but not . or ..): {session!r}")
    return session


def check_request_id(id: str) -> str:
    """Return `id` if it is a valid request id (1-256 printable ASCII characters, no space)."""
    if not _REQUEST_ID.fullmatch(id):
        raise ValueError(f"not a request id (1-256 printable ASCII characters, no space): {id!r}")
    return id


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """How a request ended, as the gateway hands it back (an `outcome` frame, or a resolved
    request from the HTTP API).

    For the harness dialect `response` is `{"answers": [...], "cancelled": bool}`, `result` the
    `ask_user_result` object or the `DECLINED` / `TIMED_OUT` sentence, and `model_text` the exact
    text the model reads. For deepagents `response` is the resume payload and `result` the
    `Q:`/`A:` transcript. A `withdrawn` request has all three `None`.
    """

    session: str
    id: str
    outcome: OutcomeKind
    response: Any
    result: Any
    model_text: str | None
    by: str | None
    """The tab that answered or declined."""
    user: str | None = None
    """The person who answered or declined, when the gateway knew them (a personal link, a
    trusted proxy's header); `None` for an anonymous link holder, a timeout or a withdrawal."""
    via: str | None = None
    """How the gateway knew who ended it (`"personal-link"`, `"proxy"`, `"email"`, ...), or
    `"default"` when the ask's `default` answered at the deadline (then `by` is `"default"` and
    `user` is `None`); `None` for a timeout or a withdrawal."""
    voters: list[dict[str, Any]] | None = None
    """For an approval with a quorum, every voter and their vote (`{"user", "decisions"}`);
    `user` is then the person whose vote ended it."""
    at_ms: int | None

    @classmethod
    def from_json(cls, value: Mapping[str, Any], *, session: str | None = None) -> Outcome:
        """Read an `outcome` frame or a resolved HTTP body (which has no `session`)."""
        outcome = _OUTCOMES.get(value.get("outcome"))
        if outcome is None:
            raise ValueError(f"unknown outcome {value.get('outcome')!r}")
        model_text = value.get("model_text")
        by = value.get("by")
        user = value.get("user")
        via = value.get("via")
        voters = value.get("voters")
        at_ms = value.get("at_ms")
        return cls(
            session=str(value.get("session", session or "")),
            id=str(value.get("id", "")),
            outcome=outcome,
            response=value.get("response"),
            result=value.get("result"),
            model_text=model_text if isinstance(model_text, str) else None,
            by=by if isinstance(by, str) else None,
            user=user if isinstance(user, str) else None,
            via=via if isinstance(via, str) else None,
            voters=voters if isinstance(voters, list) else None,
            at_ms=at_ms if isinstance(at_ms, int) else None,
        )


@dataclass(frozen=True, kw_only=True)
class Opened:
    """A session the agent opened, and the link people answer it at."""

    session: str
    viewer_url: str


def _split_base(url: str) -> tuple[str, str, str]:
    """(scheme, netloc, path) of a base URL, checked."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "ws", "wss"):
        raise ValueError(f"expected an http://, https://, ws:// or wss:// URL, got {url!r}")
    if not parts.netloc:
        raise ValueError(f"no host in {url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"a gateway base URL carries no query or fragment: {url!r}")
    return scheme, parts.netloc, parts.path.rstrip("/")


def agent_url(url: str) -> str:
    """The agent WebSocket endpoint for a gateway URL.

    `http://host:port[/prefix]` becomes `ws://host:port[/prefix]/v1/agent` (`https` → `wss`);
    a `ws://` / `wss://` URL with a path is used as is, without one it gets `/v1/agent`.
    """
    scheme, netloc, path = _split_base(url)
    if scheme in ("ws", "wss"):
        return urlunsplit((scheme, netloc, path or AGENT_PATH, "", ""))
    ws = "wss" if scheme == "https" else "ws"
    if not path.endswith(AGENT_PATH):
        path += AGENT_PATH
    return urlunsplit((ws, netloc, path, "", ""))


def http_base(url: str) -> str:
    """The HTTP base URL for a gateway URL (`ws://h/v1/agent` → `http://h`)."""
    scheme, netloc, path = _split_base(url)
    if scheme in ("ws", "wss"):
        scheme = "https" if scheme == "wss" else "http"
    if path.endswith(AGENT_PATH):
        path = path[: -len(AGENT_PATH)]
    return urlunsplit((scheme, netloc, path, "", ""))


def requests_path(session: str, id: str | None = None) -> str:
    """`/v1/sessions/{session}/requests[/{id}]`, each segment percent-encoded."""
    path = f"/v1/sessions/{quote(check_session_id(session), safe='')}/requests"
    if id is not None:
        path += "/" + quote(check_request_id(id), safe="")
    return path


def authorization(key: str | None) -> dict[str, str]:
    """The agent key header, or none in local mode."""
    return {"Authorization": f"Bearer {key}"} if key else {}


def check_default(default: Any, timeout_s: float | None) -> None:
    """Refuses a `default` without a deadline: it is the answer given when the deadline passes."""
    if default is not None and timeout_s is None:
        raise ValueError("default is the answer given when the deadline passes: it needs timeout_s")


def follow_ups(remind_after_s: float | None, escalate: Mapping[str, Any] | None) -> dict[str, Any]:
    """An ask's `remind_after_s` and `escalate` fields, checked: positive seconds after the ask,
    and `escalate` as `{"after_s": seconds, "to": ["group:leads", "carol@example.com"]}`.
    Raises `ValueError` naming the field."""
    out: dict[str, Any] = {}
    if remind_after_s is not None:
        out["remind_after_s"] = _positive_seconds("remind_after_s", remind_after_s)
    if escalate is not None:
        unknown = sorted(set(escalate) - {"after_s", "to"})
        if unknown:
            raise ValueError(f"escalate.{unknown[0]}: escalate takes `after_s` and `to` only")
        to = escalate.get("to")
        if isinstance(to, str) or not isinstance(to, Sequence) or not to or not all(isinstance(n, str) and n for n in to):
            raise ValueError(f"escalate.to: a non-empty list of people and `group:NAME`s, got {to!r}")
        out["escalate"] = {"after_s": _positive_seconds("escalate.after_s", escalate.get("after_s")), "to": list(to)}
    return out


def _positive_seconds(path: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{path}: positive seconds, got {value!r}")
    return float(value)

