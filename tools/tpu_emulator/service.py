"""locations.generateServiceIdentity and nodes.getGuestAttributes, and what the workers'
metadata server (``metadata.py``) reads and writes: guest attributes and service account tokens.

The service identity is the project's Cloud TPU service agent,
``service-<project number>@cloud-tpu.iam.gserviceaccount.com``.

Guest attributes are what the guest environment of each worker publishes; the emulator's
workers publish their SSH host key under ``hostkeys/ssh-ed25519`` (what ``gcloud`` reads to pin
a TPU VM's host keys), a key made up from the node's name and the worker's index, the same on
every call, and whatever a program on the worker PUTs to its metadata server. They belong to
the VM: a node created again under the same name starts with none; a reboot keeps them. A worker
that is not running publishes nothing.

A worker's service account is the node's ``serviceAccount.email`` (``default``: the project's
Compute Engine default account, ``NUMBER-compute@developer.gserviceaccount.com``) with the
node's scopes. Its tokens (:meth:`Service.mint_token`) are accepted by the emulator's API until
they expire (``settings.token_lifetime`` seconds, 3599 as Google's), also when
``settings.tokens`` lists other tokens; one without the cloud-platform scope is refused (403
ACCESS_TOKEN_SCOPE_INSUFFICIENT), as the TPU API refuses it.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import struct
import time
from collections import Counter
from typing import Any

from . import catalog, errors
from .common import RUNNING_STATES, Project, tpu_scope

# A cached token is handed out again until this many seconds are left of it.
TOKEN_REUSE_MARGIN = 300


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def host_key(node_name: str, worker: int) -> str:
    """A well-formed ssh-ed25519 public key blob (base64), fixed for a node's worker."""
    point = hashlib.sha256(f"{node_name}#{worker}".encode()).digest()
    return base64.b64encode(_ssh_string(b"ssh-ed25519") + _ssh_string(point)).decode()


class Service:
    """The service agent, the workers' guest attributes and their service account tokens."""

    # Set by the Emulator: guest attributes by (node name, createTime) -> worker -> ns -> key,
    # and the tokens handed out -> (email, scopes, expiry on time.monotonic()).
    guest: dict[tuple[str, str], dict[int, dict[str, dict[str, str]]]]
    minted: dict[str, tuple[str, tuple[str, ...], float]]
    token_counts: Counter[str]  # tokens minted, API calls made with one

    @staticmethod
    def _vm_key(node: dict[str, Any]) -> tuple[str, str]:
        """The VM behind a node: a node made again under its name is another VM."""
        return str(node.get("name", "")), str(node.get("createTime", ""))

    def _worker_node(self, project_id: str, zone: str, node_id: str) -> tuple[Project, Any] | None:
        project = self.projects.get(project_id)
        node = project.nodes.get(zone, {}).get(node_id) if project else None
        return (project, node) if node is not None else None

    def worker_facts(self, ref: Any) -> dict[str, Any] | None:
        """What a worker's metadata server answers from (None: its node is gone)."""
        with self.lock:
            found = self._worker_node(ref.project, ref.zone, ref.node_id)
            if found is None:
                return None
            project, node = found
            account = node.get("serviceAccount") or {}
            email = str(account.get("email") or "default")
            if email == "default":
                email = f"{project.number}-compute@developer.gserviceaccount.com"
            endpoints = node.get("networkEndpoints") or []
            ip = endpoints[ref.worker].get("ipAddress", "") if ref.worker < len(endpoints) else ""
            stored = self.guest.get(self._vm_key(node), {}).get(ref.worker, {})
            vm_id = hashlib.sha256(f"{node['name']}#{ref.worker}".encode()).hexdigest()[:15]
            return {
                "number": project.number,
                "project_metadata": dict(project.metadata),
                "metadata": {str(k): str(v) for k, v in (node.get("metadata") or {}).items()},
                "email": email,
                "scopes": list(account.get("scope") or [tpu_scope()]),
                "ip": ip or ref.address,
                "id": str(int(vm_id, 16)),
                "guest_attributes": {ns: dict(keys) for ns, keys in stored.items()},
            }

    def set_guest_attribute(self, ref: Any, namespace: str, key: str, value: str | None) -> bool:
        """A worker writes (or, with None, deletes) a guest attribute; False: its node is gone."""
        with self.lock:
            found = self._worker_node(ref.project, ref.zone, ref.node_id)
            if found is None:
                return False
            vm = self._vm_key(found[1])
            for other in [k for k in self.guest if k[0] == vm[0] and k != vm]:
                del self.guest[other]  # an earlier VM of the same name
            spaces = self.guest.setdefault(vm, {}).setdefault(ref.worker, {})
            if value is None:
                spaces.get(namespace, {}).pop(key, None)
                if not spaces.get(namespace, True):
                    del spaces[namespace]
            else:
                spaces.setdefault(namespace, {})[key] = value
            return True

    def mint_token(self, email: str, scopes: list[str]) -> tuple[str, int]:
        """An access token of ``email`` with ``scopes`` and its seconds left; one handed out
        before comes again while it has more than TOKEN_REUSE_MARGIN seconds left."""
        wanted = tuple(scopes)
        now = time.monotonic()
        with self.lock:
            for token, (owner, held, expiry) in self.minted.items():
                if owner == email and held == wanted and expiry - now > TOKEN_REUSE_MARGIN:
                    return token, int(expiry - now)
            lifetime = float(self.settings.get("token_lifetime", 3599))
            token = "ya29.emulated-" + secrets.token_urlsafe(32)
            # kept after they expire, so that the API refuses them then (one an hour an account)
            self.minted[token] = (email, wanted, now + lifetime)
            self.token_counts["minted"] += 1
            return token, int(lifetime)

    def token_problem(self, token: str) -> errors.ApiError | None:
        """Why the API refuses a bearer token, or None: a token handed out by a worker's metadata
        server counts until it expires, with the cloud-platform scope; another one only when
        ``settings.tokens`` is empty or lists it."""
        with self.lock:
            minted = self.minted.get(token)
            listed = self.settings.get("tokens") or []
        if minted is None:
            return errors.invalid_token() if listed and token not in listed else None
        if minted[2] <= time.monotonic():
            return errors.invalid_token()
        if tpu_scope() not in minted[1]:
            return errors.scope_insufficient()
        with self.lock:
            self.token_counts["api_calls"] += 1
        return None

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
        stored = self.guest.get(self._vm_key(node), {})
        out = []
        for worker in indexes or range(workers):
            items = []
            if running:
                written = {
                    (ns, key): value
                    for ns, keys in stored.get(worker, {}).items()
                    for key, value in keys.items()
                }
                written.setdefault(("hostkeys", "ssh-ed25519"), host_key(node["name"], worker))
                for (ns, key), value in sorted(written.items()):
                    entry = {"namespace": ns, "key": key, "value": value}
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
