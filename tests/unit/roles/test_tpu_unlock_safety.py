"""tpu-unlock refuses what a user of the host could plant, and says what and why.

/tmp is writable by everyone: a symbolic link, fifo or hard link at a lock file's name, a file
swapped between the check and the removal, a device folder anyone can write must never make the
tool signal an unrelated process or remove anything outside its own lock files. The fake pod of
tests/tpu_unlock_harness.py gives every test its own device folder, lock folder and log folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tpu_unlock_harness import Pod, cli, holders, lockfolder, tpu_unlock


@pytest.fixture
def pod(tmp_path: Path) -> Iterator[Pod]:
    fake = Pod(tmp_path)
    yield fake
    fake.cleanup()


def reasons(out: dict, path: Path | str) -> list[str]:
    return [r["reason"] for r in out["refused"] if r.get("path") == str(path)]


def test_symlink_to_dev_null_does_not_kill_its_holders(pod: Pod) -> None:
    """The review's attack: the lock is a link to /dev/null, which many processes hold."""
    pod.locks[0].symlink_to("/dev/null")
    innocent = subprocess.Popen(["sleep", "120"], stdin=subprocess.DEVNULL)
    pod.children.append(innocent)
    code, out = pod.run_json("--kill", "--grace", "1")
    assert innocent.poll() is None, f"a process holding /dev/null was ended: {out}"
    assert code == 5, out
    assert out["killed"] == [] and out["holders"] == [], out
    assert reasons(out, pod.locks[0]) == ["is a symbolic link, not a regular file"], out
    assert pod.locks[0].is_symlink(), "the planted link was removed or followed"
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_symlink_to_a_held_file_is_no_holder(pod: Pod, tmp_path: Path) -> None:
    precious = tmp_path / "precious.db"
    precious.write_text("data\n")
    child = pod.hold(precious)
    pod.locks[0].symlink_to(precious)
    code, out = pod.run_json("--kill", "--grace", "1")
    assert code == 5 and out["holders"] == [], out
    assert child.poll() is None, "the holder of the link's target was ended"
    assert precious.read_text() == "data\n"


def test_fifo_is_refused_without_blocking(pod: Pod) -> None:
    os.mkfifo(pod.locks[0])
    code, out = pod.run_json()
    assert code == 5, out
    assert reasons(out, pod.locks[0]) == ["is a fifo, not a regular file"], out
    assert pod.locks[0].exists()


def test_socket_is_refused(pod: Pod) -> None:
    import socket

    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(pod.locks[1]))
        code, out = pod.run_json()
    finally:
        sock.close()
    assert code == 5 and reasons(out, pod.locks[1]) == ["is a socket, not a regular file"], out


def test_hard_link_is_refused(pod: Pod, tmp_path: Path) -> None:
    precious = tmp_path / "precious.conf"
    precious.write_text("keep\n")
    os.link(precious, pod.locks[0])
    child = pod.hold(precious)
    code, out = pod.run_json("--kill", "--grace", "1")
    assert code == 5, out
    assert reasons(out, pod.locks[0]) == ["has 2 hard links; it may be another file's name"]
    assert child.poll() is None and out["holders"] == [], out
    assert pod.locks[0].exists() and precious.read_text() == "keep\n"


PATH_CASES = [
    ("/etc/passwd", "must be directly in"),
    ("/tmp/../etc/shadow", "must be directly in"),
    ("libtpu_lockfile", "must be directly in"),
    ("/", "must be directly in"),
]


@pytest.mark.parametrize(("lock", "reason"), PATH_CASES, ids=[c[0] for c in PATH_CASES])
def test_lock_paths_outside_the_lock_folder_are_refused(pod: Pod, lock: str, reason: str) -> None:
    result = pod.run("--json", "--lock", lock)
    out = json.loads(result.stdout)
    assert result.returncode == 5, out
    assert any(r.startswith(reason) for r in reasons(out, lock)), out
    assert str(pod.root) in reasons(out, lock)[0], "the reason does not say where locks belong"
    assert os.path.exists("/etc/passwd")


def test_unexpected_names_in_the_lock_folder_are_refused(pod: Pod) -> None:
    other = pod.root / "ssh-agent.sock"
    other.write_text("")
    log = pod.root / "logs"
    log.mkdir()
    code, out = pod.run_json("--lock", str(other), "--log-dir", str(log))
    assert code == 5, out
    allowed_lock, allowed_log = tpu_unlock.LOCK_NAME.pattern, tpu_unlock.LOG_NAME.pattern
    assert reasons(out, other) == [f"is not a libtpu name (allowed: {allowed_lock})"], out
    assert reasons(out, log) == [f"is not a libtpu name (allowed: {allowed_log})"], out
    assert other.exists() and log.exists()


def test_log_folder_content_links_are_unlinked_not_followed(pod: Pod, tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep\n")
    pod.stale()
    (pod.log_dir / "evil").symlink_to(precious)
    (pod.log_dir / "sub").mkdir()
    (pod.log_dir / "sub" / "evil").symlink_to(precious / "keep.txt")
    code, out = pod.run_json()
    assert code == 0, out
    assert not pod.log_dir.exists(), out
    assert (precious / "keep.txt").read_text() == "keep\n"


def test_untrusted_device_folder_is_refused_and_locks_kept(pod: Pod, tmp_path: Path) -> None:
    """A device folder anyone can write could hold a planted node: refuse it, keep the locks."""
    evil = pod.root / "dev" / "accel"  # the folder of newer kernels, here writable by anyone
    evil.mkdir()
    (evil / "accel0").write_bytes(b"")
    evil.chmod(0o777)
    pod.stale()
    code, out = pod.run_json("--device-glob", str(evil / "*"))
    assert code == 5, out
    assert any("writable by other users" in r for r in reasons(out, evil / "accel0")), out
    assert str(evil / "accel0") not in out["devices"], out
    assert pod.locks[0].exists(), "locks removed although a device could not be trusted"


def test_device_that_is_a_link_to_dev_null_is_refused(pod: Pod) -> None:
    (pod.root / "dev" / "accel9").symlink_to("/dev/null")
    innocent = subprocess.Popen(["sleep", "120"], stdin=subprocess.DEVNULL)
    pod.children.append(innocent)
    pod.stale()
    code, out = pod.run_json("--kill", "--grace", "1")
    assert innocent.poll() is None, out
    assert code == 5, out
    assert reasons(out, pod.root / "dev" / "accel9") == [
        "not a character device (links are never followed)"
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_memory_device_node_is_never_a_tpu(pod: Pod) -> None:
    node = pod.root / "dev" / "accel7"
    os.mknod(node, 0o600 | 0o020000, os.makedev(1, 3))  # the numbers of /dev/null
    innocent = subprocess.Popen(["sleep", "120"], stdin=subprocess.DEVNULL)
    pod.children.append(innocent)
    code, out = pod.run_json("--kill", "--grace", "1")
    assert innocent.poll() is None, out
    assert reasons(out, node) == ["a memory or terminal device (as /dev/null) is never a TPU"]
    assert code == 5, out


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_lock_of_a_system_account_is_refused(pod: Pod) -> None:
    pod.locks[0].write_text("")
    os.chown(pod.locks[0], 65534, 65534)
    code, out = pod.run_json()
    assert code == 5, out
    assert reasons(out, pod.locks[0]) == ["belongs to nobody, not an expected owner"], out
    assert pod.locks[0].exists()


def test_owner_option_narrows_the_owners(pod: Pod) -> None:
    pod.stale()
    code, out = pod.run_json("--owner", str(os.getuid()))
    assert code == 0 and str(pod.locks[0]) in out["removed"], out


def test_lock_only_holder_is_never_killed(pod: Pod) -> None:
    pod.stale()
    child = pod.hold(pod.locks[0])
    code, out = pod.run_json("--kill", "--grace", "1")
    assert code == 3, out
    assert child.poll() is None, "a process holding only the lock file was ended"
    assert {"pid": child.pid, "reason": "holds no TPU device (only a lock file); not ended"} in out[
        "refused"
    ], out


def test_device_holder_is_killed_through_its_device_identity(pod: Pod) -> None:
    """A second name (hard link) of the device in a trusted folder still counts as the device."""
    other = pod.root / "dev" / "other"
    pod.stale()
    child = pod.hold()
    os.rename(pod.devices[0], other)  # the holder's descriptor still points to the same inode
    os.link(other, pod.devices[0])
    os.unlink(other)
    code, out = pod.run_json("--kill", "--grace", "5")
    assert code == 0, out
    assert child.wait(timeout=10) == -signal.SIGTERM


def swap(path: Path, target: Path) -> None:
    os.unlink(path)
    os.symlink(target, path)


def run_in_process(pod: Pod, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    code = cli.main(pod.args("--json", *extra))
    return code, json.loads(capsys.readouterr().out)


def test_file_swapped_between_check_and_open(
    pod: Pod, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "precious"
    precious.write_text("keep\n")
    pod.stale()
    real = cli.find_holders

    def find_then_swap(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)
        if pod.locks[0].is_file() and not pod.locks[0].is_symlink():
            swap(pod.locks[0], precious)
        return result

    monkeypatch.setattr(cli, "find_holders", find_then_swap)
    code, out = run_in_process(pod, capsys)
    assert code == 5, out
    assert reasons(out, pod.locks[0]) == ["was replaced since it was checked; left alone"], out
    assert pod.locks[0].is_symlink() and precious.read_text() == "keep\n"


def test_file_swapped_just_before_unlink(
    pod: Pod, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    precious = tmp_path / "precious"
    precious.write_text("keep\n")
    pod.stale()

    def swap_lock(path: str) -> None:
        if path == str(pod.locks[0]):
            swap(pod.locks[0], precious)

    monkeypatch.setattr(lockfolder, "before_unlink", swap_lock)
    code, out = run_in_process(pod, capsys)
    assert code == 5, out
    assert reasons(out, pod.locks[0]) == ["was replaced just before removal; left alone"], out
    assert pod.locks[0].is_symlink() and precious.read_text() == "keep\n"
    assert str(pod.log_dir) in out["removed"], "the log folder, untouched by the swap, stays"


def test_text_output_says_what_was_refused(pod: Pod) -> None:
    pod.locks[0].symlink_to("/dev/null")
    result = pod.run()
    assert result.returncode == 5, result.stdout
    assert f"refused {pod.locks[0]}: is a symbolic link" in result.stdout, result.stdout


def test_lock_folder_others_can_write_is_refused(pod: Pod, tmp_path: Path) -> None:
    """--tmp-dir (a test hook) cannot point at a folder anyone can write without the sticky bit."""
    pod.stale()
    tmp_path.chmod(0o777)
    try:
        code, out = pod.run_json()
    finally:
        tmp_path.chmod(0o700)
    assert code == 5, out
    assert reasons(out, pod.root) == [
        f"not a safe lock folder: {pod.root} is writable by other users"
    ], out
    assert out["removed"] == [] and pod.locks[0].exists(), out


LOOK = [
    ("/dev/accel0", True),
    ("/dev/vfio/0", True),
    ("/tmp/libtpu_lockfile", True),
    ("/tmp/libtpu_lockfile (deleted)", True),
    ("/mnt/shared/data.bin", False),
    ("/home/tpu/train.py", False),
    ("socket:[12345]", False),
    ("pipe:[678]", False),
    ("anon_inode:[eventfd]", False),
]


@pytest.mark.parametrize(("target", "looked_at"), LOOK, ids=[t for t, _ in LOOK])
def test_only_files_in_dev_or_watched_folders_are_stat_ed(target: str, looked_at: bool) -> None:
    assert holders.worth_a_look(target, {"/tmp"}) is looked_at


def test_a_file_on_a_slow_mount_is_never_stat_ed(
    pod: Pod, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A held file outside /dev and the watched folders (an NFS share that hangs) is not asked."""
    (tmp_path / "share").mkdir()
    data = tmp_path / "share" / "data.bin"
    data.write_bytes(b"x")
    child = pod.hold(data)
    real_stat = os.stat

    def fake_stat(path: str, *args: object, **kwargs: object) -> os.stat_result:
        if f"/{child.pid}/fd/" in str(path) and os.readlink(path) == str(data):
            raise AssertionError("stat() on a file of a possibly hanging mount")
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(holders.os, "stat", fake_stat)
    code, out = run_in_process(pod, capsys)
    assert code == 0 and out["holders"] == [], out


def test_a_folder_matched_by_the_device_pattern_is_skipped(pod: Pod) -> None:
    """Newer kernels have a /dev/accel/ folder, which /dev/accel* matches: not a device."""
    (pod.root / "dev" / "accel").mkdir()
    pod.stale()
    code, out = pod.run_json()
    assert code == 0 and out["refused"] == [], out
    assert str(pod.locks[0]) in out["removed"], out
