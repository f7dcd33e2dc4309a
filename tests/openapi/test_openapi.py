"""The HTTP API as docs/openapi.json describes it, checked by Schemathesis against a live gateway.

A gateway (`askgate serve`, the embedded store in a temporary directory, one agent key and one
operator key) is started on a free loopback port; then Schemathesis generates calls for every
operation in the document, once with each key, and checks each answer:

- not a server error (no 5xx);
- the status is one the document lists for the operation;
- the body matches the schema the document gives for that status and media type;
- it comes within REQUEST_TIMEOUT_S, so a call that hangs fails the run.

The number of cases per operation is bounded (MAX_EXAMPLES) so that the file runs in about a
minute and a half on two cores; the seed is fixed so a run can be repeated exactly
(ASKGATE_SCHEMATHESIS_SEED picks another, ASKGATE_SCHEMATHESIS_EXAMPLES more cases).

The binary is ASKGATE_BIN (else target/debug/askgate under CARGO_TARGET_DIR or the repository).
Run: ASKGATE_BIN=target/debug/askgate .venv/openapi/bin/python -m pytest tests/openapi -q
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "pysupport"))
from askgate_binary import binary  # noqa: E402  (after the path it is found on)
DOCUMENT = REPO / "docs" / "openapi.json"
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")

AGENT_KEY = "openapi-agent-key"
OPERATOR_KEY = "openapi-operator-key"

START_TIMEOUT_S = 30.0
"""How long the gateway may take to say it listens."""
REQUEST_TIMEOUT_S = 10.0
"""How long one call may take before Schemathesis counts it a failure (a hang). The longest
wait a call makes on purpose is a long-poll's, cut to 2 s by long_polls.py."""
RUN_TIMEOUT_S = 240.0
"""How long one Schemathesis run may take in all before the test fails."""
MAX_EXAMPLES = int(os.environ.get("ASKGATE_SCHEMATHESIS_EXAMPLES", "25"))
"""Generated cases per operation and phase: enough to reach every status the gateway gives
an arbitrary caller, few enough to stay within the time above."""
SEED = os.environ.get("ASKGATE_SCHEMATHESIS_SEED", "20261207")
CHECKS = "not_a_server_error,status_code_conformance,response_schema_conformance"

LISTENING = re.compile(r"askgate listening on (http://\S+)")


class Gateway:
    """A running `askgate serve`, its stderr kept for failure messages."""

    def __init__(self, data_dir: Path) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [
                str(binary()),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
                str(data_dir),
                "--agent-key",
                AGENT_KEY,
                "--operator-key",
                OPERATOR_KEY,
                "--log-format",
                "text",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NO_COLOR": "1", "RUST_LOG": "warn"},
        )
        listening: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(listening,), daemon=True).start()
        try:
            url = listening.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            url = None
        if url is None:
            self.stop()
            pytest.fail(f"the gateway did not start in {START_TIMEOUT_S} s:\n{self.log()}")
        self.url = url

    def _read(self, listening: queue.Queue[str | None]) -> None:
        assert self.process.stderr is not None
        told = False
        for line in self.process.stderr:
            self.lines.append(line)
            found = LISTENING.search(line)
            if found and not told:
                listening.put(found.group(1))
                told = True
        if not told:
            listening.put(None)

    def log(self) -> str:
        return "".join(self.lines[-200:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    running = Gateway(tmp_path_factory.mktemp("askgate-data"))
    try:
        yield running
    finally:
        running.stop()


def test_the_gateway_serves_the_document_as_kept(gateway: Gateway) -> None:
    """`GET /v1/openapi.json` is docs/openapi.json byte for byte, as JSON, without a key."""
    with urllib.request.urlopen(f"{gateway.url}/v1/openapi.json", timeout=REQUEST_TIMEOUT_S) as response:
        assert response.status == 200
        assert response.headers["content-type"] == "application/json"
        assert response.read() == DOCUMENT.read_bytes()


@pytest.mark.parametrize("key", [AGENT_KEY, OPERATOR_KEY], ids=["agent key", "operator key"])
def test_every_operation_answers_as_documented(gateway: Gateway, key: str, tmp_path: Path) -> None:
    """Schemathesis's generated calls to every operation, with one key, all pass the checks."""
    command = [
        str(SCHEMATHESIS),
        "run",
        str(DOCUMENT),
        "--url",
        gateway.url,
        "--header",
        f"Authorization: Bearer {key}",
        "--checks",
        CHECKS,
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        SEED,
        "--request-timeout",
        str(REQUEST_TIMEOUT_S),
        "--workers",
        "2",
        "--no-shrink",
        "--suppress-health-check",
        "all",
        "--report-dir",
        str(tmp_path / "report"),
    ]
    try:
        run = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            env={
                **os.environ,
                "NO_COLOR": "1",
                "SCHEMATHESIS_HOOKS": "long_polls",
                "PYTHONPATH": str(Path(__file__).parent),
            },
            cwd=tmp_path,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"Schemathesis did not finish in {RUN_TIMEOUT_S} s:\n{expired.stdout}")
    alive = gateway.process.poll() is None
    assert run.returncode == 0 and alive, (
        f"Schemathesis found calls off docs/openapi.json (exit {run.returncode}; "
        f"gateway {'running' if alive else 'exited'}):\n{run.stdout}\n{run.stderr}\n"
        f"--- the gateway's log ---\n{gateway.log()}"
    )
