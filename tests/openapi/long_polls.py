"""Schemathesis hooks for tests/openapi (loaded through SCHEMATHESIS_HOOKS).

A long-poll (`GET /v1/sessions/{session}/requests/{id}?wait_s=N`) on a request still pending
lasts N seconds by design, up to 60. Schemathesis reuses the ids that POSTs return, so it does
reach pending requests; it also draws any number for `wait_s`. Each such wait is cut to
MAX_WAIT_S, so a run stays short while a call that outlasts its wait still fails the run's
per-request timeout as a hang. Values that are not numbers go as drawn: the gateway must refuse
them (400), which the run checks.
"""

from __future__ import annotations

import math
from typing import Any

import schemathesis

MAX_WAIT_S = 2.0
"""The longest long-poll a generated call makes, in seconds; well under the per-request
timeout of test_openapi.py."""


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    query = case.query
    if not isinstance(query, dict) or "wait_s" not in query:
        return
    try:
        wait = float(query["wait_s"])
    except (TypeError, ValueError):
        return
    if not math.isnan(wait) and wait > MAX_WAIT_S:
        query["wait_s"] = MAX_WAIT_S
