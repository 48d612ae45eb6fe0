"""The test suite's time budget (`make test`, tools/stages.py).

CI stops a run at 90 minutes, and machines of one kind differ several-fold in speed from day to
day. So the suite is in two parts:

- the checks (lint, unit, sanity, docs) always run whole;
- the rest runs in priority order while the budget lasts, and says what it left out:
  - a pytest stage (integration, the journeys) gets a last start: no test starts after it; those
    left are skipped with one reason (SKIP_REASON), counted in the stage table. A journey that
    has started runs to its end, since its steps build on each other and its last one tears the
    pod down;
  - a stage that cannot stop part-way (a molecule scenario, test-next's parts) starts only when
    its reference time, scaled by how much slower than the reference this machine ran the
    stages so far, fits in what is left;
  - on a machine SLOW times slower than the reference or more, those start beside a journey
    only in a narrow form (integration with one worker), or not at all: with integration's two
    workers beside it, a journey's bootstrap took half as long again.

The budget counts from CLOUDTPU_SUITE_START (epoch seconds; .ci/run sets it before `make setup`),
else from the start of tools/stages.py. Stdlib only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

SUITE_START_ENV = "CLOUDTPU_SUITE_START"
START_BY_ENV = "CLOUDTPU_TESTS_START_BY"  # epoch seconds; no test starts after it
SKIP_REASON = "not run: the suite's time budget ran out before it (tools/time_budget.py)"
# Running a stage beside another slows both, and a slow machine's speed varies: an estimate is
# scaled by this much more (1.25 let a scenario start with 40 s to spare, in 13 minutes).
CONTENTION = 1.5
# From this many times slower than the reference on, beside a stage that runs to its end once
# started (a journey), only the checks and a bounded stage's narrow form start
# (tools/stages.py, Stage.keep_cpus and Stage.narrow).
SLOW = 3.0


def suite_start(environ: Mapping[str, str], now: float | None = None) -> float:
    """When the suite started: CLOUDTPU_SUITE_START when it is a time not in the future, else
    now."""
    now = time.time() if now is None else now
    try:
        start = float(environ.get(SUITE_START_ENV, ""))
    except ValueError:
        return now
    return start if 0 < start <= now else now


def start_by(environ: Mapping[str, str]) -> float | None:
    """The last start of this process's tests (CLOUDTPU_TESTS_START_BY), None when unset."""
    text = environ.get(START_BY_ENV, "")
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{START_BY_ENV} must be epoch seconds, got {text!r}") from None


def may_start(now: float, last_start: float | None, continues: bool = False) -> bool:
    """Whether a test may start now: before the last start, or as the next step of a journey
    that has started (``continues``)."""
    return last_start is None or continues or now < last_start


def slowness(done: list[tuple[float, float]]) -> float:
    """How many times slower than the reference this machine runs: the finished stages' wall
    seconds over their reference seconds, as (wall, reference) pairs; 1 while none is known."""
    wall = sum(w for w, ref in done if ref > 0)
    ref = sum(ref for _, ref in done if ref > 0)
    return max(wall / ref, 1.0) if ref else 1.0


def fits(now: float, end: float, reference: float, factor: float) -> bool:
    """Whether a stage of ``reference`` seconds on the reference machine, run ``factor`` times
    slower and beside another stage, ends before ``end``."""
    return now + reference * factor * CONTENTION <= end
