"""locations.generateServiceIdentity and nodes.getGuestAttributes.

The service identity is the project's Cloud TPU service agent,
``service-<project number>@cloud-tpu.iam.gserviceaccount.com``.

Guest attributes are what the guest environment of each worker publishes; the emulator's
workers publish their SSH host key under ``hostkeys/ssh-ed25519`` (what ``gcloud`` reads to pin
a TPU VM's host keys), a key made up from the node's name and the worker's index, the same on
every call. A worker that is not running publishes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from typing import Any

from . import catalog, errors
from .common import RUNNING_STATES, Project


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def host_key(node_name: str, worker: int) -> str:
    """A well-formed ssh-ed25519 public key blob (base64), fixed for a node's worker."""
    point = hashlib.sha256(f"{node_name}#{worker}".encode()).digest()
    return base64.b64encode(_ssh_string(b"ssh-ed25519") + _ssh_string(point)).decode()


class Service:
    """The service agent and the workers' guest attributes."""

    def _locations_generateserviceidentity(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        email = f"service-{project.number}@cloud-tpu.iam.gserviceaccount.com"
        return 200, {"identity": {"email": email}}

    def _nodes_getguestattributes(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        node = self._get_node(project, params["z"], params["n"])
        workers = len(node.get("networkEndpoints") or []) or catalog.hosts(catalog.node_type(node))
        workers = workers or 1
        path = body.get("queryPath") or ""
        if not isinstance(path, str):
            raise errors.invalid("query_path must be a string.", "query_path")
        asked = body.get("workerIds") or []
        if not isinstance(asked, list):
            raise errors.invalid("worker_ids must be a list.", "worker_ids")
        indexes = []
        for worker_id in asked:
            text = str(worker_id)
            if not text.isdigit() or int(text) >= workers:
                raise errors.invalid(
                    f"Invalid worker id '{text}': node {params['n']} has workers 0 to "
                    f"{workers - 1}.",
                    "worker_ids",
                )
            indexes.append(int(text))
        running = node.get("state") in RUNNING_STATES
        out = []
        for worker in indexes or range(workers):
            items = []
            if running:
                entry = {
                    "namespace": "hostkeys",
                    "key": "ssh-ed25519",
                    "value": host_key(node["name"], worker),
                }
                if _matches(path, entry):
                    items.append(entry)
            value: dict[str, Any] = {"items": items} if items else {}
            out.append({"queryPath": path, "queryValue": value})
        return 200, {"guestAttributes": out}


def _matches(path: str, entry: dict[str, str]) -> bool:
    """'' matches everything, 'ns/' (or 'ns') a namespace, 'ns/key' one attribute."""
    if not path:
        return True
    namespace, _, key = path.partition("/")
    return namespace == entry["namespace"] and (not key or key == entry["key"])
