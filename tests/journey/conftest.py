"""Journey steps are ordered tests sharing one pod: once a step fails, the later ones of the same
journey (test module) are skipped with the failed step named (their precondition, the state that
step should have made, is missing).

JOURNEY_KEEP_GOING=1 runs the later steps anyway, to see every failure of a run at once; they
still fail on their own assertions.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

_FAILED_KEY = pytest.StashKey[dict[str, str]]()  # journey module -> its first failed step


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "journey_step: an ordered step of the README journey (later steps skip)"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("journey_step") and report.failed:
        item.session.stash.setdefault(_FAILED_KEY, {}).setdefault(
            item.nodeid.split("::")[0], item.name
        )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if not item.get_closest_marker("journey_step"):
        return
    failed = item.session.stash.get(_FAILED_KEY, {}).get(item.nodeid.split("::")[0], "")
    if failed and os.environ.get("JOURNEY_KEEP_GOING") != "1":
        pytest.skip(f"an earlier journey step failed ({failed}); this one needs what it makes")
