"""The suite's time budget in a pytest run (tools/time_budget.py): when CLOUDTPU_TESTS_START_BY
is set (tools/stages.py sets it for the integration and journey stages), no test starts after
it. A test left out is skipped, before its fixtures are made, with one reason that the stage
table counts. A journey (a module of `journey_step` tests) that has started goes on: its steps
build on each other, and its last one tears its pod down.

tests/conftest.py takes the hook from here; `pytest -p tests.time_budget_plugin` loads it alone.
"""

from __future__ import annotations

import os
import time

import pytest

from tools import time_budget

_LAST_START = time_budget.start_by(os.environ)
_STARTED = pytest.StashKey[set[str]]()  # journeys (test modules) that have started a step


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _LAST_START is None:
        return
    journey = item.nodeid.split("::")[0] if item.get_closest_marker("journey_step") else ""
    started = item.session.stash.setdefault(_STARTED, set())
    if not time_budget.may_start(time.time(), _LAST_START, continues=journey in started):
        pytest.skip(time_budget.SKIP_REASON)
    if journey:
        started.add(journey)
