from __future__ import annotations

import functools
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from gateway import Gateway  # noqa: E402
from tab import RunExample, Tab, Tabs, answer_example  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One `askgate serve --store memory` for the whole run; tests use their own sessions."""
    gw = Gateway(tmp_path_factory.mktemp("gateway")).start()
    try:
        yield gw
    finally:
        gw.stop()


@pytest.fixture
def session() -> str:
    return "t-" + uuid.uuid4().hex[:16]


@pytest.fixture
async def tabs() -> AsyncIterator[Tabs]:
    """Open headless tabs on a viewer link; all are closed after the test."""
    opened: list[Tab] = []

    async def open_tab(viewer_url: str) -> Tab:
        tab = await Tab.connect(viewer_url)
        opened.append(tab)
        return tab

    yield open_tab
    for tab in opened:
        await tab.close()


@pytest.fixture
def run_example(tabs: Tabs) -> RunExample:
    """`answer_example` with this test's tabs: `await run_example(code, timeout)`."""
    return functools.partial(answer_example, tabs)


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A skipped test here means something the tests need is missing: that is a failure.
    if _skipped and exitstatus == 0:
        print(f"\nFAILED: {len(_skipped)} test(s) were skipped: {', '.join(_skipped)}")
        session.exitstatus = 1
