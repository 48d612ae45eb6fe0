"""The whole lifecycle for real, on this machine: the emulator with its Docker backend makes every
TPU worker a systemd+sshd container, and the playbooks reach them over SSH with host key checking
on (a fresh known_hosts file, StrictHostKeyChecking=accept-new).

provision a v4-16 (two workers) -> provision again (changed=0) -> add a user's key to the
ssh-keys metadata (patched in place, the running workers accept it) -> the inventory shows both
workers -> ansible reaches both as the login user, with sudo -> a maintenance event restarts
them (addresses read again) -> teardown.yml refuses without confirmation, then removes the
containers and the node's network.

A preemption and recover.yml on Docker workers are the README journey's steps (preempt, recover,
run-again in tests/journey/test_journey.py) and test_lifecycle_day_two.py's (recover as the login
user): not repeated here.

Skipped, with the reason printed, only when no Docker daemon answers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.lifecycle_support import (
    BIN,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    ansible_env,
    extra_vars,
    inventory,
    playbook,
    run,
    step,
)

IMAGE = "cloudtpu-pod-worker:current"
NODE = "pod-e2e"
GROUP = "tpu_node_pod_e2e"
WORKERS = ["pod-e2e-w0", "pod-e2e-w1"]
EMULATOR_ID = f"it{os.getpid()}"
LABEL = f"cloudtpu.emulator={EMULATOR_ID}"
CLEANUP = [str(BIN / "python"), "-m", "tools.tpu_emulator.docker_backend", "cleanup"]


def docker(*args: str, check: bool = True) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def docker_unavailable() -> str:
    if shutil.which("docker") is None:
        return "the docker command is not installed (make docker installs it)"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        return f"no Docker daemon answers (make docker starts one): {info.stderr.strip()[:200]}"
    return ""


def containers(all_states: bool = True) -> dict[str, dict[str, str]]:
    """This test's worker containers: name -> {id, state, ip}."""
    args = ["ps", "--filter", f"label={LABEL}", "--format", "{{.Names}}"]
    if all_states:
        args.insert(1, "-a")
    found = {}
    for name in docker(*args).split():
        fmt = "{{.Id}} {{.State.Status}} {{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}"
        parts = docker("inspect", "--format", fmt, name).split()
        found[name] = {"id": parts[0], "state": parts[1], "ip": parts[2] if len(parts) > 2 else ""}
    return found


@pytest.fixture(scope="module")
def worker_image() -> str:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_lifecycle_docker: {reason}")
        pytest.skip(reason)
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        print(f"{IMAGE} is missing: building it with tools/image/build.sh (make image)")
        built = subprocess.run([str(REPO / "tools" / "image" / "build.sh")], cwd=REPO, check=False)
        assert built.returncode == 0, "tools/image/build.sh failed; see its output above"
    return IMAGE


@pytest.fixture(scope="module")
def emulator(worker_image: str) -> Iterator[EmulatorCli]:
    cli = EmulatorCli(
        backend="docker",
        delay=0.2,
        env={"CLOUDTPU_EMULATOR_ID": EMULATOR_ID, "CLOUDTPU_EMULATOR_IMAGE": worker_image},
    ).start()
    try:
        yield cli
    finally:
        cli.stop()
        leftovers = subprocess.run(
            [*CLEANUP, "--id", EMULATOR_ID],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            check=False,
        )
        print(f"docker backend cleanup after the test: {leftovers.stdout.strip()}")


@pytest.fixture(scope="module")
def ssh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("ssh")
    key = folder / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tpu@lifecycle", "-f", str(key)],
        check=True,
    )
    control = folder / "cp"
    control.mkdir()
    return {
        "key": key,
        "pub": folder / "id_ed25519.pub",
        "known_hosts": folder / "known_hosts",
        "control": control,
        "tmp": folder,
    }


def test_provision_maintenance_teardown(emulator: EmulatorCli, ssh: dict[str, Path]) -> None:
    started = time.monotonic()
    known_hosts = ssh["known_hosts"]
    pub = ssh["pub"].read_text().strip()
    env = ansible_env(
        emulator.api_url,
        ANSIBLE_PRIVATE_KEY_FILE=str(ssh["key"]),
        ANSIBLE_REMOTE_USER="tpu",
        ANSIBLE_HOST_KEY_CHECKING="True",
        ANSIBLE_SSH_ARGS=(
            "-o ControlMaster=auto -o ControlPersist=60s -o StrictHostKeyChecking=accept-new "
            f"-o UserKnownHostsFile={known_hosts} -o ServerAliveInterval=5 "
            "-o ServerAliveCountMax=3"
        ),
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(ssh["control"]),
        ANSIBLE_LOCAL_TEMP=str(ssh["tmp"] / "ansible-tmp"),
    )
    variables = extra_vars(
        {
            "tpu_provision_name": NODE,
            "tpu_provision_project": PROJECT,
            "tpu_provision_zone": ZONE,
            "tpu_provision_accelerator_type": "v4-16",
            "tpu_provision_ssh_user": "tpu",
            "tpu_provision_ssh_public_key_file": str(ssh["pub"]),
            "tpu_provision_known_hosts": str(known_hosts),
            "tpu_provision_poll_interval": 0.5,
            "tpu_provision_ssh_timeout": 180,
            "tpu_ssh_config_record": str(ssh["tmp"] / "ssh_config_record.json"),
            "tpu_teardown_poll_interval": 0.5,
        }
    )

    # provision: two worker containers, READY once sshd answers; SSH waits on both.
    first = step("provision", playbook("provision.yml", env, *variables))
    assert first.returncode == 0, first.tail(80)
    recap = first.recap()
    assert recap["localhost"]["changed"] >= 1, recap
    assert sorted(h for h in recap if h != "localhost") == WORKERS, recap
    running = containers(all_states=False)
    assert len(running) == 2, running

    # provision again: nothing changes anywhere.
    second = step("provision again", playbook("provision.yml", env, *variables))
    assert second.returncode == 0, second.tail(80)
    assert all(c["changed"] == 0 for c in second.recap().values()), second.recap()

    # a second user's key added to the ssh-keys metadata is patched in place (no new node) and
    # reaches the running workers, as the guest agent applies it on a TPU VM.
    with_ana = [*variables, *extra_vars({"tpu_provision_metadata": {"ssh-keys": f"ana:{pub}"}})]
    patched = step("provision with another user", playbook("provision.yml", env, *with_ana))
    assert patched.returncode == 0, patched.tail(80)
    assert patched.recap()["localhost"]["changed"] == 1, patched.recap()
    assert {c["id"] for c in containers().values()} == {c["id"] for c in running.values()}
    as_ana = run(
        [
            str(BIN / "ansible"),
            "-i",
            "inventories/demo",
            GROUP,
            "-u",
            "ana",
            "-m",
            "ansible.builtin.ping",
        ],
        env,
        300,
    )
    assert as_ana.returncode == 0 and as_ana.stdout.count('"ping": "pong"') == 2, as_ana.tail()
    variables = with_ana

    # the inventory shows the two workers, at the containers' addresses.
    data = inventory(env)
    assert sorted(data[GROUP]["hosts"]) == WORKERS, data.get(GROUP)
    addresses = sorted(data["_meta"]["hostvars"][h]["ansible_host"] for h in WORKERS)
    assert addresses == sorted(c["ip"] for c in running.values()), (addresses, running)

    # ansible reaches both as the login user over SSH, and sudo works there.
    ping = step(
        "ansible ping",
        run(
            [
                str(BIN / "ansible"),
                "-i",
                "inventories/demo",
                GROUP,
                "-u",
                "tpu",
                "-m",
                "ansible.builtin.ping",
            ],
            env,
            300,
        ),
    )
    assert ping.returncode == 0, ping.tail()
    assert ping.stdout.count('"ping": "pong"') == 2, ping.stdout
    whoami = run(
        [
            str(BIN / "ansible"),
            "-i",
            "inventories/demo",
            GROUP,
            "-u",
            "tpu",
            "-b",
            "-m",
            "ansible.builtin.command",
            "-a",
            "id -un",
        ],
        env,
        300,
    )
    assert whoami.returncode == 0 and whoami.stdout.count("root") == 2, whoami.tail()
    hostnames = run(
        [
            str(BIN / "ansible"),
            "-i",
            "inventories/demo",
            GROUP,
            "-u",
            "tpu",
            "-m",
            "ansible.builtin.command",
            "-a",
            "hostname",
        ],
        env,
        300,
    )
    assert hostnames.stdout.count("t1v-n-") == 2, hostnames.stdout
    # host key checking stayed on: the workers' keys were recorded (maybe hashed) on first use.
    for ip in addresses:
        found = subprocess.run(
            ["ssh-keygen", "-F", ip, "-f", str(known_hosts)],
            check=False,
            capture_output=True,
            text=True,
        )
        assert found.returncode == 0, f"no host key for {ip} in {known_hosts.read_text()}"

    # a maintenance event restarts the workers; the API reports unhealthy, then healthy with the
    # addresses read again, and the inventory still leads to both workers.
    renewed = containers(all_states=False)
    booted = {n: docker("inspect", "--format", "{{.State.StartedAt}}", n) for n in renewed}
    node = emulator.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:maintenance")
    assert node["health"] == "UNHEALTHY_MAINTENANCE", node
    deadline = time.monotonic() + 120
    while emulator.node(NODE).get("health") != "HEALTHY" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert emulator.node(NODE)["health"] == "HEALTHY", emulator.node(NODE)
    rebooted = {n: docker("inspect", "--format", "{{.State.StartedAt}}", n) for n in renewed}
    assert all(rebooted[n] != booted[n] for n in renewed), (booted, rebooted)
    endpoints = sorted(e["ipAddress"] for e in emulator.node(NODE)["networkEndpoints"])
    assert endpoints == sorted(c["ip"] for c in containers(all_states=False).values())
    after_maintenance = step(
        "ansible ping after maintenance",
        run(
            [
                str(BIN / "ansible"),
                "-i",
                "inventories/demo",
                GROUP,
                "-u",
                "tpu",
                "-m",
                "ansible.builtin.ping",
            ],
            env,
            300,
        ),
    )
    assert after_maintenance.returncode == 0, after_maintenance.tail()

    # teardown: refused without confirmation, then everything is removed.
    refused = step("teardown unconfirmed", playbook("teardown.yml", env, *variables))
    assert refused.returncode != 0
    assert "-e tpu_teardown_confirm=true" in refused.output, refused.tail()
    assert len(containers(all_states=False)) == 2
    gone = step(
        "teardown", playbook("teardown.yml", env, *variables, "-e", "tpu_teardown_confirm=true")
    )
    assert gone.returncode == 0, gone.tail()
    assert containers() == {}, docker("ps", "-a", "--filter", f"label={LABEL}")
    networks = docker("network", "ls", "--filter", f"label={LABEL}", "--format", "{{.Name}}")
    assert networks.strip() == "", networks
    assert emulator.node(NODE) is None
    print(f"lifecycle end to end: {time.monotonic() - started:.1f} s")
