"""Every test run: CPU per test file for the stage table when CLOUDTPU_CPU_REPORT_DIR is set
(tools/cpu_report.py; tools/stages.py sets it for each stage)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tools import cpu_report

_RECORDER = cpu_report.from_environment()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if _RECORDER is None:
        yield
        return
    with _RECORDER.measure(item.nodeid):
        yield


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _RECORDER is not None:
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        _RECORDER.write(worker)
