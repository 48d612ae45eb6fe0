"""Pull mode for real: provision.yml with tpu_provision_bootstrap=pull gives the node a
startup-script, the emulator's Docker worker runs it at boot as a TPU VM does, and the worker
bootstraps itself (a pinned Ansible in a venv, ansible-pull of site.yml from this repository,
local connection) while the controller only waits for its result.

As on Google Cloud, the worker authenticates with its VM's service account (auth kind
machineaccount: google-auth's compute-engine credentials ask the metadata server at
metadata.google.internal for a token; the emulator serves one on every node's Docker network and
its API accepts the tokens it hands out), and it publishes its result as a guest attribute of
its VM, which provision.yml and recover.yml read through the TPU API (getGuestAttributes), with
no SSH. The test proves both from the emulator's side: API calls made with the tokens its
metadata servers handed out, getGuestAttributes calls, and the result the API shows.

The worker runs exactly the repository's HEAD commit (`git rev-parse HEAD`, given as
tpu_provision_pull_version, checked against its checkout before anything of it runs), and
installs uv, Ansible and their dependencies from the collection's lock with --require-hashes:
the lock's hashes are those of the files the package index serves the worker.

Where this differs from Google Cloud: the emulator's API is reached over plain http at
host.docker.internal, and the repository too, over git:// from `git daemon` on this machine, so
the run names that host in tpu_provision_pull_api_http_hosts (the token crosses the Docker
network in clear) and in tpu_provision_pull_repo_http_hosts (the code comes unauthenticated; the
commit id still says what it must be); on Google Cloud the workers call
https://tpu.googleapis.com and clone over HTTPS or SSH. One worker (v4-8)
and the python and libtpu roles only, to keep it short. The controller still checks the worker
over SSH afterwards (the test's own evidence, not provision's): the pull's exit code file says
0, the login user's venv runs, tpu-unlock is installed, and the metadata server refuses requests
without the Metadata-Flavor header or with X-Forwarded-For. Then recover.yml recreates the node:
it waits for the new worker's own pull (the startup-script comes back with the spec), reading
the new VM's guest attributes, and runs no role from the controller.

Skipped, with the reason printed, when no Docker daemon answers or git is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.lifecycle_support import (
    BIN,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    ansible_env,
    extra_vars,
    playbook,
    run,
)
from tests.integration.test_lifecycle_docker import docker_unavailable
from tools.tpu_emulator.testing import call

IMAGE = os.environ.get("CLOUDTPU_TEST_IMAGE", "cloudtpu-pod-worker:current")
NODE = "pod-pull"
WORKER = "pod-pull-w0"
EMULATOR_ID = f"pull{os.getpid()}"
PYTHON = os.environ.get("CLOUDTPU_TEST_PYTHON", "3.10")
CLEANUP = [str(BIN / "python"), "-m", "tools.tpu_emulator.docker_backend", "cleanup"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def worker_image() -> str:
    reason = docker_unavailable() or ("" if shutil.which("git") else "git is not installed")
    if reason:
        print(f"SKIPPED test_pull_bootstrap: {reason}")
        pytest.skip(reason)
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        print(f"{IMAGE} is missing: building it with tools/image/build.sh (make image)")
        built = subprocess.run([str(REPO / "tools" / "image" / "build.sh")], cwd=REPO, check=False)
        assert built.returncode == 0, "tools/image/build.sh failed; see its output above"
    return IMAGE


@pytest.fixture(scope="module")
def git_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """This repository's HEAD, served read-only by git daemon; yields the URL workers use and
    the commit (git rev-parse HEAD)."""
    base = tmp_path_factory.mktemp("git")
    bare = base / "cloudtpu-pod.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(REPO), str(bare)], check=True)
    commit = subprocess.run(
        ["git", "-C", str(bare), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    port = free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--export-all", "--reuseaddr", "--informative-errors",
         f"--base-path={base}", "--listen=0.0.0.0", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(50):
            probe = subprocess.run(
                ["git", "ls-remote", f"git://127.0.0.1:{port}/cloudtpu-pod.git", "HEAD"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if probe.returncode == 0:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"git daemon did not answer on port {port}: {probe.stderr}")
        yield f"git://host.docker.internal:{port}/cloudtpu-pod.git", commit
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@pytest.fixture(scope="module")
def emulator(worker_image: str) -> Iterator[EmulatorCli]:
    cli = EmulatorCli(
        backend="docker",
        delay=0.2,
        env={"CLOUDTPU_EMULATOR_ID": EMULATOR_ID, "CLOUDTPU_EMULATOR_IMAGE": worker_image},
        host="0.0.0.0",
    ).start()
    try:
        yield cli
    finally:
        cli.stop()
        subprocess.run(
            [*CLEANUP, "--id", EMULATOR_ID],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            check=False,
        )


def published(emulator: EmulatorCli) -> dict[str, Any]:
    """Worker 0's pull result as the TPU API shows it (getGuestAttributes, from here)."""
    status, body = call(
        emulator.root_url,
        "POST",
        f"/v2/projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:getGuestAttributes",
        {"queryPath": "cloudtpu/pull-result", "workerIds": ["0"]},
    )
    assert status == 200, body
    items = body["guestAttributes"][0]["queryValue"].get("items") or []
    assert len(items) == 1, body
    return json.loads(items[0]["value"])


def test_a_worker_bootstraps_itself(
    emulator: EmulatorCli, git_server: tuple[str, str], tmp_path: Path
) -> None:
    repo, commit = git_server
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    known_hosts = tmp_path / "known_hosts"
    env = ansible_env(
        emulator.api_url,
        ANSIBLE_PRIVATE_KEY_FILE=str(key),
        ANSIBLE_REMOTE_USER="tpu",
        ANSIBLE_SSH_ARGS=f"-o StrictHostKeyChecking=accept-new -o UserKnownHostsFile={known_hosts}",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
    )
    port = emulator.api_url.rsplit(":", 1)[1].split("/", 1)[0]
    common = {
        "tpu_provision_name": NODE,
        "tpu_provision_project": PROJECT,
        "tpu_provision_zone": ZONE,
        "tpu_provision_ssh_user": "tpu",
        "tpu_provision_ssh_public_key_file": f"{key}.pub",
        "tpu_provision_known_hosts": str(known_hosts),
        "tpu_provision_poll_interval": 0.5,
        "tpu_teardown_poll_interval": 0.5,
    }
    pull = {
        "tpu_provision_accelerator_type": "v4-8",
        "tpu_provision_bootstrap": "pull",
        "tpu_provision_pull_repo": repo,
        # git:// beyond loopback, asked for by name; the commit the worker must check out
        "tpu_provision_pull_repo_http_hosts": ["host.docker.internal"],
        "tpu_provision_pull_version": commit,
        "tpu_provision_pull_tags": ["python", "libtpu"],
        "tpu_provision_pull_auth_kind": "machineaccount",
        "tpu_provision_pull_api_endpoint": f"http://host.docker.internal:{port}/v2",
        "tpu_provision_pull_api_http_hosts": ["host.docker.internal"],
        "tpu_provision_pull_vars": {"tpu_python_version": PYTHON},
        "tpu_provision_pull_timeout": 900,
    }
    try:
        emulator.admin("POST", "stats/reset")
        provision = playbook("provision.yml", env, *extra_vars({**common, **pull}), timeout=1200)
        print(f"[{provision.seconds:6.1f} s] provision with pull: rc={provision.returncode}")
        assert provision.returncode == 0, provision.tail(80)
        finished = f"{NODE} worker 0: bootstrapped itself, ansible-pull exit code 0 after"
        assert finished in provision.stdout, provision.tail(40)
        # a line per poll, with the workers done out of all, under the default callback
        progress = [ln for ln in provision.stdout.splitlines() if ln.startswith("pull bootstrap:")]
        print(f"{len(progress)} progress lines, the last: {progress[-1:]}")
        assert progress and progress[-1].startswith("pull bootstrap: 1 of 1 workers done ("), (
            progress[-3:]
        )
        # The controller ran no bootstrap play and read the result without SSH: the worker's
        # play only forgot old facts and saw SSH answer (tpu_provision_wait_for_ssh).
        assert (
            "PLAY [Bootstrap" not in provision.stdout
            and "cloudtpu.pod.python" not in provision.stdout
        )
        worker = provision.recap()[WORKER]
        assert worker["changed"] == 0 and worker["failed"] == 0 and worker["ok"] <= 2, worker
        assert "ya29." not in provision.output  # no worker token reaches the output

        # The emulator's side: the worker's inventory called the API with a token that its
        # metadata server handed out (machineaccount), and provision read the result through
        # getGuestAttributes, which shows it.
        stats = emulator.admin("GET", "stats")
        print("emulator:", stats["service_account_tokens"], stats["backend"])
        assert stats["backend"]["metadata_servers"] >= 1, stats["backend"]
        assert stats["service_account_tokens"]["api_calls"] >= 1, stats["service_account_tokens"]
        assert stats["by_route"].get("POST nodes.getGuestAttributes", 0) >= 1, stats["by_route"]
        assert published(emulator)["state"] == "done" and published(emulator)["rc"] == 0

        venv = f"~/.venv{PYTHON.replace('.', '')}"
        metadata = "http://metadata.google.internal/computeMetadata/v1/instance/name"
        code = "curl -s -o /dev/null -w '%{http_code}\\n' -H 'Metadata-Flavor: Google'"
        checks = (
            f"cat /var/lib/cloudtpu/pull.rc; {venv}/bin/python -V; command -v tpu-unlock; "
            "sudo stat -c '%a %U' /etc/cloudtpu/pull/env; "
            "sudo grep -c 'ok=' /var/log/cloudtpu-pull.log; "
            "sudo grep -c -e GCP_ACCESS_TOKEN -e accesstoken /etc/cloudtpu/pull/env; "
            f"{code} {metadata}; {code} -H 'X-Forwarded-For: 10.9.9.9' {metadata}; "
            f"curl -s -o /dev/null -w '%{{http_code}}\\n' {metadata}; "
            "sudo grep '^pull: ' /var/log/cloudtpu-pull.log"
        )
        ansible = [str(BIN / "ansible"), "-i", "inventories/demo", WORKER]
        probe = run([*ansible, "-m", "ansible.builtin.shell", "-a", checks], env, 120)
        assert probe.returncode == 0, probe.tail()
        lines = probe.stdout.split(">>", 1)[1].split("\n")[1:]
        print("worker:", *lines, sep="\n  ")
        assert lines[0] == "0", lines
        assert lines[1] == f"Python {PYTHON}" or lines[1].startswith(f"Python {PYTHON}."), lines
        assert lines[2] == "/usr/local/bin/tpu-unlock", lines
        assert lines[3] == "600 root", lines
        assert int(lines[4]) >= 1, lines  # the worker's own PLAY RECAP
        assert lines[5] == "0", lines  # no token handed in: the VM's service account
        assert lines[6:9] == ["200", "403", "403"], lines  # the header; forwarded; no header
        # the exact commit, checked; the toolchain from the lock, with its hashes
        log = "\n".join(lines[9:])
        assert f"at commit {commit} (the one asked for)" in log, log
        assert "dependencies with uv, with the lock's hashes" in log, log
        assert f"ansible-pull of site.yml for {WORKER} (commit {commit}, tags " in log, log

        # recover.yml recreates the node with its spec, startup-script included: the new worker
        # bootstraps itself again at boot, and recovery waits for that result instead of
        # running site.yml from here at the same time (the same roles twice at once).
        recover_vars = {
            "tpu_recover_nodes": NODE,
            "tpu_recover_force": True,
            "tpu_recover_project": PROJECT,
            "tpu_recover_zone": ZONE,
            "tpu_recover_known_hosts": str(known_hosts),
            "tpu_recover_poll_interval": 0.5,
            "tpu_recover_pull_timeout": 900,
        }
        before = published(emulator)
        recover = playbook("recover.yml", env, *extra_vars(recover_vars), timeout=1500)
        print(f"[{recover.seconds:6.1f} s] recover the pull node: rc={recover.returncode}")
        assert recover.returncode == 0, recover.tail(80)
        assert finished in recover.stdout, recover.tail(40)
        after = published(emulator)
        assert after["state"] == "done" and after["rc"] == 0, after
        assert after["boot"] > before["boot"], (before, after)  # the new VM's own result
        assert "by themselves: pull mode" in recover.stdout, recover.tail(20)
        assert "cloudtpu.pod.python" not in recover.stdout  # no role ran from the controller
        again = run([*ansible, "-m", "ansible.builtin.shell", "-a", checks], env, 120)
        assert again.returncode == 0, again.tail()
        renewed = again.stdout.split(">>", 1)[1].split("\n")[1:]
        assert renewed[0] == "0" and renewed[2] == "/usr/local/bin/tpu-unlock", renewed
    finally:
        down = playbook("teardown.yml", env, *extra_vars({**common, "tpu_teardown_confirm": True}))
        print(f"[{down.seconds:6.1f} s] teardown: rc={down.returncode}")
