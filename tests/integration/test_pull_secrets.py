"""A pull node's secrets reach no output and no file that others could read.

provision.yml with tpu_provision_bootstrap=pull writes a startup-script that holds the TPU API's
access token and tpu_provision_pull_vars. Here both are a canary unique to the run; the node is
preempted through the emulator's admin API, recover.yml fails once on its create (the journal
then keeps the spec) and recovers the node on the next run, then status.yml and teardown.yml
run. Every run is at -vvv (the failing recover at the default verbosity), once with the default
callback and once with ansible.posix.json. The canary must appear in no stdout or stderr, and in
no file under the run's folders (home, state, temporary and fact cache folders) or the
repository's .cache written during the test, except files of mode 0600 owned by the user.
The node itself keeps the canary (the emulator's state): the recreated node has the same script.
Against the emulator's in-memory backend; SSH and the bootstrap are skipped as in
test_lifecycle_playbooks.py.
"""

from __future__ import annotations

import os
import stat
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.lifecycle_support import (
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    Run,
    ansible_env,
    playbook,
)
from tests.integration.test_lifecycle_playbooks import with_base

EMULATOR_DELAY = 0.05  # seconds each operation of the emulator takes (conftest.py)
NODE = "pod-secret"
LOCATION = f"projects/{PROJECT}/locations/{ZONE}"


def leaks(canary: str, roots: list[Path], since: float) -> list[str]:
    """Files under ``roots`` (those of the repository's .cache only when written since
    ``since``) that hold the canary and are not a 0600 file of this user."""
    found = []
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                path = Path(folder, name)
                info = path.lstat()
                if not stat.S_ISREG(info.st_mode):
                    continue
                if root.name == ".cache" and info.st_mtime < since:
                    continue
                if canary.encode() not in path.read_bytes() and canary not in name:
                    continue
                private = stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
                if not private:
                    found.append(f"{path} (mode {stat.S_IMODE(info.st_mode):04o})")
    return found


@pytest.mark.parametrize("callback", ["default", "ansible.posix.json"])
def test_the_pull_secrets_reach_no_output_and_no_shared_file(
    emulator: EmulatorCli, tmp_path: Path, callback: str
) -> None:
    emulator.admin("POST", "reset")
    started = time.time() - 1
    canary = f"canary-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    home.mkdir()
    env = ansible_env(
        emulator.api_url,
        HOME=str(home),  # the default state folder, ~/.ansible/tmp and ~/.ansible/cp
        TMPDIR=str(tmp_path / "tmp"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / "facts"),
        ANSIBLE_STDOUT_CALLBACK=callback,
        # status.yml asks the workers, whose addresses nobody answers on: give up soon
        ANSIBLE_TIMEOUT="2",
        ANSIBLE_SSH_RETRIES="0",
    )
    (tmp_path / "tmp").mkdir()
    values = with_base(
        tpu_provision_name=NODE,
        tpu_provision_method="node",
        tpu_provision_accelerator_type="v4-8",
        tpu_provision_bootstrap="pull",
        tpu_provision_pull_repo="https://git.example.test/cloudtpu-pod.git",
        tpu_provision_pull_version="0123456789abcdef0123456789abcdef01234567",
        tpu_provision_pull_auth_kind="accesstoken",
        tpu_provision_pull_access_token=f"{canary}-token",
        tpu_provision_pull_vars={"tpu_secret_note": f"{canary}-var"},
        tpu_provision_pull_wait=False,
        tpu_recover_nodes=NODE,
        tpu_teardown_confirm=True,
    )
    runs: dict[str, Run] = {}

    def run(name: str, *args: str) -> Run:
        runs[name] = playbook(f"{name.split(':')[0]}.yml", env, *args, *values)
        return runs[name]

    assert run("provision", "-vvv").returncode == 0, runs["provision"].tail()
    script = emulator.node(NODE)["metadata"]["startup-script"]
    assert f"{canary}-token" in script and f"{canary}-var" in script  # the node holds them
    emulator.admin("POST", f"{LOCATION}/nodes/{NODE}:preempt")

    # The create fails after the delete: the journal keeps the spec, secrets included.
    rule = {"path": "projects/*/locations/*/nodes", "method": "POST", "error": "PERMISSION_DENIED"}
    emulator.admin("POST", "faults", {"rules": [rule]})
    failed = run("recover:failed")
    assert failed.returncode != 0 and emulator.node(NODE) is None, failed.tail()
    state = home / ".local" / "state" / "cloudtpu.pod"
    journal = state / f"journal-{PROJECT}-{ZONE}.json"
    assert canary in journal.read_text()
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600, oct(journal.stat().st_mode)
    assert stat.S_IMODE(state.stat().st_mode) == 0o700, oct(state.stat().st_mode)
    emulator.admin("POST", "faults", {"rules": []})

    assert run("recover", "-vvv").returncode == 0, runs["recover"].tail()
    recovered = emulator.node(NODE)
    assert recovered["state"] == "READY" and recovered["metadata"]["startup-script"] == script
    assert not journal.exists()
    assert "hidden startup-script" in runs["recover"].stdout, runs["recover"].tail()
    assert run("status", "-vvv").returncode == 0, runs["status"].tail()
    assert run("teardown", "-vvv").returncode == 0, runs["teardown"].tail()
    assert emulator.node(NODE) is None

    shown = {name: r.output.count(canary) for name, r in runs.items() if canary in r.output}
    assert shown == {}, f"the canary is in the output of {shown}"
    found = leaks(canary, [tmp_path, REPO / ".cache"], started)
    assert found == [], f"the canary is in files others may read: {found}"
