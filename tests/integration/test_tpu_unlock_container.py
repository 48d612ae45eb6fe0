"""tpu-unlock as root on a host where an unprivileged user plants traps in /tmp.

One worker-image container (sleep as its first process, no systemd) with a user `mallory`.
Containers cannot create real TPU devices, so the "device" is a regular file in the root-owned
folder /srv/fake-dev, given with --dev-root and --device-glob (the tool's test hooks); a root
process holding it stands for a training program. Stand-ins for sshd, journald and dbus hold
/dev/null, as the real ones do. Every test asserts that only the holder of the device is ever
signalled and that nothing outside the lock files is removed or followed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_lifecycle_docker import docker_unavailable
from tests.role_runner import BIN, ansible_env

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "roles" / "libtpu" / "files" / "tpu-unlock"
# The package the command runs, where the libtpu role installs it.
PACKAGE = REPO / "roles" / "libtpu" / "files" / "tpu_unlock"
LIB = "/usr/local/lib/cloudtpu/tpu_unlock"
IMAGE = "cloudtpu-pod-worker:current"
# The fake device folder stands in for /dev (--dev-root: device globs must lie in it).
DEV_ROOT = "/srv/fake-dev"
DEVICES = f"{DEV_ROOT}/accel*"
RACE_RUNS = 15


class Box:
    """The container, with helpers to run commands as root or as mallory."""

    def __init__(self, name: str) -> None:
        self.name = name

    def sh(self, script: str, *, user: str = "root", check: bool = True) -> str:
        result = subprocess.run(
            ["docker", "exec", "-u", user, self.name, "sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check:
            assert result.returncode == 0, f"{user}$ {script}\n{result.stdout}{result.stderr}"
        return result.stdout

    def background(self, script: str, *, user: str = "root") -> None:
        subprocess.run(
            ["docker", "exec", "-d", "-u", user, self.name, "sh", "-c", script], check=True
        )

    def pids(self, marker: str) -> list[int]:
        """Pids of the `sleep <marker>` processes (each marker is a distinct number)."""
        out = self.sh(f"pgrep -f '^sleep {marker}$' || true")
        return [int(p) for p in out.split()]

    def run_unlock(
        self, *args: str, devices: tuple[str, ...] = (DEVICES,), dev_root: str = DEV_ROOT
    ) -> subprocess.CompletedProcess[str]:
        globs = [part for glob in devices for part in ("--device-glob", glob)]
        return subprocess.run(
            ["docker", "exec", self.name, "tpu-unlock", "--json", "--dev-root", dev_root,
             *globs, *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )  # fmt: skip

    def unlock(self, *args: str, **where: Any) -> tuple[int, dict]:
        result = self.run_unlock(*args, **where)
        assert result.stdout.strip(), f"no JSON from tpu-unlock: {result.stderr}"
        out = json.loads(result.stdout)
        print(f"tpu-unlock {' '.join(args)} -> {result.returncode}: {out['message']}")
        return result.returncode, out


@pytest.fixture(scope="module")
def box() -> Iterator[Box]:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_tpu_unlock_container: {reason}")
        pytest.skip(reason)
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        pytest.skip(f"{IMAGE} is missing (make image builds it)")
    name = f"cloudtpu-unlock-test-{uuid.uuid4().hex[:8]}"
    # SYS_PTRACE: root may look at other users' descriptors, as on a real TPU VM.
    subprocess.run(
        [
            *("docker", "run", "-d", "--rm", "--name", name, "--cap-add", "SYS_PTRACE"),
            *("--label", "cloudtpu-unlock-test", "--entrypoint", "sleep", IMAGE, "infinity"),
        ],
        check=True,
        capture_output=True,
    )
    started = time.monotonic()
    try:
        found = Box(name)
        found.sh(f"mkdir -p -m 0755 {LIB}")
        # As the role installs them: the package's files, then the command.
        for source in sorted(PACKAGE.glob("*.py")):
            subprocess.run(["docker", "cp", str(source), f"{name}:{LIB}/"], check=True)
        subprocess.run(["docker", "cp", str(TOOL), f"{name}:/usr/local/bin/tpu-unlock"], check=True)
        found.sh(f"chown -R root:root {LIB} /usr/local/bin/tpu-unlock && chmod 0644 {LIB}/*.py")
        found.sh("chmod 0755 /usr/local/bin/tpu-unlock && useradd -m mallory")
        found.sh("mkdir -m 0755 /srv/fake-dev && : > /srv/fake-dev/accel0")
        # Stand-ins for sshd, journald and dbus (root) and for a shell of mallory: /dev/null held.
        for marker in ("1001", "1002", "1003"):
            found.background(f"exec sleep {marker} </dev/null")
        found.background("exec sleep 1004 </dev/null", user="mallory")
        yield found
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        print(f"tpu-unlock container test: {time.monotonic() - started:.1f} s")


def innocents_alive(box: Box) -> None:
    for marker in ("1001", "1002", "1003", "1004"):
        assert box.pids(marker), f"sleep {marker}, which holds only /dev/null, was ended"


def start_trainer(box: Box) -> int:
    box.background("exec 3</srv/fake-dev/accel0; exec sleep 2001")
    for _ in range(50):
        if box.pids("2001"):
            return box.pids("2001")[0]
        time.sleep(0.1)
    raise AssertionError("the stand-in training program did not start")


def test_planted_links_and_fifos_are_refused(box: Box) -> None:
    box.sh(
        "ln -s /dev/null /tmp/libtpu_lockfile && mkfifo /tmp/libtpu.so_lockfile "
        "&& ln -s /etc /tmp/tpu_logs",
        user="mallory",
    )
    trainer = start_trainer(box)
    code, out = box.unlock("--kill", "--grace", "2")
    refused = {r["path"]: r["reason"] for r in out["refused"] if "path" in r}
    assert code == 5, out
    assert refused == {
        "/tmp/libtpu_lockfile": "is a symbolic link, not a regular file",
        "/tmp/libtpu.so_lockfile": "is a fifo, not a regular file",
        "/tmp/tpu_logs": "is a symbolic link, not a folder",
    }, out
    assert [k["pid"] for k in out["killed"]] == [trainer], out
    innocents_alive(box)
    assert box.sh("test -L /tmp/libtpu_lockfile && test -p /tmp/libtpu.so_lockfile && echo ok")
    assert box.sh("test -f /etc/passwd && test -d /etc/ssh && echo ok").strip() == "ok"
    box.sh("rm -f /tmp/libtpu_lockfile /tmp/libtpu.so_lockfile /tmp/tpu_logs", user="mallory")


def test_hard_link_to_a_held_file_is_refused(box: Box) -> None:
    box.sh("echo mine > ~/notes && ln ~/notes /tmp/libtpu_lockfile", user="mallory")
    box.background("exec 3<~/notes; exec sleep 1005", user="mallory")
    time.sleep(0.5)
    code, out = box.unlock("--kill", "--grace", "1")
    assert code == 5, out
    assert {"path": "/tmp/libtpu_lockfile", "reason": "has 2 hard links; it may be another "
            "file's name"} in out["refused"], out  # fmt: skip
    assert out["holders"] == [] and out["killed"] == [], out
    assert box.pids("1005"), "mallory's process holding the hard-linked file was ended"
    innocents_alive(box)
    box.sh("rm -f /tmp/libtpu_lockfile", user="mallory")


def test_device_folder_of_a_user_is_refused(box: Box) -> None:
    """A device glob pointing into a folder a user owns cannot redirect the scan."""
    box.sh("mkdir /tmp/m && ln -s /dev/null /tmp/m/accel0 && : > /tmp/m/accel1", user="mallory")
    box.background("exec 3</tmp/m/accel1; exec sleep 1006", user="mallory")
    box.sh(": > /tmp/libtpu_lockfile && chmod 0644 /tmp/libtpu_lockfile")
    time.sleep(0.5)
    # Outside the device folder, the glob itself is refused before anything is looked at.
    refused_glob = box.run_unlock("--kill", devices=("/tmp/m/accel*",))
    assert refused_glob.returncode == 2, refused_glob
    assert "not a TPU device pattern" in refused_glob.stderr, refused_glob.stderr
    assert box.pids("1006"), "a process was ended although the glob was refused"
    # Given as the device folder, it is not trusted: mallory owns it.
    code, out = box.unlock("--kill", devices=("/tmp/m/accel*",), dev_root="/tmp/m")
    refused = {r["path"]: r["reason"] for r in out["refused"]}
    assert code == 5, out
    for path in ("/tmp/m/accel0", "/tmp/m/accel1"):
        assert refused.get(path, "").startswith("not a trusted device folder: /tmp/m belongs to")
    assert "/tmp/libtpu_lockfile" in out["kept"] and out["killed"] == [], out
    assert box.pids("1006"), "the holder of a file in mallory's folder was ended"
    innocents_alive(box)
    box.sh("rm -rf /tmp/m", user="mallory")
    box.sh("rm -f /tmp/libtpu_lockfile")


def test_system_paths_as_lock_files_are_refused(box: Box) -> None:
    before = box.sh("sha256sum /etc/passwd /etc/shadow")
    code, out = box.unlock("--lock", "/etc/passwd", "--lock", "/tmp/../etc/shadow")
    assert code == 5, out
    assert {r["path"] for r in out["refused"]} >= {"/etc/passwd", "/tmp/../etc/shadow"}, out
    assert box.sh("sha256sum /etc/passwd /etc/shadow") == before


def test_users_stale_lock_is_removed(box: Box) -> None:
    """The tool still does its job: a regular stale lock of a user goes."""
    box.sh(": > /tmp/libtpu_lockfile && mkdir /tmp/tpu_logs && : > /tmp/tpu_logs/a", user="mallory")
    code, out = box.unlock()
    assert code == 0, out
    assert sorted(out["removed"]) == ["/tmp/libtpu_lockfile", "/tmp/tpu_logs"], out
    left = box.sh("ls -A /tmp").split()
    assert "libtpu_lockfile" not in left and "tpu_logs" not in left, left


def test_race_swapping_the_lock_file(box: Box) -> None:
    """mallory swaps the lock between a file, a link to /etc/passwd and a fifo, non-stop."""
    passwd = hashlib.sha256(box.sh("cat /etc/passwd").encode()).hexdigest()
    box.sh("echo 'secret' > ~/target && chmod 0600 ~/target", user="mallory")
    box.background("exec sleep 1007 </etc/passwd")  # a root process holding the link's target
    box.background(
        "cd /tmp; while :; do : > libtpu_lockfile; rm -f libtpu_lockfile; "
        "ln -s /etc/passwd libtpu_lockfile; rm -f libtpu_lockfile; mkfifo libtpu_lockfile; "
        "rm -f libtpu_lockfile; ln -s ~/target libtpu_lockfile; rm -f libtpu_lockfile; done",
        user="mallory",
    )
    codes: dict[int, int] = {}
    seen = 0
    try:
        for _ in range(RACE_RUNS):
            code, out = box.unlock("--kill", "--grace", "1")
            codes[code] = codes.get(code, 0) + 1
            assert code in (0, 5), out
            assert out["killed"] == [] and out["holders"] == [], out
            assert set(out["removed"]) <= {"/tmp/libtpu_lockfile"}, out
            seen += bool(out["removed"] or out["refused"])
    finally:
        box.sh("pkill -u mallory -f 'while :' || true")
    print(f"exit codes over {RACE_RUNS} runs during the race: {codes}; {seen} met the lock")
    assert seen, "no run met the swapped lock file: the race did not happen, nothing was tested"
    assert hashlib.sha256(box.sh("cat /etc/passwd").encode()).hexdigest() == passwd
    assert box.sh("cat /home/mallory/target").strip() == "secret"
    assert box.pids("1007"), "the root process holding /etc/passwd was ended"
    innocents_alive(box)


def run_role(box: Box, **extra_vars: Any) -> subprocess.CompletedProcess[str]:
    """The libtpu role on the container (docker connection), as playbooks/reset.yml runs it."""
    play = [
        {
            "name": "Release stale libtpu locks",
            "hosts": "all",
            "gather_facts": False,
            "roles": [{"role": "cloudtpu.pod.libtpu"}],
        }
    ]
    variables = {
        "ansible_connection": "community.docker.docker",
        "ansible_python_interpreter": "/usr/bin/python3",
        "tpu_libtpu_device_glob": "/dev/accel*",
        **extra_vars,
    }
    with tempfile.TemporaryDirectory() as tmp:
        playbook = Path(tmp) / "play.yml"
        playbook.write_text(json.dumps(play))
        varsfile = Path(tmp) / "vars.json"
        varsfile.write_text(json.dumps(variables))
        return subprocess.run(
            [BIN / "ansible-playbook", "-i", f"{box.name},", playbook, "-e", f"@{varsfile}"],
            cwd=REPO,
            env=ansible_env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def test_role_fails_on_a_planted_link_and_says_why(box: Box) -> None:
    """The role wiring: exit code 5 fails the host, after the report, naming path and reason."""
    box.sh(": > /dev/accel0")  # a stand-in device in the container's own root-owned /dev
    box.sh("rm -f /tmp/libtpu_lockfile && ln -s /dev/null /tmp/libtpu_lockfile", user="mallory")
    result = run_role(box, tpu_libtpu_kill=True, tpu_libtpu_kill_grace=1)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-3000:]
    assert "tpu-unlock left these alone as unsafe" in output, output[-3000:]
    assert "/tmp/libtpu_lockfile: is a symbolic link, not a regular file" in output, output[-3000:]
    assert box.sh("test -L /tmp/libtpu_lockfile && echo kept").strip() == "kept"
    innocents_alive(box)
    box.sh("rm -f /tmp/libtpu_lockfile", user="mallory")


def test_role_removes_a_users_stale_lock(box: Box) -> None:
    box.sh(": > /tmp/libtpu_lockfile", user="mallory")
    result = run_role(box)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "the TPU is free; removed /tmp/libtpu_lockfile" in output, output[-3000:]
    assert box.sh("test -e /tmp/libtpu_lockfile || echo gone").strip() == "gone"
    innocents_alive(box)
