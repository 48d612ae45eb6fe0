"""One TPU worker of the Docker backend (``docker_backend.py``): its container, how it boots,
the metadata it reads at boot, and when it is ready.

A worker is a container of the worker image (``make image``) with systemd as PID 1, a
TPU-VM-like host name (``t1v-n-<hash>-w-<i>``) and the host's /dev/fuse when it has one (a bucket
mounted over FUSE, as cloudtpu.pod.storage does). The node's ``ssh-keys`` metadata (``user:key``
lines) is written to ``/etc/cloudtpu/ssh-keys`` before the container boots, and the image's
``cloudtpu-accounts`` unit turns it into login users with passwordless sudo, as the TPU VM guest
agent does. The node's ``startup-script`` metadata, when it has one, is written to
``/etc/cloudtpu/startup-script`` (root only) and the image's ``cloudtpu-startup`` unit runs it as
root at every boot, after sshd starts, logging to the journal and
/var/log/cloudtpu-startup.log. A worker is ready once its sshd answers with its banner.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from pathlib import Path

from . import docker_cli
from .backends import NodeInfo
from .docker_cli import WORKER_LABEL, DockerError

SSH_PORT = 22
STARTUP_SCRIPT = "/etc/cloudtpu/startup-script"
SSH_KEYS = "/etc/cloudtpu/ssh-keys"
# The container options systemd needs as PID 1 on hosts where --privileged is refused.
# fmt: off
SYSTEMD_RUN_ARGS = [
    "--cap-add", "SYS_ADMIN",
    "--tmpfs", "/run",
    "--tmpfs", "/run/lock",
    "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
    "--cgroupns", "host",
    # systemd shuts down cleanly on SIGRTMIN+3; SIGTERM would only make it re-execute.
    "--stop-signal", "SIGRTMIN+3",
    "--stop-timeout", "10",
    # The pod's shared folder (cloudtpu.pod.nfs exports /srv/nfs/shared by default) lives on
    # a volume, as on a VM's disk: nfs-ganesha cannot export from the container's overlayfs,
    # and it needs DAC_READ_SEARCH to open files by handle.
    "--cap-add", "DAC_READ_SEARCH",
    # root on a VM may look at every process's open files (tpu-unlock finds TPU holders so).
    "--cap-add", "SYS_PTRACE",
    "-v", "/srv/nfs",
]
# fmt: on
# A TPU VM mounts buckets over FUSE: a worker gets the host's device when it has one (SYS_ADMIN
# is above), outside AppArmor's default profile, which refuses every mount where Docker uses it.
FUSE_DEVICE = "/dev/fuse"


def ssh_banner(address: str, port: int = SSH_PORT, timeout: float = 2.0) -> str:
    """The SSH identification line a server sends first, or '' when none came."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            data = conn.recv(256)
    except OSError:
        return ""
    line = data.split(b"\n", 1)[0].decode("ascii", "replace").strip()
    return line if line.startswith("SSH-") else ""


def fuse_run_args(device: str = FUSE_DEVICE) -> list[str]:
    """The docker options that let a worker mount FUSE; none when the host has no such device."""
    if not os.path.exists(device):
        return []
    return ["--device", device, "--security-opt", "apparmor=unconfined"]


def tpu_vm_hostname(node: NodeInfo, worker: int) -> str:
    """A host name shaped like a TPU VM worker's: ``t1v-n-<8 hex>-w-<i>``."""
    digest = hashlib.sha256(node.key.encode()).hexdigest()[:8]
    return f"t1v-n-{digest}-w-{worker}"


def create(
    container: str,
    image: str,
    node: NodeInfo,
    worker: int,
    network: str,
    hosts: list[str],
    labels: list[str],
) -> None:
    """Create (not start) worker ``worker`` of ``node`` on ``network``; ``hosts`` are
    ``name:address`` entries of its /etc/hosts, ``labels`` docker ``--label`` options."""
    docker_cli.call(
        "create",
        "--name",
        container,
        "--hostname",
        tpu_vm_hostname(node, worker),
        "--network",
        network,
        *(arg for host in hosts for arg in ("--add-host", host)),
        *labels,
        "--label",
        f"{WORKER_LABEL}={worker}",
        *SYSTEMD_RUN_ARGS,
        *fuse_run_args(),
        image,
        "/lib/systemd/systemd",
    )


def ssh_keys_file(node: NodeInfo, folder: str) -> Path:
    """The node's ssh-keys metadata as a file in ``folder``, one ``user:key`` line each."""
    lines = [
        line.strip()
        for line in str(node.metadata.get("ssh-keys") or "").splitlines()
        if line.strip()
    ]
    path = Path(folder) / "ssh-keys"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    path.chmod(0o644)
    return path


def startup_script_file(node: NodeInfo, folder: str) -> Path:
    """The node's startup-script metadata as a root-only file (empty when it has none: the
    image's unit runs only a file that is not empty)."""
    text = str(node.metadata.get("startup-script") or "")
    if text.strip() and not text.endswith("\n"):
        text += "\n"
    path = Path(folder) / "startup-script"
    path.write_text(text if text.strip() else "", encoding="utf-8")
    path.chmod(0o700)
    return path


def copy_metadata(node: NodeInfo, folder: str, container: str) -> None:
    """ssh-keys and startup-script metadata into a worker, as its guest agent reads them;
    ``folder`` is a scratch folder for the files."""
    docker_cli.call("cp", str(ssh_keys_file(node, folder)), f"{container}:{SSH_KEYS}")
    script = startup_script_file(node, folder)
    docker_cli.call("cp", str(script), f"{container}:{STARTUP_SCRIPT}")


def address(container: str) -> str:
    """The container's address on its network ('' when it has none, stopped say)."""
    out = docker_cli.call(
        "inspect",
        "--format",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
        container,
    )
    addresses = out.split()
    return addresses[0] if addresses else ""


def running(container: str) -> bool:
    out = docker_cli.call("inspect", "--format", "{{.State.Running}}", container, check=False)
    return out.strip() == "true"


def wait_ready(containers: list[str], timeout: float) -> list[str]:
    """Wait until every container's sshd sends its banner; return their addresses."""
    deadline = time.monotonic() + timeout
    addresses = [""] * len(containers)
    pending = set(range(len(containers)))
    while pending:
        for index in sorted(pending):
            container = containers[index]
            if not running(container):
                logs = docker_cli.call("logs", "--tail", "20", container, check=False)
                raise DockerError(f"worker container {container} stopped while booting: {logs}")
            found = address(container)
            if found and ssh_banner(found):
                addresses[index] = found
                pending.discard(index)
        if not pending:
            break
        if time.monotonic() > deadline:
            names = ", ".join(containers[i] for i in sorted(pending))
            raise DockerError(
                f"sshd did not answer within {timeout:.0f} s on {names}; see "
                "'docker logs' of those containers"
            )
        time.sleep(0.5)
    return addresses
