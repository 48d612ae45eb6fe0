"""Docker backend of the emulator: every TPU worker is a container that Ansible reaches over SSH.

Select it with ``python -m tools.tpu_emulator --backend docker``. Creating a node starts one
container per worker (as many as the accelerator type has hosts) from the worker image
``cloudtpu-pod-worker:current`` (``make image``), on a docker network of the node's own; what a
worker container is, how it boots and reads the node's ssh-keys and startup-script metadata, and
when it is ready (its sshd answers) is ``docker_worker.py``. Every docker command goes through
``docker_cli.py``.
Every container resolves ``host.docker.internal`` to the machine running Docker, so a startup
script can reach services there (a git server, the emulator's API when it listens beyond
loopback: ``--host 0.0.0.0``). Every container also resolves ``metadata.google.internal`` to the
gateway of its node's network, where the emulator serves the node's metadata server on port 80
(``metadata.py``): each worker reads its own instance attributes, its service account's token and
writes guest attributes there, as on a TPU VM, with no setting of its own. The server tells the
workers apart by their addresses on the node's network, as Compute Engine answers each VM alone.
Port 80 needs root (or CAP_NET_BIND_SERVICE); without it the workers get no metadata server and
``describe()`` (GET /_emulator/stats) says why. A node is READY once every worker is ready.
Its network endpoints are the containers' addresses on the node's network, which the control
machine reaches directly; with external IPs enabled the same address stands for the external one
(a container has one address).

Stopping or preempting a node stops its containers; a maintenance event restarts them and reads
their addresses again; new ssh-keys metadata (nodes.patch) is applied to running workers at once,
and a new startup-script replaces the file for the next boot (as on a TPU VM, it does not run
again until then);
deleting removes the containers and the network. Everything is labelled
``cloudtpu.emulator=<emulator id>``; the emulator removes its containers when it shuts down, and
``python -m tools.tpu_emulator.docker_backend cleanup`` removes leftovers (``docker_cleanup.py``).

Settings (environment):
    CLOUDTPU_EMULATOR_IMAGE          worker image (default cloudtpu-pod-worker:current)
    CLOUDTPU_EMULATOR_ID             label value and name part (default: random per process)
    CLOUDTPU_EMULATOR_READY_TIMEOUT  seconds to wait for sshd on every worker (default 180)
    CLOUDTPU_EMULATOR_KEEP           1 keeps the containers when the emulator shuts down

Only the docker command line is used (no Python dependency beyond the standard library).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Any

from . import docker_cli, docker_worker
from .backends import Backend, NodeInfo, WorkerAddress
from .docker_cleanup import cleanup, main
from .docker_cli import LABEL, NODE_LABEL, DockerError
from .metadata import HOST_NAME as METADATA_HOST
from .metadata import MetadataServer, MetadataService, WorkerRef

DEFAULT_IMAGE = "cloudtpu-pod-worker:current"
# A worker reaches the machine that runs Docker under this name, as Docker Desktop offers it.
HOST_ALIAS = "host.docker.internal"
# The metadata server's port: a TPU VM's programs call http://metadata.google.internal/ (port 80).
METADATA_PORT = 80
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")


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

    # -- the workers' addresses --------------------------------------------------------------------

    def _addresses(self, node: NodeInfo, containers: list[str]) -> list[WorkerAddress]:
        ips = docker_worker.wait_ready(containers, self.ready_timeout)
        with self._lock:
            self._seen[node.key] = {ip: index for index, ip in enumerate(ips)}
        return [WorkerAddress(ip, ip if node.external_ips else None) for ip in ips]

    # -- the metadata server -------------------------------------------------------------------

    def attach_metadata(self, service: MetadataService) -> None:
        self._metadata = service

    def _gateway(self, network: str) -> str:
        return docker_cli.gateway(network)

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
                        seen[docker_worker.address(container)] = index
                    except DockerError:
                        continue
                with self._lock:
                    self._seen[node.key] = seen
            with self._lock:
                index = self._seen.get(node.key, {}).get(address)
            if index is not None:
                hostname = docker_worker.tpu_vm_hostname(node, index)
                return WorkerRef(node.project, node.zone, node.node_id, index, hostname, address)
        return None

    def _remove(self, node: NodeInfo) -> None:
        listed = docker_cli.call(
            "ps",
            "-aq",
            "--filter",
            f"label={LABEL}={self.emulator_id}",
            "--filter",
            f"label={NODE_LABEL}={node.key}",
        ).split()
        if listed:
            docker_cli.call("rm", "-f", "-v", *listed, timeout=180)
        self._stop_metadata(node)
        docker_cli.call("network", "rm", self.network_name(node), check=False)

    # -- backend hooks -------------------------------------------------------------------------

    def create(self, node: NodeInfo) -> list[WorkerAddress]:
        self._remove(node)  # leftovers of an earlier attempt under the same name
        network = self.network_name(node)
        containers = self.container_names(node)
        try:
            docker_cli.call("network", "create", *self._labels(node), network)
            metadata = self._serve_metadata(node, network)
            hosts = [f"{HOST_ALIAS}:host-gateway"]
            if metadata:
                hosts.append(f"{METADATA_HOST}:{metadata}")
            with tempfile.TemporaryDirectory(prefix="ctpu-keys-") as folder:
                for worker, container in enumerate(containers):
                    docker_worker.create(
                        container, self.image, node, worker, network, hosts, self._labels(node)
                    )
                    docker_worker.copy_metadata(node, folder, container)
            docker_cli.call("start", *containers)
            addresses = self._addresses(node, containers)
        except (DockerError, OSError):
            self._remove(node)
            raise
        with self._lock:
            self._nodes[node.key] = containers
        return addresses

    def stop(self, node: NodeInfo) -> None:
        containers = self.container_names(node)
        docker_cli.call("stop", *containers, timeout=60, check=False)

    def preempt(self, node: NodeInfo) -> None:
        # Preemption gives the workers no time to shut down.
        docker_cli.call("kill", *self.container_names(node), check=False)

    def start(self, node: NodeInfo) -> list[WorkerAddress]:
        containers = self.container_names(node)
        if not all(
            docker_cli.call("ps", "-aq", "--filter", f"name=^{c}$").strip() for c in containers
        ):
            return self.create(node)
        # Metadata changed while the node was stopped is read at boot.
        with tempfile.TemporaryDirectory(prefix="ctpu-keys-") as folder:
            for container in containers:
                docker_worker.copy_metadata(node, folder, container)
        docker_cli.call("start", *containers)
        return self._addresses(node, containers)

    def maintenance(self, node: NodeInfo) -> list[WorkerAddress]:
        containers = self.container_names(node)
        docker_cli.call("restart", *containers, timeout=120)
        return self._addresses(node, containers)

    def update_metadata(self, node: NodeInfo) -> None:
        """New ssh-keys reach running workers at once: the file is replaced and the accounts
        script runs again (it adds users and keys; like the guest agent it needs no reboot).
        A new or removed startup-script takes effect at the next boot, as on a TPU VM."""
        running = [c for c in self.container_names(node) if docker_worker.running(c)]
        if not running:
            return
        with tempfile.TemporaryDirectory(prefix="ctpu-keys-") as folder:
            for container in running:
                docker_worker.copy_metadata(node, folder, container)
                docker_cli.call("exec", container, "/usr/local/sbin/cloudtpu-accounts")

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


if __name__ == "__main__":
    sys.exit(main())
