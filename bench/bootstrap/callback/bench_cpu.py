"""Where a site.yml run's CPU goes, task by task: the workers' containers and the controller.

An Ansible callback of the benchmark's own (bench/bootstrap/run.py enables it for the cold run;
it is not part of the collection). At the start of every task, and at the end of the play, it
reads the CPU seconds the pod's worker containers have used (their cgroup files, named in
BENCH_CPU_FILES) and this controller's (ansible-playbook and the forks it has waited for), and
gives the difference to the task that ran since the last reading. Tasks with the same name add
up. The table goes as JSON to BENCH_CPU_OUT.

What a task is given is what happened while it ran: the workers' own services (a cache serving
its peers) count for the task that waited for them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ansible.plugins.callback import CallbackBase

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import measure  # bench/bootstrap/measure.py: the one reader of cgroup CPU files

DOCUMENTATION = """
name: bench_cpu
type: aggregate
short_description: the benchmark's CPU seconds per task (workers' cgroups and the controller)
description:
  - Reads BENCH_CPU_FILES (cgroup CPU files, separated by os.pathsep) and writes BENCH_CPU_OUT.
"""


def controller_seconds() -> float:
    """User and system CPU of this process, of the children it has waited for, and of those it
    has not waited for yet (a task's forks, alive or just ended, with their own children): so a
    fork's CPU counts for its task, not for the one during which it happens to be reaped."""
    times = os.times()
    seconds = times.user + times.system + times.children_user + times.children_system
    me, tick = os.getpid(), os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        # after "(comm)": state ppid ... utime(12) stime(13) cutime(14) cstime(15), 0-based
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 15 and int(fields[1]) == me:
            seconds += sum(int(value) for value in fields[11:15]) / tick
    return seconds


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self.files = [f for f in os.environ.get("BENCH_CPU_FILES", "").split(os.pathsep) if f]
        self.out = os.environ.get("BENCH_CPU_OUT", "")
        self.table: dict[str, dict[str, float]] = {}
        self.current: str | None = None
        self.last = (0.0, 0.0)

    def _reading(self) -> tuple[float, float]:
        workers = sum(measure.read_cgroup_cpu(Path(f)) or 0.0 for f in self.files)
        return workers, controller_seconds()

    def _next(self, name: str | None) -> None:
        now = self._reading()
        if self.current is not None:
            empty = {"workers": 0.0, "controller": 0.0, "runs": 0}
            row = self.table.setdefault(self.current, empty)
            row["workers"] += now[0] - self.last[0]
            row["controller"] += now[1] - self.last[1]
            row["runs"] += 1
        self.current, self.last = name, now

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._next(task.get_name())

    def v2_playbook_on_handler_task_start(self, task):
        self._next(task.get_name())

    def v2_playbook_on_stats(self, stats):
        self._next(None)
        if self.out:
            rows = {
                name: {key: round(value, 3) for key, value in row.items()}
                for name, row in self.table.items()
            }
            Path(self.out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
