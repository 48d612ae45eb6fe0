"""The nfs role's converged fast path on the scenario's pods, after converge and idempotence.

A worker as its record says (cloudtpu.pod.tpu_state) costs the role one remote call; a worker
that drifted goes through the role's tasks, whichever of the server and its clients drifted,
a dry run (--check --diff) on drift reports it and changes nothing, and a role variable given
with -e sends the worker through its tasks. Each test runs the scenario's converge.yml again
through ansible-playbook (molecule's inventory and settings) and reads what every worker did
from the ansible.posix.json callback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import testinfra

SERVER = "cloudtpu-nfs-pod1-w0"
CLIENT = "cloudtpu-nfs-pod1-w1"
OTHER_CLIENT = "cloudtpu-nfs-pod1-w2"
KERNEL_SERVER = "cloudtpu-nfs-pod2-w0"
WORKERS = [SERVER, CLIENT, OTHER_CLIENT, KERNEL_SERVER]
CONF = "/etc/ganesha/ganesha.conf"
MOUNT = "/mnt/shared"
# The end of the name of the role's first task, which checks the variables and looks at the state
STATE_TASK = "look at the role's whole state in one call"
# The role's tasks on a worker that takes the fast path: the variable and state check (one task),
# the include it skips, the report and its message.
FAST_PATH_TASKS = 4

# Everything below names its hosts itself; run the module once.
testinfra_hosts = [f"docker://{SERVER}"]


@cache
def get(name: str):
    return testinfra.get_host(f"docker://{name}")


class Run:
    """One ansible-playbook run of converge.yml: each worker's results, task by task."""

    def __init__(self, *args: str) -> None:
        scenario = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).parents[1]))
        playbook = Path(sys.executable).parent / "ansible-playbook"
        cmd = [str(playbook), str(scenario / "converge.yml")]
        if os.environ.get("MOLECULE_INVENTORY_FILE"):
            cmd += ["-i", str(Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent)]
        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
        env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.json"
        done = subprocess.run(
            [*cmd, *args], env=env, capture_output=True, text=True, timeout=900, check=False
        )
        self.rc, self.output = done.returncode, done.stdout + done.stderr
        start = done.stdout.find("{")
        report, _ = json.JSONDecoder().raw_decode(done.stdout[start:]) if start >= 0 else ({}, 0)
        self.results: dict[str, list[tuple[str, str, dict]]] = {}
        for play in report.get("plays", []):
            for task in play["tasks"]:
                name, path = task["task"]["name"], task["task"].get("path", "")
                for host, result in task["hosts"].items():
                    self.results.setdefault(host, []).append((name, path, result))

    def state(self, host: str) -> dict:
        found = [r for name, _, r in self.results.get(host, []) if name.endswith(STATE_TASK)]
        assert len(found) == 1, f"{host}: {len(found)} state checks\n{self.output[-3000:]}"
        return found[0]

    def changed(self, host: str) -> list[str]:
        return [name for name, _, r in self.results.get(host, []) if r.get("changed")]

    def role_tasks(self, host: str) -> int:
        return sum(1 for _, path, _ in self.results.get(host, []) if "/roles/nfs/tasks/" in path)

    def fast(self, host: str) -> bool:
        """The worker took the fast path: converged, no change, only the role's few tasks."""
        return (
            self.state(host)["converged"] is True
            and not self.changed(host)
            and self.role_tasks(host) <= FAST_PATH_TASKS
        )

    def evidence(self, host: str) -> str:
        state = self.state(host)
        return (
            f"{host}: converged={state.get('converged')} differences={state.get('differences')} "
            f"changed={self.changed(host)} role tasks={self.role_tasks(host)}"
        )


def drift() -> None:
    """The server's ganesha.conf edited and its service stopped; a client's fstab entry and
    mount point removed. Doing it twice changes nothing more."""
    get(SERVER).check_output(f"sed -i 's/Graceless = true;/Graceless = false;/' {CONF}")
    get(SERVER).check_output("systemctl stop nfs-ganesha")
    get(CLIENT).check_output(f"sed -i '\\# {MOUNT} #d' /etc/fstab && rm -rf {MOUNT}")


def look() -> dict:
    """What the drift touches, as it is now."""
    return {
        "conf": get(SERVER).check_output(f"sha256sum {CONF}").split()[0],
        "graceless": "Graceless = true;" in get(SERVER).file(CONF).content_string,
        "ganesha": get(SERVER).service("nfs-ganesha").is_running,
        "fstab": f" {MOUNT} " in get(CLIENT).file("/etc/fstab").content_string,
        "mount point": get(CLIENT).run(f"stat --format '%F %U %a' {MOUNT}").stdout.strip(),
    }


# A role variable given with -e, another value on pod2's worker only (the others get the default
# they were recorded with, so they still take the fast path).
RETRIES_ON_POD2 = f"{{{{ 4 if inventory_hostname == '{KERNEL_SERVER}' else 5 }}}}"


def test_a_dry_run_reports_drift_and_changes_nothing():
    drift()
    before = look()
    run = Run("--check", "--diff", "-e", json.dumps({"tpu_nfs_apt_retries": RETRIES_ON_POD2}))
    assert run.rc == 0, run.output[-3000:]
    for host in (SERVER, CLIENT):
        assert run.state(host)["converged"] is False, run.evidence(host)
    differences = " ".join(run.state(SERVER)["differences"])
    assert CONF in differences and "nfs-ganesha" in differences, run.evidence(SERVER)
    assert "/etc/fstab" in " ".join(run.state(CLIENT)["differences"]), run.evidence(CLIENT)
    changed = run.changed(SERVER)
    assert any("Configure nfs-ganesha" in name for name in changed), run.evidence(SERVER)
    assert any("Start nfs-ganesha" in name for name in changed), run.evidence(SERVER)
    assert any("fstab" in name for name in run.changed(CLIENT)), run.evidence(CLIENT)
    assert run.fast(OTHER_CLIENT), run.evidence(OTHER_CLIENT)
    other_inputs = run.state(KERNEL_SERVER)
    assert other_inputs["differences"] == ["the role's inputs or code changed"], run.evidence(
        KERNEL_SERVER
    )
    assert run.role_tasks(KERNEL_SERVER) > FAST_PATH_TASKS, run.evidence(KERNEL_SERVER)
    assert look() == before, f"the dry run changed something: {before} -> {look()}"


def test_a_run_repairs_the_server_and_a_client_while_the_others_take_the_fast_path():
    drift()
    run = Run()
    assert run.rc == 0, run.output[-3000:]
    for host in (SERVER, CLIENT):
        assert run.state(host)["converged"] is False and run.changed(host), run.evidence(host)
    # The server checked the uid of the client that skipped its tasks from that client's record.
    for host in (OTHER_CLIENT, KERNEL_SERVER):
        assert run.fast(host), run.evidence(host)
    now = look()
    assert now["graceless"] and now["ganesha"] and now["fstab"], now
    assert now["mount point"] == "directory root 755", now


def test_a_client_goes_through_its_tasks_while_its_server_takes_the_fast_path():
    get(CLIENT).check_output(f"mkdir -p {MOUNT} && chmod 0777 {MOUNT}")
    run = Run()
    assert run.rc == 0, run.output[-3000:]
    # The client checked its uid against the server's record, which skipped its tasks.
    assert run.state(CLIENT)["converged"] is False, run.evidence(CLIENT)
    assert any("mount point" in name for name in run.changed(CLIENT)), run.evidence(CLIENT)
    for host in (SERVER, OTHER_CLIENT, KERNEL_SERVER):
        assert run.fast(host), run.evidence(host)
    assert look()["mount point"] == "directory root 755"
