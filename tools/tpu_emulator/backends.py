"""Backends decide what a TPU worker *is* when the emulator creates, stops or deletes a node.

The HTTP layer and the API model never touch workers directly; they call a backend with a
:class:`NodeInfo` and get back one :class:`WorkerAddress` per worker. The default
:class:`InMemoryBackend` hands out fake addresses. A backend that runs real workers (for example
one container per worker) implements the same five hooks; everything else stays as it is.

Hooks are called without the emulator's lock held, from operation threads, so they may block
(start containers, wait for sshd) and must be thread-safe.
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class NodeInfo:
    """What a backend needs to know about a node."""

    project: str
    zone: str
    node_id: str
    accelerator_type: str
    workers: int
    external_ips: bool
    runtime_version: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.project}/{self.zone}/{self.node_id}"


@dataclass(frozen=True)
class WorkerAddress:
    """Addresses of one worker; ``external_ip`` is None when the node has no external IPs."""

    internal_ip: str
    external_ip: str | None = None


class Backend:
    """Interface of an emulator backend. Subclasses override the hooks they need."""

    name = "base"

    def create(self, node: NodeInfo) -> list[WorkerAddress]:
        """Bring up ``node.workers`` workers; return their addresses, worker 0 first."""
        raise NotImplementedError

    def delete(self, node: NodeInfo) -> None:
        """Remove the node's workers (it is gone from the API afterwards)."""

    def stop(self, node: NodeInfo) -> None:
        """Stop the workers of a single-host node; their internal addresses are kept."""

    def start(self, node: NodeInfo) -> list[WorkerAddress]:
        """Start a stopped node again; external addresses may change, like on the real service."""
        return self.create(node)

    def preempt(self, node: NodeInfo) -> None:
        """The node was preempted: its workers are gone but the node stays listed (PREEMPTED)."""
        self.stop(node)

    def maintenance(self, node: NodeInfo) -> list[WorkerAddress]:
        """A maintenance event rebooted the workers; return their addresses, read again."""
        return self.start(node)

    def update_metadata(self, node: NodeInfo) -> None:
        """The node's metadata changed (``node.metadata`` is the new one), for running workers."""

    def attach_metadata(self, service: Any) -> None:
        """The emulator's metadata answers (``metadata.MetadataService``), for a backend whose
        workers get a metadata server; the others ignore it."""

    def close(self) -> None:
        """Release everything (called when the emulator shuts down)."""

    def describe(self) -> dict[str, Any]:
        """Backend facts for GET /_emulator/stats."""
        return {"name": self.name}


class InMemoryBackend(Backend):
    """Fake workers: internal addresses from 10.128.0.0/9 and external ones from 198.18.0.0/15
    (the range reserved for benchmarks, so they can never be mistaken for real hosts)."""

    name = "memory"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._internal = int(ipaddress.IPv4Address("10.128.0.2"))
        self._external = int(ipaddress.IPv4Address("198.18.0.2"))
        self._nodes: dict[str, list[WorkerAddress]] = {}

    def _next(self, attr: str) -> str:
        value = getattr(self, attr)
        setattr(self, attr, value + 1)
        return str(ipaddress.IPv4Address(value))

    def create(self, node: NodeInfo) -> list[WorkerAddress]:
        with self._lock:
            addresses = [
                WorkerAddress(
                    internal_ip=self._next("_internal"),
                    external_ip=self._next("_external") if node.external_ips else None,
                )
                for _ in range(max(1, node.workers))
            ]
            self._nodes[node.key] = addresses
            return addresses

    def start(self, node: NodeInfo) -> list[WorkerAddress]:
        with self._lock:
            previous = self._nodes.get(node.key)
            if not previous:
                previous = [WorkerAddress(self._next("_internal")) for _ in range(node.workers)]
            addresses = [
                WorkerAddress(
                    internal_ip=worker.internal_ip,
                    external_ip=self._next("_external") if node.external_ips else None,
                )
                for worker in previous
            ]
            self._nodes[node.key] = addresses
            return addresses

    def delete(self, node: NodeInfo) -> None:
        with self._lock:
            self._nodes.pop(node.key, None)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {"name": self.name, "nodes": len(self._nodes)}
