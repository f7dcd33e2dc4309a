"""The gateway binary the Python tests under `tests/` run: `$ASKGATE_BIN`, else the workspace's
debug build (under `$CARGO_TARGET_DIR` when set)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def binary() -> Path:
    given = os.environ.get("ASKGATE_BIN")
    if given:
        path = Path(given)
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        path = (target if target.is_absolute() else REPO / target) / "debug" / "askgate"
    if not path.is_file():
        pytest.fail(f"no askgate binary at {path}: build it, or set ASKGATE_BIN")
    return path
