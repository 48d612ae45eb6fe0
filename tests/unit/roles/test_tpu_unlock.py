"""tpu-unlock (roles/libtpu/files: the entry script tpu-unlock and its package tpu_unlock) against
real child processes and fake devices.

Every test points the tool at its own temporary device files, lock files and log folder, so
nothing outside the test's folder is touched (tests/tpu_unlock_harness.py). The processes
holding a "device" are real children of the test; the tool finds them through the real /proc.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tpu_unlock_harness import PROGRAM, Pod, cli, holders

JSON_KEYS = {
    "changed",
    "devices",
    "dry_run",
    "errors",
    "exit_code",
    "holders",
    "kept",
    "killed",
    "message",
    "refused",
    "removed",
    "unreadable",
}


@pytest.fixture
def pod(tmp_path: Path) -> Iterator[Pod]:
    fake = Pod(tmp_path)
    yield fake
    fake.cleanup()


def me() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def test_no_lock_nothing_to_do(pod: Pod) -> None:
    code, out = pod.run_json()
    assert code == 0, out
    assert out["removed"] == [] and out["kept"] == [] and out["holders"] == [], out
    assert out["changed"] is False, out
    assert out["devices"] == [str(d) for d in pod.devices], out


def test_stale_lock_and_logs_are_removed(pod: Pod) -> None:
    pod.stale()
    code, out = pod.run_json()
    assert code == 0, out
    assert sorted(out["removed"]) == sorted([str(pod.locks[0]), str(pod.log_dir)]), out
    assert out["changed"] is True, out
    assert not pod.locks[0].exists(), "the stale lock file is still there"
    assert not pod.log_dir.exists(), "the log folder is still there"


def test_second_run_changes_nothing(pod: Pod) -> None:
    pod.stale()
    pod.run_json()
    code, out = pod.run_json()
    assert code == 0 and out["changed"] is False, out


def test_lock_kept_while_a_process_holds_a_device(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    code, out = pod.run_json()
    assert code == 3, out
    assert out["removed"] == [] and out["changed"] is False, out
    assert sorted(out["kept"]) == sorted([str(pod.locks[0]), str(pod.log_dir)]), out
    assert pod.locks[0].exists() and pod.log_dir.exists()
    holders = {h["pid"]: h for h in out["holders"]}
    assert child.pid in holders, out
    holder = holders[child.pid]
    assert holder["user"] == me(), holder
    assert holder["uid"] == os.getuid(), holder
    assert sys.executable in holder["command"] and "holding" in holder["command"], holder
    assert holder["holds"] == [str(pod.devices[0])], holder
    assert child.poll() is None, "tpu-unlock without --kill ended the holder"


def test_text_output_lists_the_holder(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    result = pod.run()
    assert result.returncode == 3, result.stdout + result.stderr
    line = next((ln for ln in result.stdout.splitlines() if f" {child.pid} " in ln), "")
    assert me() in line and str(pod.devices[0]) in line, result.stdout
    assert f"kept {pod.locks[0]}" in result.stdout, result.stdout


def test_a_process_holding_the_lock_file_counts_as_holder(pod: Pod) -> None:
    pod.stale()
    child = pod.hold(pod.locks[0])
    code, out = pod.run_json()
    assert code == 3, out
    assert [h["holds"] for h in out["holders"] if h["pid"] == child.pid] == [[str(pod.locks[0])]]
    assert pod.locks[0].exists()


def test_kill_ends_the_holder_then_removes_the_lock(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    code, out = pod.run_json("--kill", "--grace", "5")
    assert code == 0, out
    assert child.wait(timeout=10) == -signal.SIGTERM, "the holder was not ended by SIGTERM"
    assert [(k["pid"], k["signal"]) for k in out["killed"]] == [(child.pid, "SIGTERM")], out
    assert str(pod.locks[0]) in out["removed"] and out["changed"] is True, out
    assert not pod.locks[0].exists()


def test_kill_escalates_to_sigkill_after_the_grace_period(pod: Pod) -> None:
    pod.stale()
    child = pod.hold(ignore_term=True)
    code, out = pod.run_json("--kill", "--grace", "0.5")
    assert code == 0, out
    assert child.wait(timeout=10) == -signal.SIGKILL, "a TERM-ignoring holder survived"
    signals = [k["signal"] for k in out["killed"] if k["pid"] == child.pid]
    assert signals == ["SIGTERM", "SIGKILL"], out
    assert not pod.locks[0].exists()


def test_kill_for_another_user_spares_my_process(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    other = "nobody" if me() != "nobody" else "root"
    code, out = pod.run_json("--kill", "--user", other)
    assert code == 3, out
    assert out["killed"] == [], out
    assert child.poll() is None, "a process of another user than --user was ended"
    assert pod.locks[0].exists()


def test_kill_for_my_user_ends_my_process(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    code, out = pod.run_json("--kill", "--user", me(), "--grace", "5")
    assert code == 0, out
    assert child.wait(timeout=10) == -signal.SIGTERM
    assert not pod.locks[0].exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as nobody")
def test_user_filter_with_two_users(pod: Pod) -> None:
    pod.stale()
    mine = pod.hold()
    theirs = pod.hold(pod.devices[1], user="nobody")
    code, out = pod.run_json("--kill", "--user", "nobody", "--grace", "5")
    assert theirs.wait(timeout=10) == -signal.SIGTERM, out
    assert mine.poll() is None, "the process of the user not named with --user was ended"
    assert code == 3, out
    assert [h["pid"] for h in out["holders"]] == sorted([mine.pid, theirs.pid]), out
    assert [k["pid"] for k in out["killed"]] == [theirs.pid], out
    assert pod.locks[0].exists(), "the lock was removed while a holder remains"


def test_json_shape(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    code, out = pod.run_json()
    assert set(out) == JSON_KEYS, sorted(out)
    assert out["exit_code"] == code == 3
    assert isinstance(out["message"], str) and str(child.pid) in out["message"], out
    for holder in out["holders"]:
        assert set(holder) == {"pid", "uid", "user", "command", "holds"}, holder
        assert isinstance(holder["pid"], int) and isinstance(holder["holds"], list), holder


def test_dry_run_changes_nothing(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    code, out = pod.run_json("--kill", "--dry-run")
    assert out["dry_run"] is True, out
    assert [k["pid"] for k in out["killed"]] == [child.pid], out
    assert str(pod.locks[0]) in out["removed"], "dry run does not say what it would remove"
    assert code == 0, out
    assert child.poll() is None, "dry run ended the holder"
    assert pod.locks[0].exists() and pod.log_dir.exists(), "dry run removed files"


def test_dry_run_without_holders_changes_nothing(pod: Pod) -> None:
    pod.stale()
    code, out = pod.run_json("--dry-run")
    assert code == 0 and out["changed"] is True, out
    assert pod.locks[0].exists() and (pod.log_dir / "tpu_driver.INFO").exists()


def test_keep_logs(pod: Pod) -> None:
    pod.stale()
    code, out = pod.run_json("--keep-logs")
    assert code == 0 and out["removed"] == [str(pod.locks[0])], out
    assert pod.log_dir.exists()


def test_paths_from_the_environment(pod: Pod) -> None:
    pod.stale()
    child = pod.hold()
    env = dict(
        os.environ,
        TPU_UNLOCK_DEV_ROOT=str(pod.root / "dev"),
        TPU_UNLOCK_DEVICE_GLOB=str(pod.root / "dev" / "accel*"),
        TPU_UNLOCK_LOCKS=":".join(str(lock) for lock in pod.locks),
        TPU_UNLOCK_LOG_DIR=str(pod.log_dir),
        TPU_UNLOCK_TMP_DIR=str(pod.root),
    )
    result = subprocess.run(
        [*PROGRAM, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    out = json.loads(result.stdout)
    assert result.returncode == 3, out
    assert child.pid in [h["pid"] for h in out["holders"]], out
    assert str(pod.locks[0]) in out["kept"], out


def test_fake_proc_tree(pod: Pod, tmp_path: Path) -> None:
    """--proc points the scan at another tree: a process there holding accel1 is found."""
    pod.stale()
    proc = tmp_path / "proc"
    (proc / "4242" / "fd").mkdir(parents=True)
    (proc / "4242" / "fd" / "7").symlink_to(pod.devices[1])
    (proc / "4242" / "status").write_text("Name:\ttrain\nUid:\t0\t0\t0\t0\n")
    (proc / "4242" / "cmdline").write_bytes(b"python3\0train.py\0")
    code, out = pod.run_json("--proc", str(proc))
    assert code == 3, out
    assert out["holders"] == [
        {
            "pid": 4242,
            "uid": 0,
            "user": "root",
            "command": "python3 train.py",
            "holds": [str(pod.devices[1])],
        }
    ], out


def test_unreadable_processes_keep_the_lock(
    pod: Pod, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """When /proc/<pid>/fd of some process cannot be read, nothing is removed (exit 4)."""
    pod.stale()
    real_listdir = os.listdir

    def listdir(path: str) -> list[str]:
        if str(path).endswith("/fd"):
            raise PermissionError(13, "Permission denied", path)
        return real_listdir(path)

    monkeypatch.setattr(holders.os, "listdir", listdir)
    code = cli.main(pod.args("--json"))
    out = json.loads(capsys.readouterr().out)
    assert code == 4, out
    assert out["unreadable"] and out["removed"] == [], out
    assert pod.locks[0].exists()


def test_unreadable_descriptor_links_keep_the_lock(
    pod: Pod, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Root without CAP_SYS_PTRACE lists /proc/<pid>/fd but cannot stat the links: keep."""
    pod.stale()
    child = pod.hold()
    real_stat = os.stat

    def fake_stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        if f"/{child.pid}/fd/" in str(path):
            raise PermissionError(13, "Permission denied", path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(holders.os, "stat", fake_stat)
    code = cli.main(pod.args("--json"))
    out = json.loads(capsys.readouterr().out)
    assert code == 4, out
    assert child.pid in out["unreadable"] and out["removed"] == [], out
    assert pod.locks[0].exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["--grace", "-1"],
        ["--grace", "soon"],
        ["--grace", "7200"],
        ["--user", "tpu"],
        ["--bogus"],
        ["--owner", "no-such-user-here"],
        ["--tmp-dir", "tmp"],
        ["--tmp-dir", "/tmp/../etc"],
    ],
    ids=[
        "negative-grace",
        "grace-not-a-number",
        "grace-over-an-hour",
        "user-without-kill",
        "unknown-flag",
        "unknown-owner",
        "relative-tmp-dir",
        "tmp-dir-with-dotdot",
    ],
)
def test_usage_errors(pod: Pod, argv: list[str]) -> None:
    result = pod.run(*argv)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "usage: tpu-unlock" in result.stderr, result.stderr


def test_symlinked_log_dir_is_refused_not_followed(pod: Pod, tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("do not delete\n")
    pod.log_dir.symlink_to(precious)
    code, out = pod.run_json()
    assert code == 5, out
    assert pod.log_dir.is_symlink() and (precious / "keep.txt").exists(), out
    assert out["refused"] == [
        {"path": str(pod.log_dir), "reason": "is a symbolic link, not a folder"}
    ], out


def test_a_lock_path_that_is_a_folder_is_left_alone(pod: Pod) -> None:
    pod.locks[0].mkdir()
    (pod.locks[0] / "inside").write_text("x\n")
    code, out = pod.run_json()
    assert code == 5, out
    assert (pod.locks[0] / "inside").exists(), "a folder given as lock file was removed"
    assert out["refused"] == [
        {"path": str(pod.locks[0]), "reason": "is a folder, not a regular file"}
    ], out
