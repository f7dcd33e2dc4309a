"""Run the real gateway binary on loopback for the tests."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from websockets.sync.client import connect

_LISTENING = re.compile(r"askgate listening on (http://\S+)")

REPO = Path(__file__).resolve().parents[3]


def binary() -> Path:
    """The gateway binary: `$ASKGATE_BIN`, else the workspace's debug build."""
    path = Path(os.environ.get("ASKGATE_BIN") or REPO / "target" / "debug" / "askgate")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise RuntimeError(
            f"the askgate gateway binary is missing at {path}: build it with `cargo build -p askgate` "
            "or point ASKGATE_BIN at it (clients/python/scripts/test.sh does both)"
        )
    return path


class Gateway:
    """`askgate serve` as a subprocess; `url` is its base URL (`http://127.0.0.1:PORT`)."""

    def __init__(self, data_dir: Path, *, store: str = "memory", extra: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.store = store
        self.extra = extra or []
        self.log = data_dir / "gateway.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.listen = "127.0.0.1:0"

    def start(self, timeout: float = 20.0) -> Gateway:
        assert self.process is None
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [
                    str(binary()),
                    "serve",
                    "--listen",
                    self.listen,
                    "--store",
                    self.store,
                    "--data-dir",
                    str(self.data_dir),
                    *self.extra,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, "NO_COLOR": "1", "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_bytes()[offset:].decode(errors="replace")
            found = _LISTENING.search(text)
            if found:
                self.url = found.group(1)
                # Restart on the same port (for reconnect tests).
                self.listen = self.url.removeprefix("http://")
                return self
            if self.process.poll() is not None:
                # A restart on the same port (reconnect tests) may find another process holding
                # it for a moment: try again until the deadline rather than fail at once.
                if "in use" in text and not self.listen.endswith(":0"):
                    self.process = None
                    time.sleep(0.1)
                    return self.start(max(0.0, deadline - time.monotonic()))
                raise RuntimeError(f"askgate serve exited with {self.process.returncode}:\n{text}")
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"askgate serve did not report its address within {timeout} s; log: {self.log}")

    def stop(self, timeout: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL: connections drop without a close frame."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(10)

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    def viewer_url(self, session: str, key: str | None = None, timeout: float = 10.0) -> str:
        """The session's viewer link, from an `open` on a throwaway agent connection."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        with connect(self.ws_url + "/v1/agent", additional_headers=headers, open_timeout=timeout) as ws:
            ws.send(json.dumps({"type": "open", "session": session}))
            frame = json.loads(ws.recv(timeout))
            assert frame["type"] == "opened", frame
            return str(frame["viewer_url"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
