"""The storage role on one worker container: a bucket mounted over FUSE, for real.

gcsfuse is not in Debian and Google's repository is out of reach here, so the real mount uses the
role's other client, rclone, against gcp-storage-emulator (a GCS JSON API) run on the host at the
docker bridge's gateway. The container is the worker image with systemd, /dev/fuse and SYS_ADMIN.
The gcsfuse path is checked as far as it goes without the binary: --check --diff shows the apt
source, the key and the fstab line. This kernel has no NFS client, so the NFS share is proved as
far as its fstab entry; its mount is skipped with the reason, never faked.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from functools import partial
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_lifecycle_docker import docker_unavailable
from tests.role_runner import BIN, ansible_env
from tools.tpu_emulator import docker_cli

REPO = Path(__file__).resolve().parents[2]
IMAGE = "cloudtpu-pod-worker:current"
USER = "tpuuser"
BUCKET = "ckpt-bucket"
MOUNT = "/mnt/ckpt"
NFS_MOUNT = "/mnt/filestore"
NFS = {"server": "10.0.0.2", "export": "/vol1", "path": NFS_MOUNT}


class Worker:
    """The container, the emulator's address and the role's runs."""

    def __init__(self, name: str, gateway: str, port: int) -> None:
        self.name, self.gateway, self.port = name, gateway, port
        self.api = f"http://{gateway}:{port}/storage/v1"

    def sh(self, script: str, *, user: str = "root", check: bool = True) -> str:
        result = subprocess.run(
            ["docker", "exec", "-u", user, self.name, "sh", "-c", script],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if check:
            assert result.returncode == 0, f"{user}$ {script}\n{result.stdout}{result.stderr}"
        return result.stdout

    def role(self, *args: str, **extra_vars: Any) -> tuple[subprocess.CompletedProcess[str], str]:
        play = [{"name": "Storage", "hosts": "all", "roles": [{"role": "cloudtpu.pod.storage"}]}]
        variables = {
            "ansible_connection": "community.docker.docker",
            "ansible_python_interpreter": "/usr/bin/python3",
            "tpu_login_user": USER,
            "tpu_apt_pod_cache": False,
            "tpu_storage_gcs_client": "rclone",
            "tpu_storage_gcs_endpoint": f"{self.api}/",
            "tpu_storage_gcs_anonymous": True,
            **extra_vars,
        }
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            playbook, varsfile = Path(tmp) / "play.yml", Path(tmp) / "vars.json"
            playbook.write_text(json.dumps(play))
            varsfile.write_text(json.dumps(variables))
            result = subprocess.run(
                [BIN / "ansible-playbook", "-i", f"{self.name},", playbook, "-e", f"@{varsfile}",
                 *args],
                cwd=REPO, env=ansible_env(ANSIBLE_CACHE_PLUGIN_CONNECTION=tmp),
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
        print(
            f"storage role {' '.join(args)}: rc {result.returncode},"
            f" {time.monotonic() - started:.1f} s"
        )
        return result, result.stdout + result.stderr


def _recap(output: str) -> dict[str, int]:
    found = re.search(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", output)
    assert found, output[-3000:]
    keys = ("ok", "changed", "unreachable", "failed")
    return dict(zip(keys, map(int, found.groups()), strict=True))


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _wait_for(url: str) -> None:
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer")


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_storage_role: {reason}")
        pytest.skip(reason)
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        pytest.skip(f"{IMAGE} is missing (make image builds it)")
    emulator = shutil.which("gcp-storage-emulator", path=str(BIN))
    if emulator is None:
        pytest.skip("gcp-storage-emulator is not installed in the toolchain (requirements.txt)")
    gateway = docker_cli.gateway("bridge")
    port = _free_port(gateway)
    started = time.monotonic()
    server = subprocess.Popen(
        [emulator, "start", "--host", gateway, "--port", str(port), "--in-memory", "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    name = f"cloudtpu-storage-test-{uuid.uuid4().hex[:8]}"
    try:
        _wait_for(f"http://{gateway}:{port}/storage/v1/b")
        subprocess.run(
            [
                *("docker", "run", "-d", "--rm", "--name", name),
                *("--label", "cloudtpu-storage-test"),
                *("--device", "/dev/fuse", "--cap-add", "SYS_ADMIN"),
                *("--security-opt", "apparmor=unconfined"),
                *("--tmpfs", "/run", "--tmpfs", "/run/lock"),
                *("-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro", IMAGE),
            ],
            check=True, capture_output=True,
        )  # fmt: skip
        found = Worker(name, gateway, port)
        found.sh(
            "for i in $(seq 50); do systemctl is-system-running -q --wait && break;"
            " sleep 0.2; done; true"
        )
        found.sh(f"useradd --create-home --shell /bin/bash {USER}")
        request = urllib.request.Request(
            f"{found.api}/b?project=test", data=json.dumps({"name": BUCKET}).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )  # fmt: skip
        urllib.request.urlopen(request, timeout=10).read()
        yield found
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        server.terminate()
        server.wait(timeout=10)
        print(f"storage role container test: {time.monotonic() - started:.1f} s")


def _object(worker: Worker, name: str) -> bytes:
    url = f"{worker.api}/b/{BUCKET}/o/{urllib.parse.quote(name, safe='')}?alt=media"
    return urllib.request.urlopen(url, timeout=10).read()


def test_bucket_mount_round_trip_idempotence_reboot_and_removal(worker: Worker) -> None:
    buckets = [
        {
            "bucket": BUCKET,
            "path": MOUNT,
            "file_cache_max_size_mb": 64,
            "cache_dir": "/var/cache/ckpt",
        }
    ]
    result, out = worker.role(tpu_storage_buckets=buckets, tpu_storage_nfs=[NFS])
    assert result.returncode == 0, out[-4000:]
    assert "this kernel cannot mount NFS" in out or "nfs" in worker.sh(
        "findmnt -n -o FSTYPE " + NFS_MOUNT + " || true"
    )

    # The login user writes a checkpoint; the object is in the bucket, seen through the API.
    assert worker.sh(f"findmnt -n -o FSTYPE {MOUNT}").strip() == "fuse.rclone"
    worker.sh(f"mkdir -p {MOUNT}/run1 && echo step-100 > {MOUNT}/run1/ckpt.txt && sync", user=USER)
    assert worker.sh(f"stat -c %U {MOUNT}/run1/ckpt.txt").strip() == USER
    for _ in range(50):
        try:
            if _object(worker, "run1/ckpt.txt") == b"step-100\n":
                break
        except OSError:
            pass
        time.sleep(0.2)
    assert _object(worker, "run1/ckpt.txt") == b"step-100\n"
    # Written through, as gcsfuse uploads at close: a checkpoint written to a temporary name and
    # renamed is in the bucket once the rename returns, not after a write-back delay.
    worker.sh(f"cd {MOUNT}/run1 && printf 7 > step.tmp && mv step.tmp step.txt", user=USER)
    assert _object(worker, "run1/step.txt") == b"7"

    # Idempotent: every task again (fast path off) changes nothing; then the fast path holds.
    result, out = worker.role(
        tpu_storage_buckets=buckets, tpu_storage_nfs=[NFS], tpu_fast_path=False
    )
    assert result.returncode == 0 and _recap(out)["changed"] == 0, out[-4000:]
    result, out = worker.role(tpu_storage_buckets=buckets, tpu_storage_nfs=[NFS])
    assert result.returncode == 0 and _recap(out)["changed"] == 0, out[-4000:]
    assert "Bring the worker to the role's state" not in out or "skipping" in out

    # A reboot of the worker: systemd mounts the fstab entry again, and the file is there.
    subprocess.run(["docker", "restart", worker.name], check=True, capture_output=True, timeout=120)
    worker.sh(
        "for i in $(seq 100); do findmnt -n "
        + MOUNT
        + " >/dev/null && break; sleep 0.2; done; true"
    )
    assert worker.sh(f"cat {MOUNT}/run1/ckpt.txt", user=USER) == "step-100\n"

    # state: absent unmounts cleanly and removes the entries and the mount points.
    gone = [{**buckets[0], "state": "absent"}]
    result, out = worker.role(
        tpu_storage_buckets=gone, tpu_storage_nfs=[{**NFS, "state": "absent"}]
    )
    assert result.returncode == 0, out[-4000:]
    assert worker.sh(f"findmnt -n {MOUNT} || true").strip() == ""
    assert BUCKET not in worker.sh("cat /etc/fstab") and "/vol1" not in worker.sh("cat /etc/fstab")
    assert worker.sh(f"test -e {MOUNT} && echo there || echo gone").strip() == "gone"
    assert _object(worker, "run1/ckpt.txt") == b"step-100\n", "unmounting must not touch the bucket"


def test_nfs_share_is_in_fstab(worker: Worker) -> None:
    """As far as this kernel allows: the fstab entry, and the role saying it did not mount."""
    result, out = worker.role(tpu_storage_nfs=[NFS])
    assert result.returncode == 0, out[-4000:]
    fstab = worker.sh("cat /etc/fstab")
    assert f"10.0.0.2:/vol1 {NFS_MOUNT} nfs _netdev,nofail,hard,timeo=600,retrans=3 0 0" in fstab, (
        fstab
    )
    if worker.sh("grep -w nfs4 /proc/filesystems || true").strip() == "":
        assert "this kernel cannot mount NFS" in out, out[-3000:]
    result, out = worker.role(tpu_storage_nfs=[{**NFS, "state": "absent"}])
    assert result.returncode == 0 and "/vol1" not in worker.sh("cat /etc/fstab"), out[-3000:]


def test_nfs_kernel_mount(worker: Worker) -> None:
    if worker.sh("grep -w nfs4 /proc/filesystems || true").strip() == "":
        reason = (
            "this kernel has no NFS client (no nfs4 in /proc/filesystems): a kernel NFS mount"
            " cannot be proved here"
        )
        print(f"SKIPPED test_nfs_kernel_mount: {reason}")
        pytest.skip(reason)
    pytest.skip("no NFS server for a kernel mount in this test; the fstab entry is tested above")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def key_server(worker: Worker) -> Iterator[str]:
    """An http server on the gateway with a stand-in key, so get_url's check-mode HEAD succeeds."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "apt-key.gpg").write_text("-----BEGIN PGP PUBLIC KEY BLOCK-----\nstand-in\n")
        httpd = HTTPServer((worker.gateway, 0), partial(_QuietHandler, directory=tmp))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            yield f"http://{worker.gateway}:{httpd.server_address[1]}"
        finally:
            httpd.shutdown()


def test_gcsfuse_check_diff_shows_source_key_and_fstab_line(
    worker: Worker, key_server: str
) -> None:
    """gcsfuse itself is out of reach: the dry run shows what a real run on Google Cloud does."""
    buckets = [
        {
            "bucket": BUCKET,
            "path": MOUNT,
            "file_cache_max_size_mb": 1024,
            "cache_dir": "/dev/shm/gcsfuse",
        }
    ]
    result, out = worker.role(
        "--check", "--diff", tpu_storage_buckets=buckets, tpu_storage_gcs_client="gcsfuse",
        tpu_storage_gcs_endpoint="", tpu_storage_gcsfuse_key_url=f"{key_server}/apt-key.gpg",
        tpu_storage_gcsfuse_apt_url="https://apt.example.test/apt",
    )  # fmt: skip
    assert result.returncode == 0, out[-4000:]
    uid = worker.sh(f"id -u {USER}").strip()
    assert (
        "deb [signed-by=/etc/apt/keyrings/cloudtpu-gcsfuse.asc]"
        " https://apt.example.test/apt gcsfuse-bookworm main" in out
    ), out[-4000:]
    assert f"its key {key_server}/apt-key.gpg in /etc/apt/keyrings/cloudtpu-gcsfuse.asc" in out, (
        out[-4000:]
    )
    assert "the gcsfuse apt source is not in place yet" in out, out[-4000:]
    line = (
        f"{BUCKET} {MOUNT} gcsfuse rw,_netdev,nofail,implicit_dirs,uid={uid},gid={uid},"
        "file_mode=640,"
        "dir_mode=750,file_cache_max_size_mb=1024,cache_dir=/dev/shm/gcsfuse,allow_other,default_permissions"
    )
    assert line in out, out[-4000:]
    assert (
        worker.sh("ls /etc/apt/sources.list.d/ /etc/apt/keyrings/ 2>/dev/null || true").count(
            "gcsfuse"
        )
        == 0
    )
    assert BUCKET not in worker.sh("cat /etc/fstab"), "check mode wrote /etc/fstab"
