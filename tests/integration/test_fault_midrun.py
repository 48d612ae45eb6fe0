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

Skipped, with the reason printed, only when no Docker daemon answers. The means (the pod's
names, docker commands, the streamed run that stops worker 1, the evidence) are in
fault_midrun_support.py; this file is the scenario and what it must show.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fault_midrun_support import (
    CLEANUP,
    EMULATOR_ID,
    IMAGE,
    LABEL,
    NODE,
    SITE,
    TAGS,
    TRIGGER,
    W0,
    W1,
    Fault,
    container_ip,
    docker,
    effects,
    evidence,
    hosts_addresses,
    site,
    step,
    stream_playbook,
    worker_container,
)
from tests.integration.lifecycle_support import (
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    Run,
    ansible_env,
    extra_vars,
    playbook,
)
from tests.integration.test_lifecycle_docker import docker_unavailable
from tools.tpu_emulator.docker_worker import ssh_banner


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
