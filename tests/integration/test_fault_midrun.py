"""A worker lost in the middle of site.yml, for real, on this machine: the emulator with its Docker
backend makes the two workers of a v4-16 pod systemd+sshd containers, and site.yml reaches them
over SSH with host key checking on.

provision fault-pod (two workers) -> site.yml runs; when the first task of its mosh and byobu play
(cloudtpu.pod.remote_shell) starts, worker 1's container is stopped (docker stop: systemd shuts
down, sshd closes its connections, as when a VM goes down) -> the run exits non-zero, reports
worker 1 unreachable or failed, and worker 0 finishes every play (mosh, byobu and the default
locale are there) -> worker 1 is started again (same container, same host keys; should its
address change, the emulator's maintenance action reads the addresses again and the inventory
takes them from the API as usual) -> the same site.yml converges worker 1 and changes nothing on
worker 0 -> a third run changes nothing anywhere.

Only a cheap subset of the roles runs (--tags base,tcmalloc,libtpu,remote_shell): python,
framework and nfs are left out for time; molecule/pod bootstraps a pod with every role. The
test fails if a fault on one worker stops the others (any_errors_fatal, a max_fail_percentage
of 0, serial batches that abort): worker 0 would not have the remote shell tools.

Skipped, with the reason printed, only when no Docker daemon answers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.integration.lifecycle_support import (
    BIN,
    DEMO_INVENTORY,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    Run,
    ansible_env,
    extra_vars,
    inventory,
    playbook,
    run,
)
from tools.tpu_emulator.docker_worker import ssh_banner

IMAGE = "cloudtpu-pod-worker:current"
NODE = "fault-pod"
GROUP = "tpu_node_fault_pod"
W0, W1 = "fault-pod-w0", "fault-pod-w1"
EMULATOR_ID = f"fault{os.getpid()}"
LABEL = f"cloudtpu.emulator={EMULATOR_ID}"
CLEANUP = [str(BIN / "python"), "-m", "tools.tpu_emulator.docker_backend", "cleanup"]
SITE = "site.yml"
TAGS = "base,tcmalloc,libtpu,remote_shell"
# The first task of the last play this subset runs: the two workers are past base, tcmalloc and
# libtpu, and the remote shell role (its asserts run on the control machine first) still has to
# look up the login user, install the packages and set the locale on them.
TRIGGER = "TASK [cloudtpu.pod.remote_shell : "
LOCALE = "en_US.UTF-8"
# What the last role leaves on a worker that finished it, as shell checks that print evidence.
EFFECTS = {
    "mosh installed": "dpkg-query -W -f='${Status}' mosh",
    "byobu installed": "dpkg-query -W -f='${Status}' byobu",
    f"LANG={LOCALE} in /etc/default/locale": f"grep -x 'LANG={LOCALE}' /etc/default/locale",
}


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=timeout
    )
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def docker_unavailable() -> str:
    if shutil.which("docker") is None:
        return "the docker command is not installed (make docker installs it)"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        return f"no Docker daemon answers (make docker starts one): {info.stderr.strip()[:200]}"
    return ""


def worker_container(worker: int) -> str:
    """The container the Docker backend labels as worker ``worker`` of this test's pod."""
    names = docker(
        "ps",
        "-a",
        "--filter",
        f"label={LABEL}",
        "--filter",
        f"label=cloudtpu.worker={worker}",
        "--format",
        "{{.Names}}",
    ).stdout.split()
    assert len(names) == 1, f"expected one container for worker {worker}, found {names}"
    return names[0]


def container_ip(name: str) -> str:
    fmt = "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}"
    found = docker("inspect", "--format", fmt, name).stdout.split()
    return found[0] if found else ""


def effects(container: str) -> dict[str, str]:
    """Each effect of the remote shell role -> '' when present, else the evidence of its lack."""
    missing = {}
    for what, check in EFFECTS.items():
        done = docker("exec", container, "sh", "-c", check, check=False)
        output = (done.stdout + done.stderr).strip()
        if done.returncode != 0 or "not-installed" in output:
            missing[what] = f"rc={done.returncode} {output!r}"
        else:
            missing[what] = ""
    return missing


def hosts_addresses(env: dict[str, str]) -> dict[str, str]:
    hostvars = inventory(env)["_meta"]["hostvars"]
    return {h: hostvars[h]["ansible_host"] for h in (W0, W1) if h in hostvars}


@dataclass
class Fault:
    """What happened around the stop of worker 1 during a streamed run."""

    line: str = ""
    at: float = 0.0
    stop_seconds: float = 0.0
    stop_output: str = ""
    after: list[str] = field(default_factory=list)


def stream_playbook(
    name: str,
    env: dict[str, str],
    args: list[str],
    trigger: str,
    action: Callable[[], subprocess.CompletedProcess],
    timeout: float = 900,
) -> tuple[Run, Fault]:
    """ansible-playbook -i inventories/demo NAME ARGS, read line by line; ``action`` runs once,
    when a stdout line starts with ``trigger``, while the run goes on."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY), name, *args]
    fault = Fault()
    lines: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as errors:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=errors)
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace")
                lines.append(line)
                if fault.line:
                    fault.after.append(line.rstrip())
                elif line.startswith(trigger):
                    fault.line = line.rstrip()
                    fault.at = time.monotonic() - started
                    done = action()
                    fault.stop_seconds = time.monotonic() - started - fault.at
                    fault.stop_output = (done.stdout + done.stderr).strip()
            proc.wait()
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        errors.seek(0)
        stderr = errors.read()
    return Run(cmd, proc.returncode, "".join(lines), stderr, time.monotonic() - started), fault


def site(env: dict[str, str]) -> Run:
    """ansible-playbook -i inventories/demo site.yml --tags TAGS."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY), SITE, "--tags", TAGS]
    return run(cmd, env, 900)


def evidence(result: Run, lines: int = 60) -> str:
    recap = "\n".join(f"  {h}: {c}" for h, c in sorted(result.recap().items()))
    return f"rc={result.returncode}, recap:\n{recap}\ntail of the output:\n{result.tail(lines)}"


def step(name: str, result: Run) -> Run:
    print(f"[{result.seconds:6.1f} s] {name}: rc={result.returncode} recap={result.recap()}")
    return result


@pytest.fixture(scope="module")
def clock() -> Iterator[float]:
    started = time.monotonic()
    yield started
    print(f"\nfault mid-run test, wall time: {time.monotonic() - started:.1f} s")


@pytest.fixture(scope="module")
def emulator(clock: float) -> Iterator[EmulatorCli]:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_fault_midrun: {reason}")
        pytest.skip(reason)
    if docker("image", "inspect", IMAGE, check=False).returncode:
        print(f"{IMAGE} is missing: building it with tools/image/build.sh (make image)")
        built = subprocess.run([str(REPO / "tools" / "image" / "build.sh")], cwd=REPO, check=False)
        assert built.returncode == 0, "tools/image/build.sh failed; see its output above"
    cli = EmulatorCli(
        backend="docker",
        delay=0.2,
        env={"CLOUDTPU_EMULATOR_ID": EMULATOR_ID, "CLOUDTPU_EMULATOR_IMAGE": IMAGE},
    ).start()
    try:
        yield cli
    finally:
        cli.stop()
        removed = subprocess.run(
            [*CLEANUP, "--id", EMULATOR_ID],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            check=False,
        )
        print(f"docker backend cleanup after the test: {removed.stdout.strip()}")
        left = docker("ps", "-a", "--filter", f"label={LABEL}", "--format", "{{.Names}}").stdout
        assert left.strip() == "", f"containers left behind: {left}"


@pytest.fixture(scope="module")
def ssh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("fault")
    key = folder / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tpu@fault", "-f", str(key)],
        check=True,
    )
    (folder / "cp").mkdir()
    return {"key": key, "known_hosts": folder / "known_hosts", "folder": folder}


@pytest.fixture(scope="module")
def env(emulator: EmulatorCli, ssh: dict[str, Path]) -> dict[str, str]:
    folder = ssh["folder"]
    return ansible_env(
        emulator.api_url,
        ANSIBLE_PRIVATE_KEY_FILE=str(ssh["key"]),
        ANSIBLE_REMOTE_USER="tpu",
        ANSIBLE_HOST_KEY_CHECKING="True",
        # A stopped worker's address answers nothing: give up connecting after 10 s, not 30.
        ANSIBLE_TIMEOUT="10",
        ANSIBLE_SSH_ARGS=(
            "-o ControlMaster=auto -o ControlPersist=60s -o StrictHostKeyChecking=accept-new "
            f"-o UserKnownHostsFile={ssh['known_hosts']} -o ServerAliveInterval=5 "
            "-o ServerAliveCountMax=3"
        ),
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(folder / "cp"),
        ANSIBLE_LOCAL_TEMP=str(folder / "ansible-tmp"),
        # Facts of this pod only: no cached facts of an earlier pod with the same host names.
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(folder / "facts"),
    )


@pytest.fixture(scope="module")
def pod(env: dict[str, str], ssh: dict[str, Path]) -> dict[str, str]:
    """The provisioned v4-16: worker index -> container name."""
    variables = {
        "tpu_provision_name": NODE,
        "tpu_provision_project": PROJECT,
        "tpu_provision_zone": ZONE,
        "tpu_provision_accelerator_type": "v4-16",
        "tpu_provision_ssh_user": "tpu",
        "tpu_provision_ssh_public_key_file": f"{ssh['key']}.pub",
        "tpu_provision_known_hosts": str(ssh["known_hosts"]),
        "tpu_provision_poll_interval": 0.5,
        "tpu_provision_ssh_timeout": 180,
    }
    provisioned = step("provision", playbook("provision.yml", env, *extra_vars(variables)))
    assert provisioned.returncode == 0, evidence(provisioned, 80)
    assert sorted(h for h in provisioned.recap() if h != "localhost") == [W0, W1], evidence(
        provisioned
    )
    return {"w0": worker_container(0), "w1": worker_container(1)}


@pytest.fixture(scope="module")
def faulted(env: dict[str, str], pod: dict[str, str]) -> tuple[Run, Fault]:
    """site.yml with worker 1 stopped when the remote shell play starts."""

    def stop_worker1() -> subprocess.CompletedProcess:
        return docker("stop", pod["w1"], check=False)

    result, fault = stream_playbook(SITE, env, ["--tags", TAGS], TRIGGER, stop_worker1)
    step("site.yml, worker 1 stopped mid-run", result)
    print(
        f"worker 1 ({pod['w1']}) stopped at {fault.at:.1f} s, on {fault.line!r}; "
        f"docker stop took {fault.stop_seconds:.1f} s ({fault.stop_output})"
    )
    return result, fault


@pytest.fixture(scope="module")
def back(
    emulator: EmulatorCli, env: dict[str, str], pod: dict[str, str], faulted: tuple[Run, Fault]
) -> dict[str, Any]:
    """Worker 1 started again; what the remote shell role had left on it before any re-run."""
    before = hosts_addresses(env)
    docker("start", pod["w1"])
    address = container_ip(pod["w1"])
    deadline = time.monotonic() + 120
    while not (address and ssh_banner(address)) and time.monotonic() < deadline:
        time.sleep(0.5)
        address = container_ip(pod["w1"])
    assert address and ssh_banner(address), f"sshd of {pod['w1']} did not answer on {address!r}"
    how = "same address, the inventory is unchanged"
    if address != before.get(W1):
        # The API still shows the old address: a maintenance event reads them again.
        node = emulator.admin(
            "POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:maintenance"
        )
        assert node["health"] == "UNHEALTHY_MAINTENANCE", node
        deadline = time.monotonic() + 120
        while emulator.node(NODE).get("health") != "HEALTHY" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert emulator.node(NODE)["health"] == "HEALTHY", emulator.node(NODE)
        how = f"address changed {before.get(W1)} -> {address}: maintenance event"
    after = hosts_addresses(env)
    print(f"worker 1 back: {how}; inventory {after}")
    assert after[W1] == container_ip(pod["w1"]), (after, container_ip(pod["w1"]))
    return {"how": how, "effects": effects(pod["w1"])}


@pytest.fixture(scope="module")
def rerun(env: dict[str, str], back: dict[str, Any]) -> Run:
    return step("site.yml again", site(env))


@pytest.fixture(scope="module")
def third(env: dict[str, str], rerun: Run) -> Run:
    return step("site.yml a third time", site(env))


def test_the_fault_hit_worker1_mid_run(faulted: tuple[Run, Fault]) -> None:
    result, fault = faulted
    assert fault.line, f"no line started with {TRIGGER!r}; worker 1 was never stopped\n" + (
        evidence(result)
    )
    assert "TASK [cloudtpu.pod.remote_shell" in "\n".join(fault.after), (
        "the remote shell role had no task left after the stop\n" + evidence(result)
    )


def test_the_run_fails(faulted: tuple[Run, Fault]) -> None:
    result, _ = faulted
    assert result.returncode != 0, evidence(result)


def test_the_run_reports_worker1(faulted: tuple[Run, Fault]) -> None:
    result, fault = faulted
    counts = result.recap().get(W1, {})
    assert counts.get("unreachable", 0) + counts.get("failed", 0) >= 1, evidence(result)
    reported = [line for line in fault.after if line.startswith(f"fatal: [{W1}]")]
    assert reported, "no 'fatal: [" + W1 + "]' line after the stop\n" + evidence(result)
    print(reported[0])


def test_worker0_finished_cleanly(faulted: tuple[Run, Fault]) -> None:
    result, _ = faulted
    counts = result.recap().get(W0, {})
    assert counts and counts["failed"] == 0 and counts["unreachable"] == 0, evidence(result)


def test_worker0_has_the_last_roles_effects(
    faulted: tuple[Run, Fault], pod: dict[str, str]
) -> None:
    result, _ = faulted
    found = effects(pod["w0"])
    assert not any(found.values()), f"missing on worker 0: {found}\n" + evidence(result)


def test_worker1_stopped_before_its_remaining_tasks(
    faulted: tuple[Run, Fault], back: dict[str, Any]
) -> None:
    result, _ = faulted
    missing = {k: v for k, v in back["effects"].items() if v}
    assert missing, (
        "worker 1 already had every effect of the remote shell role when it came back: the "
        f"stop landed too late to test anything\n{back['effects']}\n" + evidence(result)
    )
    print(f"missing on worker 1 before the re-run: {missing}")


def test_the_rerun_converges_worker1_only(rerun: Run, pod: dict[str, str]) -> None:
    recap = rerun.recap()
    assert rerun.returncode == 0, evidence(rerun, 80)
    assert recap[W1]["changed"] > 0, evidence(rerun)
    assert recap[W0]["changed"] == 0, "worker 0 changed on the re-run\n" + evidence(rerun)
    for host in (W0, W1):
        assert recap[host]["failed"] == 0 and recap[host]["unreachable"] == 0, evidence(rerun)
    found = effects(pod["w1"])
    assert not any(found.values()), f"missing on worker 1 after the re-run: {found}"


def test_a_third_run_changes_nothing(third: Run) -> None:
    recap = third.recap()
    assert third.returncode == 0, evidence(third, 80)
    assert {h: recap.get(h, {}).get("changed") for h in (W0, W1)} == {W0: 0, W1: 0}, evidence(third)
