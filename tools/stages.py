#!/usr/bin/env python3
"""Run the test suite's stages (make targets), some side by side, and say where the time went.

`make test` runs this. Each stage is one make target; a stage starts once the stages it needs
have passed, and at most --jobs stages run at once (most of a stage's time is waiting on SSH,
Docker or the emulator, not CPU). A stage's output goes to .cache/stages/<stage>.log and is
printed whole when the stage ends, so the lines of two stages never interleave. A stage that
runs long prints a line every few minutes, so a slow stage is never silent.

At the end: a table of every stage (when it started, how long it took, its result) and the
slowest tests, read from the pytest ``--durations`` lines of every stage's log. The same table is
written to .cache/stages/summary.txt, with the test files that used the most CPU
(tools/cpu_report.py: each pytest stage records its own into .cache/stages/cpu/<stage>/).

Usage: python3 -m tools.stages [--jobs N] [--only STAGE ...]   (stdlib only; Python 3.9+)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tools import cpu_report
from tools.machine_load import Load, cpu_line, cpu_times, docker_cpu, timeline
from tools.machine_load import clock as _clock

REPO = Path(__file__).resolve().parents[1]
LOG_DIR = REPO / ".cache" / "stages"
HEARTBEAT = 300.0  # seconds between "still running" lines
SAMPLE = 60.0  # seconds between the machine CPU samples of the summary's timeline
# A spare slot opens only when the CPUs were this idle over the last SETTLE seconds (Load), and
# no stage started within them (so the load of the last start is counted).
SPARE_IDLE = 0.35


@dataclass(frozen=True)
class Stage:
    name: str
    target: str
    needs: tuple[str, ...] = ()
    # Mostly waits (on containers booting, apt's retries, molecule's steps): while one runs and
    # the machine's CPUs are idle enough, another stage may take a spare slot past --jobs
    # (see --spare and spare_choice).
    light: bool = False


# The suite, in order of priority: when a slot frees, the first ready stage in this list starts.
# Longest first (their wall times in a fresh-clone run, CONTRIBUTING.md, "The test suite"), so that
# the short stages fill the end and no long stage runs alone at the end: integration and the
# journeys side by side, then the molecule scenarios and the newest ansible's parts, then the
# short checks. Two slots by default: on two CPUs a third heavy stage slowed every other one more
# than it gained (BENCHMARKS.md, "The test suite"). Beside a light stage, whose waits leave the
# CPUs idle, one more stage may take a spare slot (spare_choice): the short checks then fill the
# time the molecule scenarios spend waiting, instead of queueing behind them.
_MOLECULE = ("setup", "image")
SUITE: tuple[Stage, ...] = (
    Stage("setup", "setup"),
    # Built once per recipe hash: on a fresh machine mostly downloads (debootstrap, apt).
    Stage("image", "image", light=True),
    Stage("host-tools", "host-tools", light=True),
    Stage("integration", "integration", ("setup", "image", "host-tools")),
    Stage("journey", "journey", ("setup", "image", "host-tools")),
    Stage("molecule-default", "molecule-default", _MOLECULE, light=True),
    Stage("molecule-framework", "molecule-framework", _MOLECULE, light=True),
    Stage("molecule-pod", "molecule-pod", _MOLECULE, light=True),
    Stage("next-venv", "next-venv"),
    Stage("molecule-nfs", "molecule-nfs", _MOLECULE, light=True),
    Stage("lint", "lint", ("setup",)),
    Stage("test-next-pytest", "test-next-pytest", ("next-venv", "image", "host-tools")),
    Stage("test-next-lint", "test-next-lint", ("next-venv",)),
    Stage("sanity", "sanity", ("setup",)),
    # after sanity: both keep ansible-test's environments in .cache/ansible-test-home
    Stage("test-next-sanity", "test-next-sanity", ("next-venv", "sanity")),
    Stage("molecule-remote_shell", "molecule-remote_shell", _MOLECULE, light=True),
    Stage("unit", "unit", ("setup",)),
    Stage("docs", "docs", ("setup",)),
)

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
        start, wall, cpu = _clock(r.started - origin), _clock(r.seconds), _clock(r.cpu)
        lines.append(f"{r.stage.name:<24} {start:>7} {wall:>8} {cpu:>8}  {state}")
    for r in results:
        if r.code is None:
            lines.append(f"{r.stage.name:<24} {'-':>7} {'-':>8} {'-':>8}  not run: {r.why}")
    busy, cpu = _clock(sum(r.seconds for r in ran)), _clock(sum(r.cpu for r in ran))
    lines.append(f"{'total (wall)':<24} {'':>7} {_clock(total):>8} {cpu:>8}  stage time {busy}")
    return "\n".join(lines)


def choose(
    pending: list[Stage], names: set[str], passed: set[str], running: set[str], slots: int
) -> list[Stage]:
    """The stages to start now, in priority order, in ``slots`` free slots. A stage whose needs
    have passed starts; one whose needs have passed, are running or start now keeps a slot, so
    that no later stage takes it while it waits a moment (a need not in ``names`` counts as
    passed: ``--only`` left it out)."""
    chosen: list[Stage] = []
    for stage in pending:
        if slots <= 0:
            break
        if all(n not in names or n in passed for n in stage.needs):
            chosen.append(stage)
            slots -= 1
        elif all(
            n not in names or n in passed or n in running or n in {c.name for c in chosen}
            for n in stage.needs
        ):
            slots -= 1
    return chosen


def spare_choice(ready: list[Stage], running: list[Stage]) -> Stage | None:
    """The stage that may take a spare slot: only beside a light stage (whose waiting is what
    leaves the CPUs idle), and a stage that computes before one that mostly waits too, each in
    priority order."""
    if not any(stage.light for stage in running):
        return None
    return next((s for s in ready if not s.light), None) or next(iter(ready), None)


def make_command(stage: Stage) -> list[str]:
    return ["make", "--no-print-directory", stage.target]


def run(
    stages: tuple[Stage, ...],
    jobs: int,
    log_dir: Path = LOG_DIR,
    command: Callable[[Stage], list[str]] = make_command,
    spare: int = 0,
    load: Load | None = None,
) -> int:
    """Run ``stages``, at most ``jobs`` at once, and up to ``spare`` more light ones while the
    CPUs are idle enough; 0 when every one ran and passed."""
    load = load or Load()
    log_dir.mkdir(parents=True, exist_ok=True)
    names = {s.name for s in stages}
    results = {s.name: Result(s, log=log_dir / f"{s.name}.log") for s in stages}
    pending = list(stages)
    running: dict[str, subprocess.Popen[bytes]] = {}
    origin = time.monotonic()
    last_beat = origin
    cpu_before, docker_before = cpu_times(), docker_cpu()
    samples = [cpu_before] if cpu_before else []

    def say(text: str) -> None:
        print(text, flush=True)

    while pending or running:
        load.sample(time.monotonic())
        # Stages whose needs failed (or were not run) are not run either.
        for stage in list(pending):
            bad = [n for n in stage.needs if n in names and results[n].code not in (None, 0)]
            blocked = [n for n in stage.needs if n in names and results[n].why]
            if bad or blocked:
                pending.remove(stage)
                results[stage.name].why = f"needs {', '.join(bad or blocked)}"
                say(f"stages: {stage.name} not run: it needs {', '.join(bad or blocked)}")
        passed = {n for n in names if results[n].code == 0}
        start_now = choose(pending, names, passed, set(running), jobs - len(running))
        # A spare slot: past --jobs, or in a slot kept for a stage that waits on a light one.
        if not start_now and len(running) < jobs + spare:
            ready = [s for s in pending if all(n not in names or n in passed for n in s.needs)]
            extra = spare_choice(ready, [results[n].stage for n in running])
            if extra is not None and load.idle(time.monotonic()) >= SPARE_IDLE:
                say(f"stages: a spare slot for {extra.name} (the CPUs were idle enough)")
                start_now = [extra]
        for stage in start_now:
            load.started(time.monotonic())
            pending.remove(stage)
            result = results[stage.name]
            result.started = time.monotonic()
            cpu_folder = log_dir / "cpu" / stage.name
            shutil.rmtree(cpu_folder, ignore_errors=True)
            say(
                f"stages: {stage.name} started (make {stage.target}) at "
                f"{_clock(result.started - origin)}; output in {result.log}"
            )
            with result.log.open("wb") as out:
                running[stage.name] = subprocess.Popen(
                    command(stage),
                    cwd=REPO,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, cpu_report.ENV: str(cpu_folder)},
                )
        time.sleep(0.5)
        for name, proc in list(running.items()):
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == 0:
                continue
            code = proc.returncode = os.waitstatus_to_exitcode(status)
            del running[name]
            result = results[name]
            result.ended = time.monotonic()
            result.code = code
            result.cpu = usage.ru_utime + usage.ru_stime
            text = result.log.read_text(encoding="utf-8", errors="replace")
            verdict = "passed" if code == 0 else f"FAILED with exit code {code}"
            say(
                f"\n======== stage {name}: make {result.stage.target} ========\n{text}"
                f"======== stage {name} {verdict} in {_clock(result.seconds)} ========\n"
            )
        now = time.monotonic()
        if samples and now - origin >= SAMPLE * len(samples):
            samples.append(cpu_times() or samples[-1])
        if running and now - last_beat >= HEARTBEAT:
            last_beat = now
            parts = [f"{n} ({_clock(now - results[n].started)})" for n in running]
            say(f"stages: {_clock(now - origin)} elapsed; running: {', '.join(parts)}")

    total = time.monotonic() - origin
    ordered = [results[s.name] for s in stages]
    summary = ["", "================ stages ================", table(ordered, origin, total)]
    cpu = cpu_line(cpu_before, cpu_times())
    if cpu:
        docker_after = docker_cpu()
        if docker_before is not None and docker_after is not None:
            cpu += f"; Docker containers {_clock(docker_after - docker_before)}"
        summary.append(cpu)
    if len(samples) > 2:
        summary.append(f"machine CPU busy % per {SAMPLE:.0f} s: {timeline(samples)}")
    tests = slowest([(r.stage.name, r.log) for r in ordered if r.code is not None])
    if tests:
        summary.append("\nslowest tests (pytest --durations of every stage):")
        summary += [f"{sec:8.2f}s  {stage:<12} {name}" for sec, stage, name in tests]
    files = cpu_report.summary([(r.stage.name, log_dir / "cpu" / r.stage.name) for r in ordered])
    if files:
        summary.append("\ntest files by CPU (the tests' own processes; containers not counted):")
        summary += files
    text = "\n".join(summary)
    say(text)
    (log_dir / "summary.txt").write_text(text + "\n", encoding="utf-8")
    failed = [r.stage.name for r in ordered if r.code != 0]
    if failed:
        say(f"stages: FAILED or not run: {', '.join(failed)}")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("STAGE_JOBS", "2")),
        help="stages run at once (default: STAGE_JOBS or 2)",
    )
    parser.add_argument(
        "--spare",
        type=int,
        default=int(os.environ.get("STAGE_SPARE", "1")),
        help="stages that may run past --jobs beside a light one while the CPUs are idle "
        "(default: STAGE_SPARE or 1)",
    )
    parser.add_argument("--only", nargs="+", metavar="STAGE", help="run these stages only")
    parser.add_argument("--list", action="store_true", help="list the stages and exit")
    args = parser.parse_args(argv)
    stages = SUITE
    if args.list:
        for s in stages:
            print(f"{s.name:<24} make {s.target:<24} needs: {', '.join(s.needs) or '-'}")
        return 0
    if args.only:
        unknown = sorted(set(args.only) - {s.name for s in SUITE})
        if unknown:
            parser.error(f"unknown stage(s): {', '.join(unknown)}; --list names them")
        stages = tuple(s for s in SUITE if s.name in args.only)
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, got {args.jobs}")
    if args.spare < 0:
        parser.error(f"--spare must be 0 or more, got {args.spare}")
    return run(stages, args.jobs, spare=args.spare)


if __name__ == "__main__":
    sys.exit(main())
