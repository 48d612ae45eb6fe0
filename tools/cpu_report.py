"""CPU time per test file, for the stage table of ``make test`` (tools/stages.py).

A pytest run with CLOUDTPU_CPU_REPORT_DIR set records, for every test file, the CPU seconds
of the test process and of every process it started and waited for (ansible-playbook, the
modules it ran on this machine, the emulator, docker's command line), with the wall time:
``tests/conftest.py`` calls ``Recorder.measure`` around each test (its setup, call and teardown,
so a file's module fixtures count for that file). Each pytest process (each xdist worker) writes
one JSON file into that folder when it ends; ``summary()`` adds them up per file.

Not counted: the worker containers (their CPU is in Docker's cgroup, shared with whatever else
runs at the same time; the stage table shows it for the whole run) and processes left running
that nobody waited for.
"""

from __future__ import annotations

import json
import os
import resource
import time
from contextlib import contextmanager
from pathlib import Path

ENV = "CLOUDTPU_CPU_REPORT_DIR"


def cpu_seconds() -> float:
    """User and system CPU of this process and of its children that were waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Recorder:
    """CPU and wall seconds and the test count per test file of one pytest process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: dict[str, dict[str, float]] = {}

    @contextmanager
    def measure(self, nodeid: str):
        cpu, wall = cpu_seconds(), time.monotonic()
        try:
            yield
        finally:
            entry = self.files.setdefault(nodeid.split("::")[0], {"cpu": 0, "wall": 0, "tests": 0})
            entry["cpu"] += cpu_seconds() - cpu
            entry["wall"] += time.monotonic() - wall
            entry["tests"] += 1

    def write(self, name: str) -> Path | None:
        if not self.files:
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}-{os.getpid()}.json"
        path.write_text(json.dumps(self.files, indent=1, sort_keys=True), encoding="utf-8")
        return path


def from_environment() -> Recorder | None:
    folder = os.environ.get(ENV, "")
    return Recorder(Path(folder)) if folder else None


def totals(folder: Path) -> dict[str, dict[str, float]]:
    """Every test file's CPU, wall and test count, added up over the JSON files of ``folder``."""
    out: dict[str, dict[str, float]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            files = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for name, entry in files.items() if isinstance(files, dict) else []:
            into = out.setdefault(name, {"cpu": 0, "wall": 0, "tests": 0})
            for key in into:
                value = entry.get(key, 0) if isinstance(entry, dict) else 0
                into[key] += value if isinstance(value, (int, float)) else 0
    return out


def summary(folders: list[tuple[str, Path]], count: int = 15) -> list[str]:
    """Lines of the ``count`` test files that used the most CPU, over the stages' folders."""
    rows = [
        (entry["cpu"], entry["wall"], int(entry["tests"]), stage, name)
        for stage, folder in folders
        for name, entry in totals(folder).items()
    ]
    rows.sort(reverse=True)
    return [
        f"{cpu:8.1f}s cpu {wall:8.1f}s wall {tests:4d} tests  {stage:<12} {name}"
        for cpu, wall, tests, stage, name in rows[:count]
    ]
