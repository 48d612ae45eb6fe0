"""The means of test_fault_table.py: the emulator's state, the steps of each playbook as the API
calls it makes, one fault per kind on one step, and a run interrupted at a step.

A step is one API call of a playbook, named by its verb, its path and how many calls of that
verb and path the playbook made before it (``after``): recover.yml reads pod-r five times (the
read, the delete's own look, the wait until it is gone, the create's look, the read of the new
node), and a step is one of them. The sequences were read from the emulator's log of each
playbook run (GET /_emulator/stats); a row whose call never comes fails, saying so, rather
than passing without its fault.
"""

from __future__ import annotations

import copy
import fnmatch
import getpass
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.integration.lifecycle_support import (
    DEMO_STATE,
    PROJECT,
    ZONE,
    EmulatorCli,
    Run,
    playbook,
)

KINDS = ("sigint", "403", "500", "timeout")
NODE_PATH = f"projects/*/locations/{ZONE}/nodes"
OPERATION_PATH = f"projects/*/locations/{ZONE}/operations/*"
# The latency that holds a call while the interrupt is sent: time enough to see it and signal.
HOLD = 1.5
SPEC = {"labels": {"team": "vision"}, "metadata": {"startup-script": "echo hi"}}


@dataclass(frozen=True)
class Step:
    """One API call of a playbook: ``after`` calls of the same verb and path come before it."""

    name: str
    method: str
    path: str
    route: str
    after: int = 0

    def matches(self, line: str) -> bool:
        """Whether a line of the emulator's log (``GET /v2/path?query status``) is this call."""
        method, rest = line.split(" ", 1)
        path = rest.split(" ", 1)[0].split("?", 1)[0].removeprefix("/v2/")
        return method == self.method and fnmatch.fnmatchcase(path, self.path)


def node_get(name: str, after: int, node: str) -> Step:
    return Step(name, "GET", f"{NODE_PATH}/{node}", "nodes.get", after)


def operation(name: str, after: int = 0) -> Step:
    return Step(name, "GET", OPERATION_PATH, "operations.get", after)


def create(name: str = "create") -> Step:
    return Step(name, "POST", NODE_PATH, "nodes.create")


def delete(node: str) -> Step:
    return Step("delete", "DELETE", f"{NODE_PATH}/{node}", "nodes.delete")


def rule(step: Step, kind: str) -> dict[str, Any]:
    """The fault plan's rule for ``kind`` on ``step``: it hits that call once."""
    base = {"path": step.path, "method": step.method, "after": step.after, "times": 1}
    faults = {
        "sigint": {"latency": HOLD},
        "403": {"error": "PERMISSION_DENIED"},
        "500": {"error": 500},
        "timeout": {"drop": True},
    }
    return {**base, **faults[kind]}


def state() -> dict[str, Any]:
    """The demo state with four nodes in its zone: pod-r preempted (recover.yml recreates it),
    pod-t READY (teardown.yml deletes it), pod-b READY (the node of the run babysit.yml
    watches) and keep, READY, which no row may touch."""
    data = yaml.safe_load(DEMO_STATE.read_text())
    common = {
        "acceleratorType": "v4-8",
        "runtimeVersion": "tpu-ubuntu2204-base",
        "networkConfig": {"enableExternalIps": False},
    }
    nodes = [
        {"nodeId": "pod-r", "state": "PREEMPTED", **common, **copy.deepcopy(SPEC)},
        {"nodeId": "pod-t", **common},
        {"nodeId": "keep", **common, "labels": {"team": "other"}},
        {"nodeId": "pod-b", **common},
    ]
    data["projects"][PROJECT]["zones"][ZONE] = {"nodes": nodes}
    data.setdefault("settings", {})["operation_delay"] = 0.05
    return data


def nodes(emulator: EmulatorCli) -> dict[str, dict[str, Any]]:
    """The zone's nodes by ID, as the emulator holds them."""
    zone = emulator.admin("GET", "state")["projects"][PROJECT]["zones"][ZONE]
    return {entry["name"].rsplit("/", 1)[-1]: entry for entry in zone["nodes"]}


def calls(emulator: EmulatorCli, step: Step) -> list[str]:
    """The log lines of the calls of ``step``'s verb and path that have been answered."""
    return [line for line in emulator.admin("GET", "stats")["log"] if step.matches(line)]


def _wait(what: str, ready: Any, seconds: float, thread: threading.Thread | None = None) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if thread is not None and not thread.is_alive():
            raise AssertionError(f"the run ended before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {seconds} s")
        time.sleep(0.1)


def interrupted(emulator: EmulatorCli, step: Step, name: str, env: dict, args: list[str]) -> Run:
    """The playbook run, Ctrl-C'd while ``step``'s call is held by the emulator (rule(step,
    'sigint') must be in place): SIGINT to the run's process group, as a terminal sends it
    (ansible-playbook, its workers and the module waiting for the answer), once the emulator
    has seen the call; again if the run goes on. Returns once the held call is answered, so
    that the next run does not race it."""
    pid: list[int] = []
    done: list[Run] = []
    thread = threading.Thread(
        target=lambda: done.append(playbook(name, env, *args, on_start=pid.append)), daemon=True
    )
    thread.start()
    key = f"{step.method} {step.route}"

    def seen() -> bool:
        return bool(pid) and emulator.admin("GET", "stats")["by_route"].get(key, 0) > step.after

    def answered() -> bool:
        return len(calls(emulator, step)) > step.after

    _wait(f"{key} number {step.after + 1}", seen, 120, thread)
    for attempt in (1, 2):
        os.killpg(pid[0], signal.SIGINT)
        thread.join(30 if attempt == 1 else 120)
        if not thread.is_alive():
            break
    assert not thread.is_alive(), "ansible-playbook did not stop after Ctrl-C twice"
    _wait(f"answer to {key} number {step.after + 1}", answered, HOLD + 30)
    return done[0]


def clear(folder: Path) -> None:
    """Empty the state folder (the journal) that the module's runs share."""
    for path in folder.glob("*"):
        path.unlink()


def local_worker(home: Path) -> dict[str, Any]:
    """Variables that make pod-b's worker this machine, with ``home`` as the login user's home
    (a venv without packages there, as run.yml wants one): run.yml and babysit.yml reach it
    without SSH."""
    (home / "work").mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(home / ".venv310")], check=True
    )
    return {
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "tpu_login_user": getpass.getuser(),
        "tpu_login_home": str(home),
        "tpu_run_workdir": str(home / "work"),
        "tpu_run_unlock": False,
        "tpu_run_start_delay": 1,
    }
