"""sync.yml, run.yml, logs.yml and babysit.yml for a login user who is not the connection user.

The setup is the one of an operator who looks after a researcher's pod: Ansible connects as
``tpu`` (the operator's key), and ``-e tpu_login_user=alice`` names the researcher, whose code,
runs and logs these are. Both are lines of the node's ``ssh-keys`` metadata (``tpu:<key>`` from
provision.yml, ``alice:<her own key>`` from tpu_provision_metadata), so the worker makes both
accounts the way a TPU VM's guest agent does: the emulator's cloudtpu-accounts unit creates
every ``ssh-keys`` user with a home and passwordless sudo, as TPU VMs give every such user. The
playbooks use sudo of the connection user only; alice's key is never used.

One v4-8 node (one worker) from day_two_pod.provisioned(), the fixture of test_run_playbook.py.
alice's venv is, like tpu's there, ``python3 -m venv --without-pip`` at the contract's place,
made by alice herself: run.yml only sources its ``bin/activate``, and the run's ``$VIRTUAL_ENV``
shows whose venv that was; the python role would add minutes and prove nothing more.

The worker image has no rsync, so the first sync sends the tar archive. The rsync path (rsync
as root on the worker with --chown) runs after rsync is installed on the worker from its apt
sources; it needs rsync on this machine too (``make host-tools`` installs it), and says so when
it is skipped without it.

Skipped, with the reason printed, only when no Docker daemon answers.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.day_two_pod import (
    HOME,
    VENV_NAME,
    Pod,
    docker_unavailable,
    keygen,
    provisioned,
    run_id,
    table,
)

NODE = "pod-alice"
WORKER = "pod-alice-w0"
EMULATOR_ID = f"alice{os.getpid()}"
ALICE = "/home/alice"
AS_ALICE = ("-e", "tpu_login_user=alice")
SEND_ARCHIVE = "Send the files as one archive (no rsync on one side)"
SEND_RSYNC = "Send the files with rsync"


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_login_user_day_two: {reason}")
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("alice")
    alice_key = keygen(folder / "alice_ed25519")
    metadata = {"ssh-keys": "alice:" + Path(f"{alice_key}.pub").read_text().strip()}
    with provisioned(folder, NODE, "v4-8", EMULATOR_ID, metadata) as made:
        accounts = made.shell("id -un alice; sudo -n -l -U alice | grep -c NOPASSWD")
        assert accounts == {WORKER: "alice\n1"}, accounts
        made.shell(f"sudo -u alice python3 -m venv --without-pip {ALICE}/{VENV_NAME}")
        yield made


def owners(pod: Pod, *paths: str) -> list[str]:
    """'<mode> <user>:<group>' of each path on the worker, read as root."""
    found = pod.shell(f"sudo stat -c '%a %U:%G' {' '.join(paths)}")
    return found[WORKER].splitlines()


def task_status(output: str, task: str) -> str:
    """How the task named ``task`` ended on the worker (ok, changed, skipping...)."""
    found = re.search(
        rf"^TASK \[{re.escape(task)}\].*?^(\w+): \[{WORKER}\]", output, re.MULTILINE | re.DOTALL
    )
    assert found, f"no result of {task!r} in the output"
    return found[1]


def test_sync_run_and_logs_act_as_the_login_user(pod: Pod, tmp_path: Path) -> None:
    project = tmp_path / "myproject"
    project.mkdir()
    (project / "train.py").write_text("print('trained')\n")
    synced = pod.play("sync.yml", *AS_ALICE, "-e", "tpu_sync_src=./myproject", cwd=tmp_path)
    assert synced.returncode == 0, synced.tail(60)
    assert task_status(synced.stdout, SEND_ARCHIVE) == "changed", synced.tail(60)
    assert owners(pod, f"{ALICE}/myproject", f"{ALICE}/myproject/train.py") == [
        "755 alice:alice",
        "644 alice:alice",
    ]
    again = pod.play("sync.yml", *AS_ALICE, "-e", "tpu_sync_src=./myproject", cwd=tmp_path)
    assert again.returncode == 0, again.tail(60)
    assert again.recap()[WORKER]["changed"] == 0, again.recap()

    cmd = "cmd='id -un && echo \"$VIRTUAL_ENV $PWD\" && python3 train.py'"
    result = pod.play(
        "run.yml",
        *AS_ALICE,
        "-e",
        cmd,
        "-e",
        "tpu_run_workdir=myproject",
        "-e",
        "tpu_run_start_delay=1",
    )
    assert result.returncode == 0, result.tail(60)
    rows = table(result)
    # alice's processes, in alice's venv, in alice's synced folder
    expected = ["alice", f"{ALICE}/{VENV_NAME} {ALICE}/myproject", "trained"]
    assert rows == {WORKER: {"rc": "0", "lines": expected}}, rows
    ident = run_id(result)
    base = f"{ALICE}/cloudtpu-runs/{ident}/{WORKER}"
    assert owners(
        pod,
        f"{ALICE}/cloudtpu-runs",
        f"{ALICE}/cloudtpu-runs/{ident}",
        f"{base}.log",
        f"{base}.rc",
        f"{base}.json",
        f"{base}.run.sh",
    ) == ["700 alice:alice"] * 2 + ["600 alice:alice"] * 3 + ["700 alice:alice"]
    # nothing of the run went to the connection user's home
    assert pod.shell(f"ls {HOME}/cloudtpu-runs 2>/dev/null; true") == {WORKER: ""}

    fetched = pod.play("logs.yml", *AS_ALICE, "-e", "tpu_logs_tail=5", cwd=tmp_path)
    assert fetched.returncode == 0, fetched.tail(60)
    log = tmp_path / ".cache" / "runs" / ident / f"{WORKER}.log"
    assert log.read_text() == "\n".join(expected) + "\n"
    assert f"run {ident}: {WORKER} exit 0." in fetched.stdout, fetched.tail()


def test_sync_with_rsync_gives_the_files_to_the_login_user(pod: Pod, tmp_path: Path) -> None:
    """With rsync on both sides, rsync runs as root on the worker and gives every file to alice
    (--chown): new files and folders, and a file sent again after an edit; a second sync sends
    nothing."""
    if shutil.which("rsync") is None:
        reason = "this machine has no rsync (make host-tools installs it)"
        print(f"SKIPPED the rsync path of sync.yml: {reason}")
        pytest.skip(reason)
    installed = pod.shell(
        "command -v rsync >/dev/null || { sudo apt-get update -qq && "
        "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync >/dev/null 2>&1; }; "
        "command -v rsync"
    )
    assert installed == {WORKER: "/usr/bin/rsync"}, installed
    project = tmp_path / "rsynced"
    (project / "data").mkdir(parents=True)
    (project / "train.py").write_text("print('v1')\n")
    (project / "data" / "cfg.json").write_text("{}\n")
    args = (*AS_ALICE, "-e", "tpu_sync_src=./rsynced")
    dest = f"{ALICE}/rsynced"

    synced = pod.play("sync.yml", *args, cwd=tmp_path)
    assert synced.returncode == 0, synced.tail(60)
    assert task_status(synced.stdout, SEND_RSYNC) == "changed", synced.tail(60)
    assert task_status(synced.stdout, SEND_ARCHIVE) == "skipping", synced.tail(60)
    paths = [dest, f"{dest}/data", f"{dest}/data/cfg.json", f"{dest}/train.py"]
    owned = owners(pod, *paths)
    assert [line.split()[1] for line in owned] == ["alice:alice"] * 4, owned

    again = pod.play("sync.yml", *args, cwd=tmp_path)
    assert again.returncode == 0, again.tail(60)
    assert again.recap()[WORKER]["changed"] == 0, again.recap()

    (project / "train.py").write_text("print('v2')\n")
    edited = pod.play("sync.yml", *args, cwd=tmp_path)
    assert edited.returncode == 0, edited.tail(60)
    assert task_status(edited.stdout, SEND_RSYNC) == "changed", edited.tail(60)
    sent = pod.shell(f"sudo stat -c '%U:%G' {dest}/train.py && sudo cat {dest}/train.py")
    assert sent == {WORKER: "alice:alice\nprint('v2')"}, sent


def test_a_login_user_the_worker_lacks_is_refused_before_anything_changes(
    pod: Pod, tmp_path: Path
) -> None:
    (tmp_path / "myproject").mkdir()
    message = f"tpu_login_user is 'bob', but {WORKER} has no such user"
    for name, args in [
        ("sync.yml", ("-e", "tpu_sync_src=./myproject")),
        ("run.yml", ("-e", "cmd=hostname", "-e", "tpu_run_start_delay=1")),
        ("logs.yml", ()),
    ]:
        refused = pod.play(name, "-e", "tpu_login_user=bob", *args, cwd=tmp_path)
        assert refused.returncode != 0, refused.tail()
        assert message in refused.output, (name, refused.tail(30))
    assert pod.shell("ls -d /home/bob 2>/dev/null; true") == {WORKER: ""}


def test_babysit_watches_the_login_users_detached_run(pod: Pod, tmp_path: Path) -> None:
    """babysit.yml reads alice's run records and watches her run, whose runs folder (0700) the
    connection user cannot read: it finds the newest detached run and sees it complete."""
    started = pod.play(
        "run.yml",
        *AS_ALICE,
        "-e",
        "cmd='sleep 4; id -un'",
        "-e",
        "tpu_run_detach=true",
        "-e",
        "tpu_run_start_delay=1",
    )
    assert started.returncode == 0, started.tail(60)
    ident = run_id(started)
    watched = pod.play(
        "babysit.yml",
        *AS_ALICE,
        "-e",
        "tpu_babysit_interval=2",
        "-e",
        f"tpu_babysit_log_dir={tmp_path}",
        cwd=tmp_path,
    )
    assert watched.returncode == 0, watched.tail(60)
    assert "the run completed" in watched.output, watched.tail(40)
    assert f"done: the run completed: {WORKER} rc 0" in (tmp_path / f"{ident}.log").read_text()
    output = pod.shell(f"sudo cat {ALICE}/cloudtpu-runs/{ident}/{WORKER}.log")
    assert output == {WORKER: "alice"}, output
