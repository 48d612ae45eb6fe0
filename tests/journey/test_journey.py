"""The README's "Day two" walkthrough, run as a user runs it: every marked block of README.md, in
order, verbatim, in bash, against one local demo pod made by the README's own `make demo`.

The steps share one pod and one user's state (.cache/facts, .cache/runs, the demo folder's
keys, known_hosts and SSH config), as a user's shell would. Two events come from outside the
user's commands on Google Cloud:

* the preemption: Google preempts a Spot node on its own. On the demo the README's `preempt`
  block asks the emulator's admin API (POST /_emulator/.../nodes/demo:preempt, see
  tools/tpu_emulator/server.py) to do what the service does: the node turns PREEMPTED and its
  workers (containers) are killed at once, with no time to shut down;
* a stuck TPU, planted by the test with its own hands (docker exec): a crashed program's stale
  lock file on one worker, and a live program holding the TPU on the other. The containers have
  no TPU, so a plain file at /dev/accel0 stands in for the device (as in the molecule default
  scenario) and the holder is a process of the login user that keeps it open.

Each step asserts on what really happened (files on the workers, the emulator's state, the
containers), not only on an exit status. Skipped, with the reason, only when no Docker daemon
answers.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.journey.harness import (
    DEMO_DIR,
    PROJECT_DIR,
    REPO,
    WORKERS,
    Journey,
    host_line,
    journey_pod,
    ok,
    run_id,
)

pytestmark = pytest.mark.journey_step

LOGIN_HOME = "/home/tpu"  # the demo's login user is tpu (inventories/demo/group_vars/tpu.yml)
RUNS_DIR = f"{LOGIN_HOME}/cloudtpu-runs"
LOCK = "/tmp/libtpu_lockfile"
DEVICE = "/dev/accel0"
HOLDER = f"import time; device = open('{DEVICE}'); lock = open('{LOCK}'); time.sleep(1800)"


@pytest.fixture(scope="module")
def journey() -> Iterator[Journey]:
    with journey_pod() as state:
        yield state


def hostnames(journey: Journey) -> list[str]:
    return [journey.worker(i)["hostname"] for i in range(len(WORKERS))]


def test_demo_up(journey: Journey) -> None:
    ok(journey.run("demo-up", timeout=1800))
    containers = journey.containers()
    assert sorted(containers) == ["0", "1"], containers
    assert all(c["state"] == "running" for c in containers.values()), containers
    assert journey.node()["state"] == "READY"
    assert (DEMO_DIR / "ssh_config").is_file()
    # The mission's default on every worker: the login user's Python 3.10 venv with JAX in it.
    probe = (
        "import sys, jax; print('python %d.%d jax %s' % (*sys.version_info[:2], jax.__version__))"
    )
    for index, host in enumerate(WORKERS):
        seen = journey.exec(
            index, f'runuser -u tpu -- {LOGIN_HOME}/.venv310/bin/python -c "{probe}"'
        )
        assert re.search(r"^python 3\.10 jax \d+\.\d+", seen, flags=re.MULTILINE), f"{host}: {seen}"


def test_demo_env(journey: Journey) -> None:
    probe = 'echo "endpoint=$CLOUDTPU_API_ENDPOINT"; command -v ansible-playbook\n'
    probe += "ansible-inventory --graph"  # no -i: ANSIBLE_INVENTORY from the README's env
    run = ok(journey.run("demo-env", probe=probe))
    assert f"endpoint=http://127.0.0.1:{journey.port}/v2" in run.stdout, run.tail()
    assert f"{REPO}/.venv/bin/ansible-playbook" in run.stdout, run.tail()
    for host in WORKERS:
        assert f"--{host}" in run.stdout, f"the inventory misses {host}:\n{run.tail()}"


def test_sync(journey: Journey) -> None:
    ok(journey.run("sync"))
    local = (PROJECT_DIR / "train.py").read_text(encoding="utf-8")
    for index in range(len(WORKERS)):
        remote = journey.exec(index, f"cat {LOGIN_HOME}/myproject/train.py")
        assert remote == local, f"worker {index} has another train.py:\n{remote}"
        owner = journey.exec(index, f"stat -c %U {LOGIN_HOME}/myproject/train.py").strip()
        assert owner == "tpu", f"worker {index}: train.py belongs to {owner}"


def test_run_quoted(journey: Journey) -> None:
    run = ok(journey.run("run-quoted"))
    for name in hostnames(journey):
        assert f"{name} step 3/3" in run.output, f"no output of {name}:\n{run.tail()}"


def test_run_pipe(journey: Journey) -> None:
    run = ok(journey.run("run-pipe"))
    for name in hostnames(journey):
        assert f"{name} step 4/4" in run.output, f"no output of {name}:\n{run.tail()}"
        # grep ran on the worker: the lines it dropped never reach the output.
        assert f"{name} step 1/4" not in run.output, run.tail()


def test_run_fail(journey: Journey) -> None:
    run = journey.run("run-fail")
    assert run.returncode != 0, f"a failing command, yet exit 0:\n{run.tail()}"
    for host, name in zip(WORKERS, hostnames(journey), strict=True):
        assert f"{name} step 1/1" in run.output, f"the command did not start on {host}"
        assert host_line(run.output, host, r"(?<![\w.])7(?![\w.])"), (
            f"exit code 7 of {host} not reported:\n{run.tail()}"
        )
    ident = run_id(run)
    for index, host in enumerate(WORKERS):
        rc = journey.exec(index, f"cat {RUNS_DIR}/{ident}/{host}.rc").strip()
        assert rc == "7", f"{host}: the run record's .rc says {rc!r}"


def test_run_detach(journey: Journey) -> None:
    run = ok(journey.run("run-detach"))
    ident = run_id(run)
    journey.facts["detached"] = ident
    for index, host in enumerate(WORKERS):
        record = json.loads(journey.exec(index, f"cat {RUNS_DIR}/{ident}/{host}.json"))
        assert record["detached"] is True, record
        assert isinstance(record["pid"], int), record
        assert "train.py" in record["cmd"], record
        mode = journey.exec(index, f"stat -c '%a %U' {RUNS_DIR}/{ident}").strip()
        assert mode == "700 tpu", f"{host}: run folder {mode}"


def test_logs(journey: Journey) -> None:
    ident = journey.facts["detached"]
    # A user reads the logs of a run that has begun. On a loaded machine the detached run may
    # not have printed its first line in the second between two commands, so the test waits for
    # that line on every worker (as root, not through the playbook under test) before it asks.
    for index, host in enumerate(WORKERS):
        log = f"{RUNS_DIR}/{ident}/{host}.log"
        deadline = time.monotonic() + 60
        while "step 1/60" not in journey.exec(index, f"cat {log}", check=False):
            assert time.monotonic() < deadline, f"{host}: the detached run printed nothing in 60 s"
            time.sleep(0.5)
    run = ok(journey.run("logs"))
    for host, name in zip(WORKERS, hostnames(journey), strict=True):
        log = REPO / ".cache" / "runs" / ident / f"{host}.log"
        assert log.is_file(), f"{log} was not fetched:\n{run.tail()}"
        assert f"{name} step 1/60" in log.read_text(encoding="utf-8"), log.read_text()


def test_status(journey: Journey) -> None:
    run = ok(journey.run("status"))
    assert "READY" in run.output, run.tail()
    for host, address in zip(WORKERS, journey.addresses(), strict=True):
        assert host_line(run.output, host, re.escape(address)), f"{host} {address}:\n{run.tail()}"
    assert journey.facts["detached"] in run.output, f"the detached run is not shown:\n{run.tail()}"
    # site.yml put tpu-info in the venv (tpu_framework_tpu_info); the containers have no TPU chip.
    no_device = "tpu-info: no TPU device (tpu-info: No TPU chips found.)"
    assert run.output.count(no_device) == len(WORKERS), f"no {no_device!r}:\n{run.tail()}"


def test_preempt(journey: Journey) -> None:
    # What Google does to a Spot node, asked of the emulator's admin API by the README's curl
    # line: the node turns PREEMPTED and its workers are killed.
    ok(journey.run("preempt", timeout=120))
    assert journey.node()["state"] == "PREEMPTED"
    containers = journey.containers()
    assert all(c["state"] != "running" for c in containers.values()), containers
    journey.facts["before_recover"] = containers


def test_status_preempted(journey: Journey) -> None:
    run = ok(journey.run("status-preempted"))
    assert "PREEMPTED" in run.output, f"status does not say PREEMPTED:\n{run.tail()}"


def test_recover(journey: Journey) -> None:
    ok(journey.run("recover", timeout=1800))
    assert journey.node()["state"] == "READY"
    before = journey.facts["before_recover"]
    after = journey.containers()
    assert sorted(after) == ["0", "1"], after
    assert all(c["state"] == "running" for c in after.values()), after
    assert all(after[i]["id"] != before[i]["id"] for i in after), "the workers were not recreated"
    config = (DEMO_DIR / "ssh_config").read_text(encoding="utf-8")
    entries = dict(re.findall(r"^Host (\S+)\n\s+HostName (\S+)", config, flags=re.MULTILINE))
    addresses = journey.addresses()
    assert [entries.get(h) for h in WORKERS] == addresses, (
        f"{DEMO_DIR / 'ssh_config'} was not refreshed with the new addresses {addresses}:\n{config}"
    )


def test_status_recovered(journey: Journey) -> None:
    run = ok(journey.run("status-recovered"))
    assert "READY" in run.output and "PREEMPTED" not in run.output, run.tail()
    for host, address in zip(WORKERS, journey.addresses(), strict=True):
        assert host_line(run.output, host, re.escape(address)), f"{host} {address}:\n{run.tail()}"


def test_run_again(journey: Journey) -> None:
    run = ok(journey.run("run-again"))
    for name in hostnames(journey):
        assert f"{name} step 2/2" in run.output, f"no output of {name}:\n{run.tail()}"


def test_ssh(journey: Journey) -> None:
    run = ok(journey.run("ssh", timeout=120))
    assert run.stdout.strip() == journey.worker(0)["hostname"], run.tail()


def test_reset(journey: Journey) -> None:
    # A stuck TPU, made by hand: a stale lock on worker 1, a live holder on worker 0.
    for index in range(len(WORKERS)):
        journey.exec(index, f"touch {DEVICE}; chmod 0644 {DEVICE}; runuser -u tpu -- touch {LOCK}")
    journey.exec(0, f'runuser -u tpu -- setsid python3 -c "{HOLDER}" </dev/null >/dev/null 2>&1 &')
    holder = journey.exec(0, "sleep 1; pgrep -u tpu -f 'time.sleep.1800.'").split()
    assert len(holder) == 1, f"the TPU holder did not start: {holder}"
    journey.facts["holder"] = holder[0]
    run = ok(journey.run("reset"))
    assert not journey.exists(1, LOCK), f"the stale lock of demo-w1 is still there:\n{run.tail()}"
    assert journey.exists(0, LOCK), f"the lock of a live holder was removed:\n{run.tail()}"
    assert journey.alive(0, holder[0]), f"reset without kill ended the holder:\n{run.tail()}"
    assert host_line(run.output, "demo-w0", rf"\b{holder[0]}\b") or holder[0] in run.output, (
        f"reset does not name the holder {holder[0]}:\n{run.tail()}"
    )


def test_reset_kill(journey: Journey) -> None:
    holder = journey.facts["holder"]
    run = ok(journey.run("reset-kill"))
    assert not journey.alive(0, holder), f"the holder {holder} still runs:\n{run.tail()}"
    assert not journey.exists(0, LOCK), f"the lock is still there:\n{run.tail()}"
    assert holder in run.output, f"reset does not say it ended {holder}:\n{run.tail()}"


def test_teardown(journey: Journey) -> None:
    pid = journey.emulator_pid()
    assert pid is not None, "the demo folder has no emulator.pid"
    ok(journey.run("teardown", timeout=600))
    assert journey.leftovers() == {"containers": [], "networks": []}
    alive = subprocess.run(["kill", "-0", str(pid)], capture_output=True, check=False)
    assert alive.returncode != 0, f"the emulator (pid {pid}) still runs"
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", journey.port)) != 0, "the emulator's port answers"
