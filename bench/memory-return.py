#!/usr/bin/env python3
"""Issue 39 item 10: whether a gateway gives memory back after its open requests end.

Starts BINARY (`askgate`) on the embedded store in a temporary directory, samples its RSS,
fills --sessions sessions with open approval requests up to about --fill-mib MiB each (as
tabs receive them; each session has one tab reading everything), then has each tab answer
every request and the agent ack every outcome, and samples RSS (and /proc/PID/smaps_rollup)
every half second until it settles or --settle-s seconds pass. Prints the figures and whether
RSS came back within 20 % of its start plus 20 MB.

    bench/memory-return.py target/release/askgate --sessions 6
    bench/memory-return.py target/release/askgate --sessions 6 --trim-with-gdb
      (at the end, calls malloc_trim(0) in the gateway under gdb: what RSS falls by then is
      memory the allocator held free, not memory the gateway still used)
    bench/memory-return.py target/release/askgate --sessions 6 --malloc-info /tmp/mi.xml
      (at the end, glibc's own account of each arena: in use, free, and the free chunks' sizes)
"""

import argparse
import json
import os
import random
import subprocess
import threading
import time

from websockets.sync.client import connect

from gateway_process import recv_type, start_gateway


def rollup(pid):
    """RSS and anonymous memory, in MB (10^6 bytes), from smaps_rollup."""
    figures = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                figures[parts[0].rstrip(":")] = int(parts[1]) * 1024 / 1e6
    return figures["Rss"], figures.get("Anonymous", 0.0)


def request_calls(rng, target_bytes):
    """One approval call whose args are many small strings: a tree of small allocations."""
    words = []
    size = 0
    while size < target_bytes:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(8, 40)))
        words.append(word)
        size += len(word) + 3
    return [{"name": "import", "args": {"rows": words}, "decisions": ["approve", "reject"]}]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--fill-mib", type=float, default=15.5)
    parser.add_argument("--request-kib", type=float, default=64)
    parser.add_argument("--settle-s", type=float, default=20)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("SEED", "39")))
    parser.add_argument("--trim-with-gdb", action="store_true")
    parser.add_argument("--malloc-info", metavar="PATH",
                        help="at the end, write glibc's malloc_info XML (under gdb) to PATH")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the gateway")
    args = parser.parse_args()
    print(f"seed {args.seed}")
    rng = random.Random(args.seed)

    env = dict(os.environ)
    for pair in args.env:
        name, value = pair.split("=", 1)
        env[name] = value
    server, base = start_gateway(args.binary, env=env, data_prefix="askgate-mem-")
    try:
        time.sleep(1)
        start_rss, start_anon = rollup(server.pid)
        print(f"start: RSS {start_rss:.1f} MB (anonymous {start_anon:.1f})")

        agent = connect(f"ws://{base}/v1/agent", max_size=None)
        per_session = int(args.fill_mib * 1024 * 1024 / (args.request_kib * 1024))
        tabs = {}
        received = {}
        asked = {}
        for s in range(args.sessions):
            session = f"mem{s}"
            agent.send(json.dumps({"type": "open", "session": session}))
            opened = recv_type(agent, "opened")
            key = opened["viewer_url"].split("#k=")[1]
            tab = connect(f"ws://{base}/v1/sessions/{session}/live", max_size=None)
            tab.send(json.dumps({"type": "hello", "key": key}))
            recv_type(tab, "snapshot")
            tabs[session] = tab
            received[session] = 0

        resolved = {session: 0 for session in tabs}

        def read_tab(session):
            # Reads everything the tab is sent, so that it never counts as too slow.
            tab = tabs[session]
            try:
                while True:
                    frame = json.loads(tab.recv())
                    if frame["type"] == "request":
                        received[session] += 1
                    elif frame["type"] == "resolved":
                        resolved[session] += 1
            except Exception:
                pass

        readers = [threading.Thread(target=read_tab, args=(s,), daemon=True) for s in tabs]
        for r in readers:
            r.start()
        filled_at = time.monotonic()
        for session in tabs:
            asked[session] = []
            for i in range(per_session):
                calls = request_calls(rng, int(args.request_kib * 1024 * rng.uniform(0.8, 1.2)))
                rid = f"r{i}"
                agent.send(json.dumps({"type": "ask", "session": session, "id": rid,
                                       "dialect": "approval", "calls": calls}))
                reply = json.loads(agent.recv(timeout=120))
                if reply["type"] != "accepted":
                    print(f"{session} {rid}: {reply['type']} {reply.get('errors')}")
                    break
                asked[session].append(rid)
        while any(received[s] < len(asked[s]) for s in tabs):
            time.sleep(0.05)
        full_rss, full_anon = rollup(server.pid)
        total = sum(len(ids) for ids in asked.values())
        print(f"filled: {total} requests in {args.sessions} sessions "
              f"({per_session} x ~{args.request_kib:.0f} KiB each) in "
              f"{time.monotonic() - filled_at:.1f} s: RSS {full_rss:.1f} MB "
              f"(anonymous {full_anon:.1f})")

        def answer_all(session):
            for rid in asked[session]:
                tabs[session].send(json.dumps({"type": "answer", "id": rid,
                                               "response": {"decisions": [{"type": "approve"}]}}))
                # The tab's frame budget is 20 a second, bursts of 40: stay under it.
                time.sleep(0.051)

        answerers = [threading.Thread(target=answer_all, args=(s,)) for s in tabs]
        for a in answerers:
            a.start()
        outcomes = 0
        while outcomes < total:
            frame = json.loads(agent.recv(timeout=120))
            if frame["type"] == "outcome":
                agent.send(json.dumps({"type": "ack", "session": frame["session"],
                                       "id": frame["id"]}))
                outcomes += 1
        for a in answerers:
            a.join()
        ended = time.monotonic()
        print(f"all {outcomes} answered and acked")
        limit = start_rss * 1.2 + 20
        samples = []
        rss = None
        while time.monotonic() - ended < args.settle_s:
            rss, anon = rollup(server.pid)
            samples.append((time.monotonic() - ended, rss, anon))
            if len(samples) >= 4 and max(s[1] for s in samples[-4:]) - min(s[1] for s in samples[-4:]) < 0.5 and rss <= limit:
                break
            time.sleep(0.5)
        for at, rss, anon in samples[:: max(1, len(samples) // 10)] + samples[-1:]:
            print(f"  +{at:5.1f} s: RSS {rss:.1f} MB (anonymous {anon:.1f})")
        verdict = "met" if rss <= limit else "NOT met"
        print(f"end: RSS {rss:.1f} MB; target <= {limit:.1f} MB (start x 1.2 + 20): {verdict}")
        if args.malloc_info:
            # What glibc holds, arena by arena: in use against free (and how it is split).
            subprocess.run(["gdb", "-p", str(server.pid), "-batch",
                            "-ex", f'set $out = (void *) fopen("{args.malloc_info}", "w")',
                            "-ex", "call (int) malloc_info(0, $out)",
                            "-ex", "call (int) fclose($out)"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            print(f"malloc_info written to {args.malloc_info}")
        if args.trim_with_gdb:
            subprocess.run(["gdb", "-p", str(server.pid), "-batch", "-ex",
                            "call (int) malloc_trim(0)"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            rss, anon = rollup(server.pid)
            print(f"after malloc_trim(0) under gdb: RSS {rss:.1f} MB (anonymous {anon:.1f})")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
