#!/usr/bin/env python3
"""One line of key figures per askgate-bench JSON report (a single run, or a suite's
results.json with every run), so raw runs need not be committed: bench/history/ keeps these.

    python3 bench/summarize.py REPORT.json...
"""
import json
import sys
from pathlib import Path


def line(name: str, run: dict) -> str:
    usage = run.get("usage", {}).get("server", {})
    cpu = f"server CPU {usage['cpu_pct']:.0f}%" if "cpu_pct" in usage else ""
    peak = f"RSS peak {usage['rss_peak_mib']:.0f} MiB" if "rss_peak_mib" in usage else ""
    load = run.get("conditions", {})
    load = f"load {load.get('load_start', 0):.2f}->{load.get('load_end', 0):.2f}"
    scenario = run.get("scenario")
    if scenario == "idle":
        figures = [
            f"{run['tabs']:,} idle tabs",
            f"{run['bytes_per_tab']:,.0f} B a tab",
            f"{run['connects_per_s']:,.0f} connects/s",
            f"dropped {run.get('dropped_while_idle', 0)}",
        ]
    elif scenario == "fanout":
        args = run["args"]
        to_tabs = run.get("ask_to_all_tabs", {})
        to_outcome = run.get("answer_to_outcome", {})
        kicks = sum(run.get("setup_kicks", {}).values())
        figures = [
            f"{args['sessions']}x{args['tabs']} fan-out",
            f"{run['resolved_per_s']:,.0f} resolved/s of {run['asks_per_s']:,.0f}",
            f"ask->all tabs p50 {to_tabs.get('p50_ms', 0):.2f} p99 {to_tabs.get('p99_ms', 0):.2f} ms",
            f"answer->outcome p99 {to_outcome.get('p99_ms', 0):.2f} ms",
            f"clean {run.get('clean')}",
            f"tabs closed while joining {kicks}",
        ]
    else:
        figures = [
            f"{k} {v}" for k, v in run.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        ][:6]
    return f"{name}: " + ", ".join(f for f in figures + [cpu, peak, load] if f)


def main() -> None:
    for path in sys.argv[1:]:
        report = json.loads(Path(path).read_text())
        if "runs" in report:
            print(f"{Path(path).name}: suite at {report.get('askgate_version')}")
            for scenario, servers in report["runs"].items():
                for server, runs in servers.items():
                    for i, run in enumerate(runs):
                        print("  " + line(f"{scenario} {server} #{i + 1}", run))
        else:
            print(line(Path(path).stem, report))


if __name__ == "__main__":
    main()
