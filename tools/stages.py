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

The suite has a time budget (--budget, STAGE_BUDGET; tools/time_budget.py): the checks always
run whole, the rest in priority order while it lasts, and the table says what it left out. A
stage still running at the budget's end is stopped and fails.

Usage: python3 -m tools.stages [--jobs N] [--budget MINUTES] [--only STAGE ...]
(stdlib only; Python 3.9+)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools import cpu_report, time_budget
from tools.machine_load import Load, cpu_times, docker_cpu
from tools.machine_load import clock as _clock
from tools.stage_report import Result, left_out, summary, verdict_lines

REPO = Path(__file__).resolve().parents[1]
LOG_DIR = REPO / ".cache" / "stages"
HEARTBEAT = 300.0  # seconds between "still running" lines
SAMPLE = 60.0  # seconds between the machine CPU samples of the summary's timeline
# A spare slot opens only when the CPUs were this idle over the last SETTLE seconds (Load), and
# no stage started within them (so the load of the last start is counted).
SPARE_IDLE = 0.35
# Minutes from the suite's start (CI's clone, before `make setup`) to the end of `make test`:
# CI stops a run at 90 minutes, and the stage table is printed after this.
BUDGET = 85.0


@dataclass(frozen=True)
class Stage:
    name: str
    target: str
    needs: tuple[str, ...] = ()
    # Mostly waits (on containers booting, apt's retries, molecule's steps): while one runs and
    # the machine's CPUs are idle enough, another stage may take a spare slot past --jobs
    # (see --spare and spare_choice).
    light: bool = False
    # The time budget (tools/time_budget.py). A pytest stage with `start_by` starts no test in
    # the last `start_by` minutes of the budget. A `gated` stage starts only when its
    # `reference` seconds (its wall time in a reference run, CONTRIBUTING.md), scaled by how
    # slow this machine ran the finished stages, fit in what is left. Any other stage (the
    # checks) always runs whole, and gives its `reference` to that scale.
    start_by: float = 0.0
    gated: bool = False
    reference: float = 0.0
    # On a machine time_budget.SLOW times slower than the reference, a bounded stage starts
    # beside this one only narrow: it runs to its end once started (a journey), and two more
    # heavy streams beside it (integration's two workers) made its bootstrap half as long again.
    keep_cpus: bool = False
    # The environment that makes a bounded stage use one CPU: on a slow machine it starts with
    # it beside a `keep_cpus` stage, and a bounded stage without it does not start there.
    narrow: tuple[tuple[str, str], ...] = ()


# The suite, in order of priority: when a slot frees, the first ready stage in this list starts.
# `make test` is bound by a time budget (tools/time_budget.py). The journeys start first: a
# journey that has started runs to its end, so it needs the most time left. Beside them the
# checks, which always run whole; then integration, starting tests until its last start; then
# the molecule scenarios and the newest ansible's parts while they fit, shortest first.
# Two slots by default: on two CPUs a third heavy stage slowed every other one more than it
# gained (bench/test_suite/RESULTS.md). Beside a light stage, whose waits leave the CPUs
# idle, one more stage may take a spare slot (spare_choice).
_MOLECULE = ("setup", "image")
_TOOLS = ("setup", "image", "host-tools")
SUITE: tuple[Stage, ...] = (
    Stage("setup", "setup"),
    # Built once per recipe hash: on a fresh machine mostly downloads (debootstrap, apt).
    Stage("image", "image", light=True),
    Stage("host-tools", "host-tools", light=True),
    # No journey starts in the budget's last 50 minutes, and one that has started runs to its
    # end: the babysit journey took about 15 minutes on a loaded day of normal speed, the Day two
    # journey 61 to 74 on a day seven times slower (where it is the only one that starts).
    Stage("journey", "journey", _TOOLS, start_by=50, keep_cpus=True),
    Stage("lint", "lint", ("setup",), reference=89),
    Stage("unit", "unit", ("setup",), reference=148),
    Stage("sanity", "sanity", ("setup",), reference=138),
    Stage("docs", "docs", ("setup",), reference=29),
    Stage("integration", "integration", _TOOLS, start_by=14, narrow=(("INTEGRATION_JOBS", "1"),)),
    Stage(
        "molecule-remote_shell", "molecule-remote_shell", _MOLECULE, True, gated=True, reference=81
    ),
    Stage("molecule-pod", "molecule-pod", _MOLECULE, True, gated=True, reference=440),
    Stage("molecule-nfs", "molecule-nfs", _MOLECULE, True, gated=True, reference=263),
    Stage("molecule-framework", "molecule-framework", _MOLECULE, True, gated=True, reference=377),
    Stage("molecule-default", "molecule-default", _MOLECULE, True, gated=True, reference=611),
    Stage("next-venv", "next-venv", gated=True, reference=20),
    Stage(
        "test-next-pytest",
        "test-next-pytest",
        ("next-venv", "image", "host-tools"),
        gated=True,
        reference=200,
    ),
    Stage("test-next-lint", "test-next-lint", ("next-venv",), gated=True, reference=93),
    # after sanity: both keep ansible-test's environments in .cache/ansible-test-home
    Stage(
        "test-next-sanity", "test-next-sanity", ("next-venv", "sanity"), gated=True, reference=134
    ),
)


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


def _stop(proc: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """End a stage and everything it started (a session of its own): TERM, then KILL after
    ``grace`` seconds. The stage's process is left to be reaped (os.wait4 gives its CPU)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        waited = 0.0
        while waited < grace:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG):
                return
            time.sleep(0.2)
            waited += 0.2


def _ended(
    result: Result, proc: subprocess.Popen[bytes], status: int, usage: resource.struct_rusage
) -> str:
    """Record how a stage ended; its whole output, framed by its verdict."""
    code = proc.returncode = os.waitstatus_to_exitcode(status)
    result.ended = time.monotonic()
    result.code = code if not result.why else (code or 1)
    result.cpu = usage.ru_utime + usage.ru_stime
    result.left = left_out(result.log)
    text = result.log.read_text(encoding="utf-8", errors="replace")
    verdict = "passed" if result.code == 0 else f"FAILED with exit code {code}"
    if result.why:
        verdict = f"FAILED: {result.why}"
    return (
        f"\n======== stage {result.stage.name}: make {result.stage.target} ========\n{text}"
        f"======== stage {result.stage.name} {verdict} in {_clock(result.seconds)} ========\n"
    )


def run(
    stages: tuple[Stage, ...],
    jobs: int,
    log_dir: Path = LOG_DIR,
    command: Callable[[Stage], list[str]] = make_command,
    spare: int = 0,
    load: Load | None = None,
    budget: float = 0.0,
    suite_start: float | None = None,
) -> int:
    """Run ``stages``, at most ``jobs`` at once, and up to ``spare`` more light ones while the
    CPUs are idle enough; 0 when every one ran and passed, or was left out by the time budget.
    ``budget``: seconds from ``suite_start`` (epoch; default now) to the end of the suite, 0 for
    none (tools/time_budget.py). A stage still running at the end is stopped and fails."""
    load = load or Load()
    log_dir.mkdir(parents=True, exist_ok=True)
    names = {s.name for s in stages}
    results = {s.name: Result(s, log=log_dir / f"{s.name}.log") for s in stages}
    pending = list(stages)
    running: dict[str, subprocess.Popen[bytes]] = {}
    origin = time.monotonic()
    epoch_start = time.time() if suite_start is None else suite_start
    end = origin + (epoch_start + budget - time.time()) if budget else float("inf")
    last_beat = origin
    cpu_before, docker_before = cpu_times(), docker_cpu()
    samples = [cpu_before] if cpu_before else []

    def say(text: str) -> None:
        print(text, flush=True)

    def factor() -> float:
        done = [results[n] for n in names if results[n].code == 0]
        return time_budget.slowness([(r.seconds, r.stage.reference) for r in done])

    if budget:
        say(
            f"stages: a time budget of {_clock(budget)} from the suite's start, "
            f"{_clock(end - origin)} of it left (STAGE_BUDGET; tools/time_budget.py)"
        )
    try:
        while pending or running:
            load.sample(time.monotonic())
            # Stages whose needs failed (or were not run) are not run either.
            for stage in list(pending):
                needs = [n for n in stage.needs if n in names]
                bad = [n for n in needs if results[n].code not in (None, 0)]
                blocked = [n for n in needs if results[n].why or results[n].budget]
                if bad or blocked:
                    pending.remove(stage)
                    result = results[stage.name]
                    if not bad and all(results[n].budget for n in blocked):
                        result.budget = f"needs {', '.join(blocked)}"
                    else:
                        result.why = f"needs {', '.join(bad or blocked)}"
                    say(f"stages: {stage.name} not run: it needs {', '.join(bad or blocked)}")
            passed = {n for n in names if results[n].code == 0}
            # On a slow machine, beside a stage that keeps the CPUs (a journey runs to its end,
            # and must end within the budget), a bounded stage starts only narrow; the checks
            # start as they are.
            slow = bool(budget) and factor() >= time_budget.SLOW
            narrow = slow and any(results[n].stage.keep_cpus for n in running)
            if narrow:
                candidates = [s for s in pending if s.narrow or not (s.start_by or s.gated)]
            else:
                candidates = pending
            start_now = choose(candidates, names, passed, set(running), jobs - len(running))
            # A spare slot: past --jobs, or in a slot kept for a stage that waits on a light one.
            if not start_now and len(running) < jobs + spare:
                ready = [
                    s for s in candidates if all(n not in names or n in passed for n in s.needs)
                ]
                extra = spare_choice(ready, [results[n].stage for n in running])
                if extra is not None and load.idle(time.monotonic()) >= SPARE_IDLE:
                    say(f"stages: a spare slot for {extra.name} (the CPUs were idle enough)")
                    start_now = [extra]
            now = time.monotonic()
            for stage in start_now:
                pending.remove(stage)
                result = results[stage.name]
                scale = factor()
                if stage.gated and not time_budget.fits(now, end, stage.reference, scale):
                    result.budget = (
                        f"about {_clock(stage.reference * scale)} at {scale:.1f}x the reference "
                        f"time, {_clock(max(end - now, 0))} left"
                    )
                    say(f"stages: {stage.name} not run: {result.budget}")
                    continue
                load.started(now)
                result.started = now
                cpu_folder = log_dir / "cpu" / stage.name
                shutil.rmtree(cpu_folder, ignore_errors=True)
                say(
                    f"stages: {stage.name} started (make {stage.target}) at "
                    f"{_clock(result.started - origin)}; output in {result.log}"
                )
                env = {**os.environ, cpu_report.ENV: str(cpu_folder)}
                if narrow and stage.narrow:
                    env.update(stage.narrow)
                    say(f"stages: {stage.name} runs narrow beside a journey: {stage.narrow}")
                if budget and stage.start_by:
                    last = time.time() + (end - now) - stage.start_by * 60
                    env[time_budget.START_BY_ENV] = f"{last:.0f}"
                with result.log.open("wb") as out:
                    running[stage.name] = subprocess.Popen(
                        command(stage),
                        cwd=REPO,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        env=env,
                        start_new_session=True,  # stopped with all it started (_stop)
                    )
            time.sleep(0.5)
            if time.monotonic() >= end:
                for name, proc in running.items():
                    say(f"stages: {name} stopped: the time budget ended")
                    _stop(proc)
                    results[name].why = "stopped at the end of the time budget"
                for stage in pending:
                    results[stage.name].budget = "the time budget ended"
                pending.clear()
            for name, proc in list(running.items()):
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    del running[name]
                    say(_ended(results[name], proc, status, usage))
            now = time.monotonic()
            if samples and now - origin >= SAMPLE * len(samples):
                samples.append(cpu_times() or samples[-1])
            if running and now - last_beat >= HEARTBEAT:
                last_beat = now
                parts = [f"{n} ({_clock(now - results[n].started)})" for n in running]
                say(f"stages: {_clock(now - origin)} elapsed; running: {', '.join(parts)}")
    finally:
        for proc in running.values():  # a Ctrl-C or an error here: nothing outlives the suite
            _stop(proc)

    total = time.monotonic() - origin
    ordered = [results[s.name] for s in stages]
    text = summary(ordered, origin, total, log_dir, (cpu_before, docker_before), samples, SAMPLE)
    say(text)
    (log_dir / "summary.txt").write_text(text + "\n", encoding="utf-8")
    for line in verdict_lines(ordered):
        say(line)
    return 1 if any(r.failed for r in ordered) else 0


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
    parser.add_argument(
        "--budget",
        type=float,
        default=float(os.environ.get("STAGE_BUDGET") or BUDGET),
        help="minutes from the suite's start (CLOUDTPU_SUITE_START, else now) that the suite may "
        f"take; what does not fit is left out, saying so (default: STAGE_BUDGET or {BUDGET}; 0 "
        "runs every stage whole)",
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
    if args.budget < 0:
        parser.error(f"--budget must be 0 or more minutes, got {args.budget:g}")
    start = time_budget.suite_start(os.environ)
    return run(stages, args.jobs, spare=args.spare, budget=args.budget * 60, suite_start=start)


if __name__ == "__main__":
    sys.exit(main())
