#!/usr/bin/env python3
"""Issue 39 item 9: the CPU one tab frame costs when it edits a call against a large `enum`,
and how long /healthz stalls meanwhile.

Starts BINARY (`askgate`) on the embedded store in a temporary directory, asks one approval
whose `args_schema` has an `enum` of --entries integers, then sends one edit of about
--frame-kb KB whose every value is outside the enum (the worst case: nothing matches), and
reports the gateway's CPU seconds for that frame (utime + stime from /proc/PID/stat, before
and after the reply) and the slowest /healthz answered meanwhile. With --rate it then sends
such frames at that many a second for --seconds and reports the gateway's share of a core.

    bench/large-enum.py target/release/askgate --entries 100000
    bench/large-enum.py target/release/askgate --entries 10000 --rate 19 --seconds 10
"""

import argparse
import json
import os
import threading
import time
import urllib.request

from websockets.sync.client import connect

from gateway_process import recv_type, start_gateway


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--frame-kb", type=int, default=63)
    parser.add_argument("--rate", type=float, default=0)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()

    server, base = start_gateway(args.binary, "--max-agent-frame-bytes", str(4 * 1024 * 1024),
                                 data_prefix="askgate-enum-")
    try:
        agent = connect(f"ws://{base}/v1/agent", max_size=None)
        schema = {"type": "object",
                  "properties": {"x": {"type": "array", "items": {"enum": list(range(args.entries))}}}}
        agent.send(json.dumps({"type": "ask", "session": "s", "id": "r1", "dialect": "approval",
                               "calls": [{"name": "pick", "args": {"x": []}, "args_schema": schema,
                                          "decisions": ["approve", "edit"]}]}))
        reply = recv_type(agent, "accepted", refusals="return")
        if reply["type"] != "accepted":
            print(f"ask with a {args.entries}-entry enum: {reply['type']}: {reply['errors']}")
            return
        key = reply["viewer_url"].split("#k=")[1]
        tab = connect(f"ws://{base}/v1/sessions/s/live", max_size=None)
        tab.send(json.dumps({"type": "hello", "key": key}))
        recv_type(tab, "snapshot")

        values, size = [], 0
        n = args.entries + 1_000_000
        while size < args.frame_kb * 1000 - 120:
            values.append(n)
            size += len(str(n)) + 1
            n += 1
        edit = json.dumps({"type": "answer", "id": "r1",
                           "response": {"decisions": [{"type": "edit", "args": {"x": values}}]}},
                          separators=(",", ":"))

        slowest = [0.0]
        stop = threading.Event()

        def poll_health():
            while not stop.is_set():
                start = time.monotonic()
                urllib.request.urlopen(f"http://{base}/healthz", timeout=60).read()
                slowest[0] = max(slowest[0], time.monotonic() - start)
                time.sleep(0.01)

        poller = threading.Thread(target=poll_health)
        poller.start()
        time.sleep(0.3)
        before = cpu_seconds(server.pid)
        started = time.monotonic()
        tab.send(edit)
        reply = recv_type(tab, "answer_rejected", refusals="return")
        wall = time.monotonic() - started
        used = cpu_seconds(server.pid) - before
        time.sleep(0.3)
        stop.set()
        poller.join()
        errors = reply.get("errors", [])
        print(f"enum of {args.entries} entries, one edit frame of {len(edit)} bytes "
              f"({len(values)} values): reply {reply['type']} with {len(errors)} errors "
              f"(first: {errors[0]['message'][:60] if errors else None!r})")
        print(f"  gateway CPU for the frame: {used:.2f} s; reply after {wall:.2f} s; "
              f"slowest /healthz meanwhile: {slowest[0] * 1000:.0f} ms")

        if args.rate:
            interval = 1 / args.rate
            before = cpu_seconds(server.pid)
            started = time.monotonic()
            sent = 0
            while time.monotonic() - started < args.seconds:
                tab.send(edit)
                recv_type(tab, "answer_rejected", refusals="return")
                sent += 1
                pause = started + sent * interval - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            elapsed = time.monotonic() - started
            used = cpu_seconds(server.pid) - before
            print(f"  {sent} frames in {elapsed:.1f} s ({sent / elapsed:.1f} a second): "
                  f"gateway CPU {used / elapsed * 100:.0f} % of a core")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
