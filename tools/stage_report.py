"""The stage table of tools/stages.py: each stage's result, the slowest tests and the tests the
time budget left out, read from the stages' logs. Stdlib only."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tools import cpu_report, time_budget
from tools.machine_load import clock as _clock
from tools.machine_load import cpu_line, cpu_times, docker_cpu, timeline

if TYPE_CHECKING:
    from tools.stages import Stage

_DURATION = re.compile(r"^\s*(\d+\.\d+)s (call|setup|teardown)\s+(\S.*)$")


@dataclass
class Result:
    stage: Stage
    started: float = 0.0
    ended: float = 0.0
    code: int | None = None  # None: not run
    why: str = ""
    cpu: float = 0.0  # CPU seconds of the stage's own processes (not of Docker containers)
    log: Path = field(default_factory=Path)
    budget: str = ""  # why the time budget left the stage out (not a failure)
    left: int = 0  # tests the time budget left out of a pytest stage that ran

    @property
    def failed(self) -> bool:
        return self.code not in (None, 0) or (self.code is None and not self.budget)

    @property
    def seconds(self) -> float:
        return self.ended - self.started


def slowest(logs: list[tuple[str, Path]], count: int = 15) -> list[tuple[float, str, str]]:
    """The slowest test phases found in pytest ``--durations`` lines: (seconds, stage, test)."""
    found: list[tuple[float, str, str]] = []
    for stage, log in logs:
        if not log.is_file():
            continue
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _DURATION.match(line)
            if match:
                found.append((float(match[1]), stage, f"{match[3]} ({match[2]})"))
    return sorted(found, reverse=True)[:count]


def table(results: list[Result], origin: float, total: float) -> str:
    """The stage table: start offset, wall time and result of every stage, in start order."""
    lines = [
        f"{'stage':<24} {'start':>7} {'wall':>8} {'cpu':>8}  result",
        f"{'-' * 24} {'-' * 7} {'-' * 8} {'-' * 8}  {'-' * 6}",
    ]
    ran = sorted((r for r in results if r.code is not None), key=lambda r: r.started)
    for r in ran:
        state = "passed" if r.code == 0 else f"FAILED ({r.code})"
        if r.left:
            state += f"; {r.left} tests not run (time budget)"
        start, wall, cpu = _clock(r.started - origin), _clock(r.seconds), _clock(r.cpu)
        lines.append(f"{r.stage.name:<24} {start:>7} {wall:>8} {cpu:>8}  {state}")
    for r in results:
        if r.code is None:
            why = f"time budget: {r.budget}" if r.budget else r.why
            lines.append(f"{r.stage.name:<24} {'-':>7} {'-':>8} {'-':>8}  not run: {why}")
    busy, cpu = _clock(sum(r.seconds for r in ran)), _clock(sum(r.cpu for r in ran))
    lines.append(f"{'total (wall)':<24} {'':>7} {_clock(total):>8} {cpu:>8}  stage time {busy}")
    return "\n".join(lines)


_LEFT = re.compile(r"^SKIPPED \[(\d+)\] .*" + re.escape(time_budget.SKIP_REASON), re.M)


def left_out(log: Path) -> int:
    """The tests of a pytest stage's log that the time budget skipped (pytest's -ra lines)."""
    if not log.is_file():
        return 0
    text = log.read_text(encoding="utf-8", errors="replace")
    return sum(int(n) for n in _LEFT.findall(text))


def verdict_lines(ordered: list[Result]) -> list[str]:
    """The suite's last lines: what the time budget left out (not failures), what failed."""
    lines = []
    cut = [r for r in ordered if r.budget or r.left]
    if cut:
        lines.append(
            "stages: left out by the time budget (not failures; STAGE_BUDGET=0 runs all): "
            + ", ".join(r.stage.name + (f" ({r.left} tests)" if r.left else "") for r in cut)
        )
    failed = [r.stage.name for r in ordered if r.failed]
    if failed:
        lines.append(f"stages: FAILED or not run: {', '.join(failed)}")
    return lines


def summary(
    ordered: list[Result],
    origin: float,
    total: float,
    log_dir: Path,
    before: tuple[tuple[float, float] | None, float | None],
    samples: list[tuple[float, float]],
    sample: float,
) -> str:
    """The suite's summary: the stage table, the machine's CPU (``before``: the CPU times and
    the Docker CPU seconds at the start; ``samples``: CPU times every ``sample`` seconds), the
    slowest tests and the test files that used the most CPU."""
    cpu_before, docker_before = before
    lines = ["", "================ stages ================", table(ordered, origin, total)]
    cpu = cpu_line(cpu_before, cpu_times())
    if cpu:
        docker_after = docker_cpu()
        if docker_before is not None and docker_after is not None:
            cpu += f"; Docker containers {_clock(docker_after - docker_before)}"
        lines.append(cpu)
    if len(samples) > 2:
        lines.append(f"machine CPU busy % per {sample:.0f} s: {timeline(samples)}")
    tests = slowest([(r.stage.name, r.log) for r in ordered if r.code is not None])
    if tests:
        lines.append("\nslowest tests (pytest --durations of every stage):")
        lines += [f"{sec:8.2f}s  {stage:<12} {name}" for sec, stage, name in tests]
    files = cpu_report.summary([(r.stage.name, log_dir / "cpu" / r.stage.name) for r in ordered])
    if files:
        lines.append("\ntest files by CPU (the tests' own processes; containers not counted):")
        lines += files
    return "\n".join(lines)
