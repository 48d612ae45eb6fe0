"""The machine's CPU load, for tools/stages.py: readings of /proc/stat and of Docker's cgroup,
the idle share since a moment (whether a spare slot may open), and the summary's CPU lines.

Stdlib only; Linux (elsewhere the readings are None and the lines empty).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

DOCKER_CPUACCT = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")
# Seconds of readings a spare slot's decision looks back on (Load.idle).
SETTLE = 40.0


def cpu_times() -> tuple[float, float] | None:
    """(busy, all) CPU seconds of the whole machine since boot, from /proc/stat (Linux)."""
    try:
        fields = Path("/proc/stat").read_text(encoding="ascii").splitlines()[0].split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields[:8]]
    hertz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]  # idle and iowait
    return (sum(ticks) - idle) / hertz, sum(ticks) / hertz


class Load:
    """The machine's recent CPU use, read every few seconds: may a spare slot open?"""

    def __init__(
        self,
        read: Callable[[], tuple[float, float] | None] = lambda: cpu_times(),
        settle: float = SETTLE,
    ):
        self.read = read
        self.settle = settle
        self.readings: list[tuple[float, tuple[float, float]]] = []
        self.last_start = float("-inf")

    def started(self, now: float) -> None:
        self.last_start = now

    def sample(self, now: float) -> None:
        if self.readings and now - self.readings[-1][0] < min(5.0, self.settle / 4):
            return
        reading = self.read()
        if reading is not None:
            self.readings = [r for r in self.readings if now - r[0] <= 2 * self.settle + 5]
            self.readings.append((now, reading))

    def idle(self, now: float) -> float:
        """The CPUs' idle share over the last `settle` seconds or more; 0 while unknown, or when
        a stage started within them."""
        if now - self.last_start < self.settle:
            return 0.0
        old = [reading for when, reading in self.readings if now - when >= self.settle]
        if not old or not self.readings:
            return 0.0
        (busy0, all0), (busy1, all1) = old[-1], self.readings[-1][1]
        return 1.0 - (busy1 - busy0) / (all1 - all0) if all1 > all0 else 0.0


def cpu_line(before: tuple[float, float] | None, after: tuple[float, float] | None) -> str:
    """How busy the machine's CPUs were between two cpu_times() readings."""
    if before is None or after is None or after[1] <= before[1]:
        return ""
    busy, every = after[0] - before[0], after[1] - before[1]
    return (
        f"machine CPU: {clock(busy)} busy of {clock(every)} "
        f"({100 * busy / every:.0f}% of {os.cpu_count()} CPUs)"
    )


def docker_cpu() -> float | None:
    """CPU seconds used by every Docker container since the daemon started (cgroup v1's
    cpuacct of the docker group keeps the time of removed containers too); None elsewhere."""
    try:
        return int(DOCKER_CPUACCT.read_text(encoding="ascii")) / 1e9
    except (OSError, ValueError):
        return None


def timeline(samples: list[tuple[float, float]]) -> str:
    """The machine's busy share per interval between cpu_times() samples, as percentages."""
    shares = []
    for (busy0, all0), (busy1, all1) in itertools.pairwise(samples):
        if all1 > all0:
            shares.append(f"{100 * (busy1 - busy0) / (all1 - all0):.0f}")
    return " ".join(shares)


def clock(seconds: float) -> str:
    """Seconds as m:ss."""
    whole = max(0, round(seconds))
    return f"{whole // 60}:{whole % 60:02d}"
