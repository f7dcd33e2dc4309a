"""Resume by callback against a real LangGraph Agent Server: `langgraph dev` (PyPI
`langgraph-cli[inmem]`) started by the test serves a graph paused on a deepagents `ask_user`
interrupt; the questions are posted with `resume_thread`, a headless tab answers, and the
gateway itself starts the run that resumes the thread, with nothing of the agent's waiting."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from gateway import Gateway
from tab import Tab

from askgate.langgraph import ServerThread, post_interrupts

pytestmark = pytest.mark.anyio

GRAPH = '''
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    release: str
    resume: Any


def ask(state: State) -> State:
    questions = [
        {"question": "Which channel gets " + state["release"] + "?", "type": "multiple_choice",
         "choices": [{"value": "stable"}, {"value": "beta"}]},
    ]
    return {"resume": interrupt({"type": "ask_user", "questions": questions, "tool_call_id": "call_1"})}


graph = StateGraph(State).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END).compile()
'''

STARTS_WITHIN_S = 90.0
"""How long `langgraph dev` may take to serve (it imports the API server and the graph)."""
RESUMED_WITHIN_S = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """`langgraph dev` on a free port, serving GRAPH as assistant `agent`; its base URL."""
    (tmp_path / "graph.py").write_text(GRAPH, encoding="utf-8")
    (tmp_path / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"agent": "./graph.py:graph"}}), encoding="utf-8"
    )
    port = free_port()
    cli = Path(sys.executable).with_name("langgraph")
    log = open(tmp_path / "langgraph.log", "wb")  # noqa: SIM115 (closed below, after the process)
    process = subprocess.Popen(
        [str(cli), "dev", "--port", str(port), "--no-browser", "--no-reload", "--config", "langgraph.json"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTS_WITHIN_S
        while True:
            if process.poll() is not None:
                raise AssertionError(f"langgraph dev stopped: {(tmp_path / 'langgraph.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"langgraph dev did not serve within {STARTS_WITHIN_S} s")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


class Paused:
    """An interrupt as the server reports it (`id`, `value`), as `post_interrupts` reads one."""

    def __init__(self, item: dict[str, Any]) -> None:
        self.id: str = item["id"]
        self.value: Any = item["value"]


async def test_the_gateway_resumes_the_agent_servers_thread_with_the_answer(
    server: str, tmp_path: Path, session: str
) -> None:
    gateway = Gateway(tmp_path / "gateway", extra=["--notify-allow-private"]).start()
    try:
        async with httpx.AsyncClient(base_url=server, timeout=30) as graphs:
            thread = (await graphs.post("/threads", json={})).json()["thread_id"]
            paused = (
                await graphs.post(f"/threads/{thread}/runs/wait", json={"assistant_id": "agent", "input": {"release": "2.0"}})
            ).json()
            interrupts = [Paused(item) for item in paused["__interrupt__"]]
            assert len(interrupts) == 1, paused

            posted = await post_interrupts(
                gateway.url,
                session,
                interrupts,
                title="Release 2.0",
                resume_thread=ServerThread(url=server, thread_id=thread, assistant_id="agent"),
            )
            tab = await Tab.connect(posted[0].viewer_url)
            try:
                shown = await tab.next_request()
                assert shown["id"] == interrupts[0].id
                assert shown["questions"][0]["question"] == "Which channel gets 2.0?"
                resolved = await tab.answer(shown["id"], {"answers": ["beta"]})
                assert resolved["outcome"] == "answered"
            finally:
                await tab.close()

            # Nothing here resumes it: the gateway's POST starts the run. The server tells of a
            # new run only when asked, so it is asked until the run is there (bounded); its end
            # is then awaited through the server's own join.
            deadline = time.monotonic() + RESUMED_WITHIN_S
            runs: list[dict[str, Any]] = (await graphs.get(f"/threads/{thread}/runs")).json()
            while len(runs) < 2:
                assert time.monotonic() < deadline, f"the gateway started no run on the thread: {runs}"
                await anyio.sleep(0.05)
                runs = (await graphs.get(f"/threads/{thread}/runs")).json()
            resumed = runs[0]
            await graphs.get(f"/threads/{thread}/runs/{resumed['run_id']}/join")
            state = (await graphs.get(f"/threads/{thread}")).json()
            assert state["status"] == "idle", state
            assert state["values"]["resume"] == {"answers": ["beta"]}, state
    finally:
        gateway.stop()
