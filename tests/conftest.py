"""Every test run: CPU per test file for the stage table when CLOUDTPU_CPU_REPORT_DIR is set
(tools/cpu_report.py; tools/stages.py sets it for each stage), and the suite's time budget when
CLOUDTPU_TESTS_START_BY is set (tests/time_budget_plugin.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import forked_cli
from tests.time_budget_plugin import pytest_runtest_setup as pytest_runtest_setup
from tools import cpu_report

_RECORDER = cpu_report.from_environment()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if _RECORDER is None:
        yield
        return
    with _RECORDER.measure(item.nodeid):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A file's last test stops the file's forked-cli servers (tests/forked_cli.py) after its
    fixtures, so their CPU counts for that file and nothing of theirs outlives it."""
    yield
    if nextitem is None or nextitem.path != item.path:
        forked_cli.close_all()


def pytest_sessionfinish(session: pytest.Session) -> None:
    forked_cli.close_all()
    if _RECORDER is not None:
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        _RECORDER.write(worker)
