"""Docker backend of the emulator: every TPU worker is a container that Ansible reaches over SSH.

Select it with ``python -m tools.tpu_emulator --backend docker``. Creating a node starts one
container per worker (as many as the accelerator type has hosts) from the worker image
``cloudtpu-pod-worker:current`` (``make image``), on a docker network of the node's own, with
systemd as PID 1, a TPU-VM-like host name (``t1v-n-<hash>-w-<i>``) and the host's /dev/fuse
when it has one (a bucket mounted over FUSE, as cloudtpu.pod.storage does). The node's
``ssh-keys`` metadata (``user:key`` lines) is written to ``/etc/cloudtpu/ssh-keys`` before the
container boots, and the image's ``cloudtpu-accounts`` unit turns it into login users with
passwordless sudo, as the TPU VM guest agent does. The node's ``startup-script`` metadata, when
it has one, is written to ``/etc/cloudtpu/startup-script`` (root only) and the image's
``cloudtpu-startup`` unit runs it as root at every boot, after sshd starts, logging to the
journal and /var/log/cloudtpu-startup.log.
Every container resolves ``host.docker.internal`` to the machine running Docker, so a startup
script can reach services there (a git server, the emulator's API when it listens beyond
loopback: ``--host 0.0.0.0``). Every container also resolves ``metadata.google.internal`` to the
gateway of its node's network, where the emulator serves the node's metadata server on port 80
(``metadata.py``): each worker reads its own instance attributes, its service account's token and
writes guest attributes there, as on a TPU VM, with no setting of its own. The server tells the
workers apart by their addresses on the node's network, as Compute Engine answers each VM alone.
Port 80 needs root (or CAP_NET_BIND_SERVICE); without it the workers get no metadata server and
``describe()`` (GET /_emulator/stats) says why. A node is READY once every worker's sshd answers
with its banner.
Its network endpoints are the containers' addresses on the node's network, which the control
machine reaches directly; with external IPs enabled the same address stands for the external one
(a container has one address).

Stopping or preempting a node stops its containers; a maintenance event restarts them and reads
their addresses again; new ssh-keys metadata (nodes.patch) is applied to running workers at once,
and a new startup-script replaces the file for the next boot (as on a TPU VM, it does not run
again until then);
deleting removes the containers and the network. Everything is labelled
``cloudtpu.emulator=<emulator id>``; the emulator removes its containers when it shuts down, and
``python -m tools.tpu_emulator.docker_backend cleanup`` removes leftovers.

Settings (environment):
    CLOUDTPU_EMULATOR_IMAGE          worker image (default cloudtpu-pod-worker:current)
    CLOUDTPU_EMULATOR_ID             label value and name part (default: random per process)
    CLOUDTPU_EMULATOR_READY_TIMEOUT  seconds to wait for sshd on every worker (default 180)
    CLOUDTPU_EMULATOR_KEEP           1 keeps the containers when the emulator shuts down

Only the docker command line is used (no Python dependency beyond the standard library).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .backends import Backend, NodeInfo, WorkerAddress
from .metadata import HOST_NAME as METADATA_HOST
from .metadata import MetadataServer, MetadataService, WorkerRef

DEFAULT_IMAGE = "cloudtpu-pod-worker:current"
LABEL = "cloudtpu.emulator"
NODE_LABEL = "cloudtpu.node"
WORKER_LABEL = "cloudtpu.worker"
SSH_PORT = 22
STARTUP_SCRIPT = "/etc/cloudtpu/startup-script"
# A worker reaches the machine that runs Docker under this name, as Docker Desktop offers it.
HOST_ALIAS = "host.docker.internal"
# The metadata server's port: a TPU VM's programs call http://metadata.google.internal/ (port 80).
METADATA_PORT = 80
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
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")


class DockerError(OSError):
    """A docker command failed; the message holds the command and its output."""


def _docker(*args: str, timeout: float = 120.0, check: bool = True) -> str:
    command = ["docker", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise DockerError(
            "the docker command is not installed; run tools/ensure-docker.sh (make docker)"
        ) from None
    except subprocess.TimeoutExpired:
        raise DockerError(f"{' '.join(command)} took more than {timeout:.0f} s") from None
    if check and done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        raise DockerError(f"{' '.join(command)} failed ({done.returncode}): {output}")
    return done.stdout


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


class DockerBackend(Backend):
    """Workers as systemd+sshd containers; see the module docstring."""

    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        emulator_id: str | None = None,
        ready_timeout: float | None = None,
        keep: bool | None = None,
    ) -> None:
        self.image = image or os.environ.get("CLOUDTPU_EMULATOR_IMAGE") or DEFAULT_IMAGE
        raw_id = emulator_id or os.environ.get("CLOUDTPU_EMULATOR_ID") or secrets.token_hex(3)
        self.emulator_id = _NAME_UNSAFE.sub("-", raw_id)[:24]
        self.ready_timeout = float(
            ready_timeout
            if ready_timeout is not None
            else os.environ.get("CLOUDTPU_EMULATOR_READY_TIMEOUT") or 180
        )
        self.keep = keep if keep is not None else os.environ.get("CLOUDTPU_EMULATOR_KEEP") == "1"
        self._lock = threading.Lock()
        self._nodes: dict[str, list[str]] = {}
        self._metadata: MetadataService | None = None
        self._listeners: dict[str, MetadataServer] = {}
        self._seen: dict[str, dict[str, int]] = {}  # node key -> worker address -> worker index
        self.metadata_problem = ""
        if shutil.which("docker") is None:
            raise DockerError(
                "docker backend: the docker command is not installed; run tools/ensure-docker.sh"
            )
        info = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", self.image],
            capture_output=True,
            text=True,
            check=False,
        )
        if info.returncode != 0:
            raise DockerError(
                f"docker backend: image {self.image} is missing or the Docker daemon does not "
                f"answer ({(info.stderr or '').strip()}); run 'make image' (it starts Docker too)"
            )

    # -- names -----------------------------------------------------------------------------------

    def _base(self, node: NodeInfo) -> str:
        digest = hashlib.sha256(node.key.encode()).hexdigest()[:6]
        return _NAME_UNSAFE.sub("-", f"ctpu-{self.emulator_id}-{node.node_id}-{digest}")

    def network_name(self, node: NodeInfo) -> str:
        return self._base(node)

    def container_names(self, node: NodeInfo) -> list[str]:
        return [f"{self._base(node)}-w{i}" for i in range(max(1, node.workers))]

    def _labels(self, node: NodeInfo) -> list[str]:
        return ["--label", f"{LABEL}={self.emulator_id}", "--label", f"{NODE_LABEL}={node.key}"]

    # -- container plumbing ---------------------------------------------------------------------

    def _ssh_keys_file(self, node: NodeInfo, folder: str) -> Path:
        lines = [
            line.strip()
            for line in str(node.metadata.get("ssh-keys") or "").splitlines()
            if line.strip()
        ]
        path = Path(folder) / "ssh-keys"
        path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        path.chmod(0o644)
        return path

    def _startup_script_file(self, node: NodeInfo, folder: str) -> Path:
        """The node's startup-script metadata as a root-only file (empty when it has none: the
        image's unit runs only a file that is not empty)."""
        text = str(node.metadata.get("startup-script") or "")
        if text.strip() and not text.endswith("\n"):
            text += "\n"
        path = Path(folder) / "startup-script"
        path.write_text(text if text.strip() else "", encoding="utf-8")
        path.chmod(0o700)
        return path

    def _copy_metadata(self, node: NodeInfo, folder: str, container: str) -> None:
        """ssh-keys and startup-script metadata into a worker, as its guest agent reads them."""
        _docker("cp", str(self._ssh_keys_file(node, folder)), f"{container}:/etc/cloudtpu/ssh-keys")
        script = self._startup_script_file(node, folder)
        _docker("cp", str(script), f"{container}:{STARTUP_SCRIPT}")

    def _address(self, container: str) -> str:
        out = _docker(
            "inspect",
            "--format",
            "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
            container,
        )
        addresses = out.split()
        return addresses[0] if addresses else ""

    def _running(self, container: str) -> bool:
        out = _docker("inspect", "--format", "{{.State.Running}}", container, check=False)
        return out.strip() == "true"

    def _wait_ready(self, containers: list[str]) -> list[str]:
        """Wait until every container's sshd sends its banner; return their addresses."""
        deadline = time.monotonic() + self.ready_timeout
        addresses = [""] * len(containers)
        pending = set(range(len(containers)))
        while pending:
            for index in sorted(pending):
                container = containers[index]
                if not self._running(container):
                    logs = _docker("logs", "--tail", "20", container, check=False)
                    raise DockerError(f"worker container {container} stopped while booting: {logs}")
                address = self._address(container)
                if address and ssh_banner(address):
                    addresses[index] = address
                    pending.discard(index)
            if not pending:
                break
            if time.monotonic() > deadline:
                names = ", ".join(containers[i] for i in sorted(pending))
                raise DockerError(
                    f"sshd did not answer within {self.ready_timeout:.0f} s on {names}; see "
                    "'docker logs' of those containers"
                )
            time.sleep(0.5)
        return addresses

    def _addresses(self, node: NodeInfo, containers: list[str]) -> list[WorkerAddress]:
        ips = self._wait_ready(containers)
        with self._lock:
            self._seen[node.key] = {ip: index for index, ip in enumerate(ips)}
        return [WorkerAddress(ip, ip if node.external_ips else None) for ip in ips]

    # -- the metadata server -------------------------------------------------------------------

    def attach_metadata(self, service: MetadataService) -> None:
        self._metadata = service

    def _gateway(self, network: str) -> str:
        out = _docker(
            "network", "inspect", "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", network
        )
        return next((a for a in out.split() if "." in a), "")

    def _serve_metadata(self, node: NodeInfo, network: str) -> str:
        """Start the node's metadata server on its network's gateway; return that address (what
        the workers resolve metadata.google.internal to), or '' with the reason kept in
        ``metadata_problem``."""
        gateway = self._gateway(network) if self._metadata is not None else ""
        if not gateway:
            return ""
        try:
            server = MetadataServer(
                self._metadata, gateway, METADATA_PORT, lambda ip: self._worker_at(node, ip)
            ).start()
        except OSError as exc:
            self.metadata_problem = (
                f"no metadata server for the workers: cannot listen on {gateway}:{METADATA_PORT} "
                f"({exc.strerror or exc}); run the emulator as root (or give its Python "
                "CAP_NET_BIND_SERVICE)"
            )
            print(f"tpu emulator: {self.metadata_problem}", file=sys.stderr, flush=True)
            return ""
        with self._lock:
            self._listeners[node.key] = server
        return gateway

    def _stop_metadata(self, node: NodeInfo) -> None:
        with self._lock:
            server = self._listeners.pop(node.key, None)
            self._seen.pop(node.key, None)
        if server is not None:
            server.stop()

    def _worker_at(self, node: NodeInfo, address: str) -> WorkerRef | None:
        """The worker of ``node`` at ``address``; its containers are looked at again once when
        the address is new (a worker asks before the node is READY, or after a restart)."""
        for look in (False, True):
            if look:
                seen = {}
                for index, container in enumerate(self.container_names(node)):
                    try:
                        seen[self._address(container)] = index
                    except DockerError:
                        continue
                with self._lock:
                    self._seen[node.key] = seen
            with self._lock:
                index = self._seen.get(node.key, {}).get(address)
            if index is not None:
                hostname = tpu_vm_hostname(node, index)
                return WorkerRef(node.project, node.zone, node.node_id, index, hostname, address)
        return None

    def _remove(self, node: NodeInfo) -> None:
        listed = _docker(
            "ps",
            "-aq",
            "--filter",
            f"label={LABEL}={self.emulator_id}",
            "--filter",
            f"label={NODE_LABEL}={node.key}",
        ).split()
        if listed:
            _docker("rm", "-f", "-v", *listed, timeout=180)
        self._stop_metadata(node)
        _docker("network", "rm", self.network_name(node), check=False)

    # -- backend hooks -------------------------------------------------------------------------

    def create(self, node: NodeInfo) -> list[WorkerAddress]:
        self._remove(node)  # leftovers of an earlier attempt under the same name
        network = self.network_name(node)
        containers = self.container_names(node)
        try:
            _docker("network", "create", *self._labels(node), network)
            metadata = self._serve_metadata(node, network)
            hosts = [f"{HOST_ALIAS}:host-gateway"]
            if metadata:
                hosts.append(f"{METADATA_HOST}:{metadata}")
            with tempfile.TemporaryDirectory(prefix="ctpu-keys-") as folder:
                for worker, container in enumerate(containers):
                    _docker(
                        "create",
                        "--name",
                        container,
                        "--hostname",
                        tpu_vm_hostname(node, worker),
                        "--network",
                        network,
                        *(arg for host in hosts for arg in ("--add-host", host)),
                        *self._labels(node),
                        "--label",
                        f"{WORKER_LABEL}={worker}",
                        *SYSTEMD_RUN_ARGS,
                        *fuse_run_args(),
                        self.image,
                        "/lib/systemd/systemd",
                    )
                    self._copy_metadata(node, folder, container)
            _docker("start", *containers)
            addresses = self._addresses(node, containers)
        except (DockerError, OSError):
            self._remove(node)
            raise
        with self._lock:
            self._nodes[node.key] = containers
        return addresses

    def stop(self, node: NodeInfo) -> None:
        containers = self.container_names(node)
        _docker("stop", *containers, timeout=60, check=False)

    def preempt(self, node: NodeInfo) -> None:
        # Preemption gives the workers no time to shut down.
        _docker("kill", *self.container_names(node), check=False)

    def start(self, node: NodeInfo) -> list[WorkerAddress]:
        containers = self.container_names(node)
        if not all(_docker("ps", "-aq", "--filter", f"name=^{c}$").strip() for c in containers):
            return self.create(node)
        # Metadata changed while the node was stopped is read at boot.
        with tempfile.TemporaryDirectory(prefix="ctpu-keys-") as folder:
            for container in containers:
                self._copy_metadata(node, folder, container)
        _docker("start", *containers)
        return self._addresses(node, containers)

    def maintenance(self, node: NodeInfo) -> list[WorkerAddress]:
        containers = self.container_names(node)
        _docker("restart", *containers, timeout=120)
        return self._addresses(node, containers)

    def update_metadata(self, node: NodeInfo) -> None:
        """New ssh-keys reach running workers at once: the file is replaced and the accounts
        script runs again (it adds users and keys; like the guest agent it needs no reboot).
        A new or removed startup-script takes effect at the next boot, as on a TPU VM."""
        running = [c for c in self.container_names(node) if self._running(c)]
        if not running:
            return
        with tempfile.TemporaryDirectory(prefix="ctpu-keys-") as folder:
            for container in running:
                self._copy_metadata(node, folder, container)
                _docker("exec", container, "/usr/local/sbin/cloudtpu-accounts")

    def delete(self, node: NodeInfo) -> None:
        self._remove(node)
        with self._lock:
            self._nodes.pop(node.key, None)

    def close(self) -> None:
        with self._lock:
            listeners = list(self._listeners.values())
            self._listeners.clear()
        for server in listeners:
            server.stop()
        if self.keep:
            return
        cleanup(self.emulator_id)
        with self._lock:
            self._nodes.clear()

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {
                "name": self.name,
                "emulator_id": self.emulator_id,
                "image": self.image,
                "nodes": len(self._nodes),
                "containers": sum(len(c) for c in self._nodes.values()),
                "metadata_servers": len(self._listeners),
                "metadata_problem": self.metadata_problem,
            }


def leftovers(emulator_id: str | None = None) -> dict[str, list[str]]:
    """Containers and networks labelled by an emulator (``None``: by any emulator)."""
    label = f"label={LABEL}={emulator_id}" if emulator_id else f"label={LABEL}"
    containers = _docker("ps", "-a", "--format", "{{.Names}}", "--filter", label).split()
    networks = _docker("network", "ls", "--format", "{{.Name}}", "--filter", label).split()
    return {"containers": sorted(containers), "networks": sorted(networks)}


def cleanup(emulator_id: str | None = None) -> dict[str, list[str]]:
    """Remove the containers and networks of an emulator (``None``: of every emulator)."""
    found = leftovers(emulator_id)
    if found["containers"]:
        _docker("rm", "-f", "-v", *found["containers"], timeout=180)
    for network in found["networks"]:
        _docker("network", "rm", network, check=False)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.tpu_emulator.docker_backend",
        description="List or remove the containers and networks of the emulator's Docker backend.",
    )
    parser.add_argument("action", choices=["list", "cleanup"])
    parser.add_argument("--id", help="only those of this emulator id (default: every emulator)")
    args = parser.parse_args(argv)
    try:
        found = cleanup(args.id) if args.action == "cleanup" else leftovers(args.id)
    except DockerError as exc:
        print(f"docker backend: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
