"""What the Python benchmark scripts share: a gateway process on a free loopback port with a
temporary data directory, and reading frames of one type from a WebSocket."""

import json
import socket
import subprocess
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(binary, *extra_args, env=None, data_prefix="askgate-bench-"):
    """Starts `BINARY serve` on the embedded store; returns (process, "127.0.0.1:PORT") once
    /healthz answers (or raises after 30 s)."""
    port = free_port()
    data = tempfile.mkdtemp(prefix=data_prefix)
    server = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", data, *extra_args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = f"127.0.0.1:{port}"
    give_up = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://{base}/healthz", timeout=1).read()
            return server, base
        except OSError:
            if server.poll() is not None or time.monotonic() > give_up:
                server.kill()
                raise RuntimeError(f"{binary} did not answer /healthz on {base}")
            time.sleep(0.05)


def recv_type(ws, kind, refusals="raise"):
    """The next frame of type `kind`. A refusal (rejected, answer_rejected, error) raises, or
    with refusals="return" is returned instead."""
    while True:
        frame = json.loads(ws.recv(timeout=120))
        if frame.get("type") == kind:
            return frame
        if frame.get("type") in ("rejected", "answer_rejected", "error"):
            if refusals == "return":
                return frame
            raise RuntimeError(f"expected {kind}, got {frame}")
