"""An emulated pod for the day-two playbooks (run.yml, sync.yml, logs.yml); reading their runs.

provisioned() makes one node on the emulator's Docker backend (each worker a systemd+sshd
container), reached over SSH as ``tpu`` with host key checking on, and bootstraps only what
these playbooks need:
  * the libtpu role: run.yml calls tpu-unlock (with sudo) before every start;
  * a venv made with ``python3 -m venv --without-pip`` at the login contract's place
    (``~/.venv310``, the demo inventory's Python 3.10): run.yml only sources ``bin/activate``,
    so installing Python packages (the python and framework roles, minutes per worker) would
    prove nothing more here. A ``framework.env`` like the framework role's stands in for it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import forked_cli
from tests.integration.lifecycle_support import (
    BIN,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    Run,
    ansible_env,
    extra_vars,
    playbook,
    run,
)

IMAGE = "cloudtpu-pod-worker:current"
CLEANUP = [str(BIN / "python"), "-m", "tools.tpu_emulator.docker_backend", "cleanup"]
VENV_NAME = ".venv" + (os.environ.get("CLOUDTPU_TEST_PYTHON") or "3.10").replace(".", "")
HOME = "/home/tpu"
VENV = f"{HOME}/{VENV_NAME}"
RUN_ID = re.compile(r"run (\d{8}T\d{6}Z-[0-9a-f]{4}), logs in")


@dataclass
class Pod:
    env: dict[str, str]
    tmp: Path
    group: str
    # the emulator that made the node (its admin API preempts it), when provisioned() made it
    emulator: EmulatorCli | None = None

    def play(self, name: str, *args: str, cwd: Path | None = None) -> Run:
        result = playbook(name, self.env, *args) if cwd is None else self._play_in(cwd, name, args)
        print(f"[{result.seconds:5.1f} s] {name} {' '.join(args)}: rc={result.returncode}")
        return result

    def _play_in(self, cwd: Path, name: str, args: tuple[str, ...]) -> Run:
        cmd = [
            str(BIN / "ansible-playbook"),
            "-i",
            str(REPO / "inventories" / "demo"),
            str(REPO / "playbooks" / name),
            *args,
        ]
        started = time.monotonic()
        done = forked_cli.run(cmd, cwd=cwd, env=self.env, timeout=600)
        return Run(cmd, done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def shell(self, command: str, host: str = "") -> dict[str, str]:
        """Run a shell command as the connection user on the workers; stdout per worker."""
        result = run(
            [
                str(BIN / "ansible"),
                "-i",
                "inventories/demo",
                host or self.group,
                "-m",
                "ansible.builtin.shell",
                "-a",
                command,
                "-o",
            ],
            self.env,
            300,
        )
        assert result.returncode == 0, result.tail()
        found = {}
        for line in result.stdout.splitlines():
            match = re.match(r"^(\S+) \| CHANGED \| rc=0 \| \(stdout\) (.*)$", line)
            if match:
                found[match[1]] = match[2].replace("\\n", "\n")
            elif re.match(r"^(\S+) \| CHANGED \| rc=0", line):
                found[line.split()[0]] = ""
        return found


def docker_unavailable() -> str:
    if shutil.which("docker") is None:
        return "the docker command is not installed (make docker installs it)"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True, check=False)
    if info.returncode != 0:
        return f"no Docker daemon answers (make docker starts one): {info.stderr.strip()[:200]}"
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        return f"the worker image {IMAGE} is missing (make image builds it)"
    return ""


def keygen(path: Path) -> Path:
    """A new ed25519 key pair at path (and path.pub); returns path."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


@contextmanager
def provisioned(
    folder: Path,
    node: str,
    accelerator_type: str,
    emulator_id: str,
    metadata: dict[str, Any] | None = None,
) -> Iterator[Pod]:
    """The node provisioned as ``tpu`` (with ``metadata`` added), libtpu and tpu's venv on it;
    the emulator stopped and its containers removed afterwards."""
    key = keygen(folder / "id_ed25519")
    (folder / "cp").mkdir()
    emulator = EmulatorCli(
        backend="docker",
        delay=0.2,
        env={"CLOUDTPU_EMULATOR_ID": emulator_id, "CLOUDTPU_EMULATOR_IMAGE": IMAGE},
    ).start()
    env = ansible_env(
        emulator.api_url,
        ANSIBLE_REMOTE_USER="tpu",
        ANSIBLE_PRIVATE_KEY_FILE=str(key),
        ANSIBLE_SSH_ARGS=(
            "-o ControlMaster=auto -o ControlPersist=120s -o StrictHostKeyChecking=accept-new "
            f"-o UserKnownHostsFile={folder / 'known_hosts'} -o ServerAliveInterval=5"
        ),
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(folder / "cp"),
        ANSIBLE_LOCAL_TEMP=str(folder / "ansible-tmp"),
    )
    pod = Pod(env, folder, "tpu_node_" + node.replace("-", "_"), emulator)
    try:
        up = pod.play(
            "provision.yml",
            *extra_vars(
                {
                    "tpu_provision_name": node,
                    "tpu_provision_project": PROJECT,
                    "tpu_provision_zone": ZONE,
                    "tpu_provision_accelerator_type": accelerator_type,
                    "tpu_provision_ssh_user": "tpu",
                    "tpu_provision_ssh_public_key_file": f"{key}.pub",
                    "tpu_provision_known_hosts": str(folder / "known_hosts"),
                    "tpu_provision_poll_interval": 0.5,
                    "tpu_provision_ssh_timeout": 180,
                    "tpu_provision_metadata": metadata or {},
                }
            ),
        )
        assert up.returncode == 0, up.tail(60)
        # the libtpu role alone (its own play, as site.yml runs it): tpu-unlock on every worker
        bootstrap = folder / "libtpu.yml"
        bootstrap.write_text(
            "- hosts: tpu\n  become: true\n  gather_facts: true\n  roles: [cloudtpu.pod.libtpu]\n"
        )
        libtpu = run(
            [str(BIN / "ansible-playbook"), "-i", "inventories/demo", str(bootstrap)],
            env,
            600,
        )
        assert libtpu.returncode == 0, libtpu.tail(60)
        pod.shell(
            f"python3 -m venv --without-pip {VENV} && "
            f"printf 'PJRT_DEVICE=TPU\\n' > {VENV}/framework.env"
        )
        yield pod
    finally:
        emulator.stop()
        leftovers = subprocess.run(
            [*CLEANUP, "--id", emulator_id],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            check=False,
        )
        print(f"docker backend cleanup after the test: {leftovers.stdout.strip()}")


def table(result: Run) -> dict[str, dict[str, object]]:
    """The run's table (the debug task's msg list): worker -> {rc, lines}."""
    block = result.stdout.split("TASK [Show the result of every worker]", 1)[-1]
    start = block.index('"msg": [') + len('"msg": ')
    lines = json.loads(block[start : block.index("\n    ]", start) + 6])
    width = len(lines[1].split()[0])
    rows: dict[str, dict[str, object]] = {}
    current = ""
    for line in lines[2:-1]:
        host, code, text = (
            line[:width].strip(),
            line[width + 2 : width + 10].strip(),
            line[width + 12 :],
        )
        if host:
            current = host
            rows[host] = {"rc": code, "lines": []}
        rows[current]["lines"].append(text)  # type: ignore[union-attr]
    return rows


def run_id(result: Run) -> str:
    match = RUN_ID.search(result.stdout)
    assert match, result.tail(40)
    return match[1]
