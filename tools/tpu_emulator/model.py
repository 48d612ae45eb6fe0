"""The emulated Cloud TPU v2 API: state, routes and long-running operations.

:class:`Emulator` is independent of HTTP: ``dispatch(method, path, query, body, headers)``
returns ``(status, json_body)``. The server module wraps it in an HTTP server.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import fnmatch
import hashlib
import json
import re
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from . import errors
from .backends import Backend, InMemoryBackend, NodeInfo, WorkerAddress
from .facts import tpu_facts
from .faults import FaultPlan

API_VERSION = "v2"
TYPE_PREFIX = "type.googleapis.com/google.cloud.tpu.v2."
DEFAULT_ZONES = [
    "us-central1-a",
    "us-central1-b",
    "us-central2-b",
    "us-east1-d",
    "us-east5-a",
    "us-west4-a",
    "europe-west4-a",
    "asia-northeast1-b",
]
DEFAULT_SETTINGS: dict[str, Any] = {
    "default_page_size": 100,
    "max_page_size": 1000,
    "operation_delay": 1.0,
    "wildcard": True,
    "tokens": [],
    "validate_accelerator_types": True,
}
NODE_ID_RE = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
# States in which a node's workers exist and have addresses.
RUNNING_STATES = {"READY", "REPAIRING", "RESTARTING", "REIMAGING", "STOPPING"}
OFF_STATES = {"STOPPED", "PREEMPTED", "TERMINATED"}

PERMISSIONS = {
    "locations.list": "tpu.locations.list",
    "locations.get": "tpu.locations.get",
    "acceleratorTypes.list": "tpu.acceleratorTypes.list",
    "nodes.list": "tpu.nodes.list",
    "nodes.get": "tpu.nodes.get",
    "nodes.create": "tpu.nodes.create",
    "nodes.delete": "tpu.nodes.delete",
    "nodes.start": "tpu.nodes.start",
    "nodes.stop": "tpu.nodes.stop",
    "nodes.patch": "tpu.nodes.update",
    "operations.list": "tpu.operations.list",
    "operations.get": "tpu.operations.get",
    "queuedResources.list": "tpu.queuedResources.list",
    "queuedResources.get": "tpu.queuedResources.get",
    "queuedResources.create": "tpu.queuedResources.create",
    "queuedResources.delete": "tpu.queuedResources.delete",
}

_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"^projects/(?P<p>[^/]+)/locations$"), "locations.list"),
    ("GET", re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)$"), "locations.get"),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/acceleratorTypes$"),
        "acceleratorTypes.list",
    ),
    ("GET", re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes$"), "nodes.list"),
    ("POST", re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes$"), "nodes.create"),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+)$"),
        "nodes.get",
    ),
    (
        "DELETE",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+)$"),
        "nodes.delete",
    ),
    (
        "POST",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+):start$"),
        "nodes.start",
    ),
    (
        "POST",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+):stop$"),
        "nodes.stop",
    ),
    (
        "PATCH",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+)$"),
        "nodes.patch",
    ),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/operations$"),
        "operations.list",
    ),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/operations/(?P<o>[^/]+)$"),
        "operations.get",
    ),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/queuedResources$"),
        "queuedResources.list",
    ),
    (
        "POST",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/queuedResources$"),
        "queuedResources.create",
    ),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/queuedResources/(?P<q>[^/]+)$"),
        "queuedResources.get",
    ),
    (
        "DELETE",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/queuedResources/(?P<q>[^/]+)$"),
        "queuedResources.delete",
    ),
]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _first(query: dict[str, Any], key: str, default: str = "") -> str:
    value = query.get(key, default)
    if isinstance(value, list):
        return str(value[0]) if value else default
    return str(value)


class Project:
    def __init__(self, project_id: str, number: str) -> None:
        self.id = project_id
        self.number = number
        self.api_enabled = True
        self.denied_permissions: set[str] = set()
        self.zones: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, dict[str, Any]]] = {}  # zone -> id -> Node JSON
        self.queued: dict[str, dict[str, dict[str, Any]]] = {}  # zone -> id -> QueuedResource


class Emulator:
    """State and behaviour of the emulated API. Thread-safe."""

    def __init__(
        self,
        state: dict[str, Any] | None = None,
        backend: Backend | None = None,
        operation_delay: float | None = None,
    ) -> None:
        self.lock = threading.RLock()
        self.backend = backend or InMemoryBackend()
        self.faults = FaultPlan()
        self._initial = copy.deepcopy(state or {})
        self._delay_override = operation_delay
        self.requests: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.log: deque[str] = deque(maxlen=500)
        self.total_requests = 0
        self.load(self._initial)

    # -- state ---------------------------------------------------------------------------------

    def load(self, state: dict[str, Any]) -> None:
        """Replace the whole state (projects, zones, nodes, settings, faults)."""
        state = state or {}
        unknown = set(state) - {"settings", "projects", "faults"}
        if unknown:
            raise ValueError(f"unknown top-level keys in emulator state: {sorted(unknown)}")
        with self.lock:
            self.settings = dict(DEFAULT_SETTINGS)
            self.settings.update(state.get("settings") or {})
            if self._delay_override is not None:
                self.settings["operation_delay"] = self._delay_override
            self.projects: dict[str, Project] = {}
            self.operations: dict[str, dict[str, Any]] = {}
            self._generation = getattr(self, "_generation", 0) + 1
            self.faults.load(state.get("faults") or {})
            for index, (project_id, spec) in enumerate(
                sorted((state.get("projects") or {}).items())
            ):
                spec = spec or {}
                project = Project(project_id, str(spec.get("number") or 100000000000 + index))
                project.api_enabled = bool(spec.get("api_enabled", True))
                project.denied_permissions = set(spec.get("denied_permissions") or [])
                zones = spec.get("zones")
                if zones is None:
                    zones = {zone: {} for zone in DEFAULT_ZONES}
                for zone_id, zone_spec in zones.items():
                    zone_spec = zone_spec or {}
                    project.zones[zone_id] = {
                        "accelerator_types": list(zone_spec.get("accelerator_types") or ["*"]),
                        "capacity": bool(zone_spec.get("capacity", True)),
                    }
                    project.nodes[zone_id] = {}
                    project.queued[zone_id] = {}
                self.projects[project_id] = project
                for zone_id, zone_spec in zones.items():
                    for node_spec in (zone_spec or {}).get("nodes") or []:
                        self._load_node(project, zone_id, node_spec)
                    for qr_spec in (zone_spec or {}).get("queued_resources") or []:
                        self._load_queued(project, zone_id, qr_spec)

    def reset(self) -> None:
        """Back to the state given at start (or last POSTed), no faults, zero counters."""
        self.load(self._initial)
        self.reset_stats()

    def set_initial(self, state: dict[str, Any]) -> None:
        self._initial = copy.deepcopy(state)
        self.load(self._initial)

    def reset_stats(self) -> None:
        with self.lock:
            self.requests.clear()
            self.statuses.clear()
            self.log.clear()
            self.total_requests = 0

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": self.total_requests,
                "by_route": dict(self.requests),
                "by_status": dict(self.statuses),
                "log": list(self.log),
                "backend": self.backend.describe(),
                "nodes": sum(len(z) for p in self.projects.values() for z in p.nodes.values()),
            }

    def dump(self) -> dict[str, Any]:
        """The current state in the shape load() accepts."""
        with self.lock:
            projects: dict[str, Any] = {}
            for project in self.projects.values():
                zones: dict[str, Any] = {}
                for zone_id, zone in project.zones.items():
                    zones[zone_id] = {
                        "accelerator_types": list(zone["accelerator_types"]),
                        "capacity": zone["capacity"],
                        "nodes": [copy.deepcopy(n) for n in project.nodes[zone_id].values()],
                        "queued_resources": [
                            copy.deepcopy(q) for q in project.queued[zone_id].values()
                        ],
                    }
                projects[project.id] = {
                    "number": project.number,
                    "api_enabled": project.api_enabled,
                    "denied_permissions": sorted(project.denied_permissions),
                    "zones": zones,
                }
            return {
                "settings": dict(self.settings),
                "projects": projects,
                "faults": self.faults.to_dict(),
            }

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    def _short(name: str) -> str:
        return name.rsplit("/", 1)[-1]

    def _node_info(self, project: Project, zone: str, node: dict[str, Any]) -> NodeInfo:
        accel = tpu_facts.node_accelerator_type(node)
        hosts = tpu_facts.accelerator_facts(accel)["hosts"] or 1
        return NodeInfo(
            project=project.id,
            zone=zone,
            node_id=self._short(node["name"]),
            accelerator_type=accel,
            workers=hosts,
            external_ips=bool((node.get("networkConfig") or {}).get("enableExternalIps")),
            runtime_version=str(node.get("runtimeVersion", "")),
            labels=dict(node.get("labels") or {}),
            metadata=dict(node.get("metadata") or {}),
        )

    @staticmethod
    def _endpoints(
        addresses: list[WorkerAddress], keep_external: bool = True
    ) -> list[dict[str, Any]]:
        endpoints = []
        for address in addresses:
            endpoint: dict[str, Any] = {"ipAddress": address.internal_ip, "port": 8470}
            if keep_external and address.external_ip:
                endpoint["accessConfig"] = {"externalIp": address.external_ip}
            endpoints.append(endpoint)
        return endpoints

    @staticmethod
    def _drop_external(node: dict[str, Any]) -> None:
        for endpoint in node.get("networkEndpoints") or []:
            endpoint.pop("accessConfig", None)

    def _new_node(
        self, project: Project, zone: str, node_id: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        node = copy.deepcopy(body)
        for output_only in (
            "name",
            "state",
            "networkEndpoints",
            "createTime",
            "id",
            "apiVersion",
            "health",
        ):
            node.pop(output_only, None)
        node["name"] = f"projects/{project.id}/locations/{zone}/nodes/{node_id}"
        node["createTime"] = now_rfc3339()
        node["id"] = str(int(hashlib.sha256(node["name"].encode()).hexdigest()[:15], 16))
        node["apiVersion"] = "V2"
        node.setdefault("networkConfig", {"network": "default", "subnetwork": "default"})
        node.setdefault("serviceAccount", {"email": "default", "scope": [tpu_scope()]})
        node.setdefault("schedulingConfig", {})
        return node

    def _load_node(self, project: Project, zone: str, spec: dict[str, Any]) -> None:
        spec = dict(spec)
        node_id = str(spec.pop("nodeId", "") or self._short(str(spec.get("name", ""))))
        if not node_id:
            raise ValueError(f"a node in {project.id}/{zone} has neither nodeId nor name")
        state = str(spec.get("state", "READY"))
        endpoints = spec.get("networkEndpoints")
        node = self._new_node(project, zone, node_id, spec)
        node["state"] = state
        if spec.get("health"):
            node["health"] = spec["health"]
        elif state == "READY":
            node["health"] = "HEALTHY"
        if spec.get("createTime"):
            node["createTime"] = spec["createTime"]
        if endpoints is not None:
            node["networkEndpoints"] = copy.deepcopy(endpoints)
        elif state not in ("CREATING",):
            info = self._node_info(project, zone, node)
            node["networkEndpoints"] = self._endpoints(
                self.backend.create(info), keep_external=state not in OFF_STATES
            )
            if state in OFF_STATES:
                self.backend.stop(info)
        project.nodes[zone][node_id] = node

    def _load_queued(self, project: Project, zone: str, spec: dict[str, Any]) -> None:
        spec = copy.deepcopy(spec)
        qr_id = str(spec.pop("queuedResourceId", "") or self._short(str(spec.get("name", ""))))
        spec["name"] = f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
        spec.setdefault("createTime", now_rfc3339())
        spec.setdefault("state", {"state": "ACTIVE"})
        project.queued[zone][qr_id] = spec

    def _page(
        self, items: list[dict[str, Any]], key: str, query: dict[str, Any], scope: str
    ) -> dict[str, Any]:
        try:
            size = int(_first(query, "pageSize", "0") or 0)
        except ValueError:
            raise errors.invalid("pageSize must be an integer.", "page_size") from None
        if size < 0:
            raise errors.invalid("pageSize must not be negative.", "page_size")
        if size == 0:
            size = int(self.settings["default_page_size"])
        size = min(size, int(self.settings["max_page_size"]))
        token = _first(query, "pageToken")
        offset = 0
        if token:
            try:
                decoded = json.loads(base64.urlsafe_b64decode(token.encode() + b"==").decode())
                offset = int(decoded["o"])
                if decoded["s"] != scope or offset < 0:
                    raise ValueError("token scope")
            except (ValueError, KeyError, TypeError):
                raise errors.invalid("The page token is invalid.", "page_token") from None
        page = items[offset : offset + size]
        out: dict[str, Any] = {key: copy.deepcopy(page)}
        if offset + size < len(items):
            raw = json.dumps({"o": offset + size, "s": scope}).encode()
            out["nextPageToken"] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        return out

    # -- operations ----------------------------------------------------------------------------

    def _operation(self, project: Project, zone: str, verb: str, target: str) -> dict[str, Any]:
        op_id = f"operation-{int(time.time() * 1000)}-{uuid.uuid4().hex[:12]}"
        op = {
            "name": f"projects/{project.id}/locations/{zone}/operations/{op_id}",
            "metadata": {
                "@type": TYPE_PREFIX + "OperationMetadata",
                "createTime": now_rfc3339(),
                "target": target,
                "verb": verb,
                "cancelRequested": False,
                "apiVersion": API_VERSION,
            },
            "done": False,
        }
        self.operations[op["name"]] = op
        return op

    def _finish(
        self, op: dict[str, Any], response: dict[str, Any] | None, error: errors.ApiError | None
    ) -> None:
        op["done"] = True
        op["metadata"]["endTime"] = now_rfc3339()
        if error is not None:
            op["error"] = {"code": _grpc_code(error.status), "message": error.message}
        elif response is not None:
            op["response"] = response

    def _run(
        self,
        op: dict[str, Any],
        slow: Callable[[], Any],
        apply: Callable[[Any], dict[str, Any] | None],
    ) -> None:
        """Run ``slow`` (a backend call) after the operation delay without the lock, then
        ``apply`` its result under the lock and complete the operation."""
        generation = self._generation

        def worker() -> None:
            time.sleep(float(self.settings["operation_delay"]))
            try:
                result = slow()
            except Exception as exc:  # noqa: BLE001 - a failing backend fails the operation
                with self.lock:
                    if generation == self._generation:
                        self._finish(op, None, errors.ApiError(500, f"backend failed: {exc}"))
                return
            with self.lock:
                if generation != self._generation:
                    return
                try:
                    response = apply(result)
                except errors.ApiError as exc:
                    self._finish(op, None, exc)
                    return
                self._finish(op, response, None)

        threading.Thread(target=worker, name=f"op-{op['name'][-12:]}", daemon=True).start()

    # -- dispatch -------------------------------------------------------------------------------

    def dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, Any],
        body: Any,
        headers: dict[str, str],
    ) -> tuple[int, dict[str, Any]]:
        """Handle one API request. ``path`` starts with ``/v2/``."""
        relative = path.split("?", 1)[0]
        prefix = f"/{API_VERSION}/"
        route = "unknown"
        for verb, pattern, name in _ROUTES:
            if verb == method and pattern.match(
                relative[len(prefix) :] if relative.startswith(prefix) else ""
            ):
                route = name
                break
        with self.lock:
            self.total_requests += 1
            self.requests[f"{method} {route}"] += 1
        try:
            status, payload = self._dispatch(method, relative, prefix, route, query, body, headers)
        except errors.ApiError as exc:
            status, payload = exc.code, exc.body()
        with self.lock:
            self.statuses[str(status)] += 1
            self.log.append(f"{method} {path} {status}")
        return status, payload

    def _dispatch(
        self,
        method: str,
        relative: str,
        prefix: str,
        route: str,
        query: dict[str, Any],
        body: Any,
        headers: dict[str, str],
    ) -> tuple[int, dict[str, Any]]:
        auth = headers.get("authorization", "")
        if not auth.lower().startswith("bearer ") or not auth[7:].strip():
            raise errors.unauthenticated()
        tokens = self.settings.get("tokens") or []
        if tokens and auth[7:].strip() not in tokens:
            raise errors.invalid_token()
        if not relative.startswith(prefix):
            raise errors.ApiError(
                404, f"The requested URL {relative} was not found on this server."
            )
        api_path = relative[len(prefix) :]
        decision = self.faults.decide(method, api_path)
        if decision.latency:
            time.sleep(decision.latency)
        match = None
        for verb, pattern, name in _ROUTES:
            if name == route and verb == method:
                match = pattern.match(api_path)
                break
        if match is None:
            raise errors.ApiError(
                404, f"Method {method} {relative} is not part of the TPU {API_VERSION} API."
            )
        params = match.groupdict()
        permission = PERMISSIONS[route]
        resource = api_path.split(":", 1)[0]
        if decision.error == "SERVICE_DISABLED":
            number = (
                self.projects[params["p"]].number if params["p"] in self.projects else params["p"]
            )
            raise errors.service_disabled(number)
        if decision.error == "PERMISSION_DENIED":
            raise errors.permission_denied(permission, resource)
        if decision.error == "UNAUTHENTICATED":
            raise errors.invalid_token()
        if decision.status is not None and decision.status >= 400:
            raise errors.generic(decision.status)
        if not isinstance(body, dict):
            body = {}
        with self.lock:
            project = self.projects.get(params["p"])
            if project is None:
                raise errors.permission_denied(permission, resource)
            if not project.api_enabled:
                raise errors.service_disabled(project.number)
            if permission in project.denied_permissions:
                raise errors.permission_denied(permission, resource)
            zone = params.get("z")
            if zone is not None and not (
                zone == "-" and route in ("nodes.list", "queuedResources.list", "operations.list")
            ):
                if zone not in project.zones:
                    raise errors.location_not_found(f"projects/{project.id}/locations/{zone}")
            handler = getattr(self, "_" + route.replace(".", "_").lower())
            return handler(project, params, query, body)

    # -- locations and types --------------------------------------------------------------------

    def _location(self, project: Project, zone: str) -> dict[str, Any]:
        return {
            "name": f"projects/{project.id}/locations/{zone}",
            "locationId": zone,
            "displayName": zone,
            "labels": {},
            "metadata": {},
        }

    def _locations_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        items = [self._location(project, zone) for zone in sorted(project.zones)]
        return 200, self._page(items, "locations", query, f"{project.id}/locations")

    def _locations_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return 200, self._location(project, params["z"])

    def _zone_types(self, project: Project, zone: str) -> list[str]:
        patterns = project.zones[zone]["accelerator_types"]
        names = []
        for family, sizes in tpu_facts.SUPPORTED_SIZES.items():
            for size in sizes:
                name = f"{family}-{size}"
                if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                    names.append(name)
        return names

    def _acceleratortypes_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        items = [
            {
                "name": f"projects/{project.id}/locations/{zone}/acceleratorTypes/{name}",
                "type": name,
            }
            for name in self._zone_types(project, zone)
        ]
        return 200, self._page(items, "acceleratorTypes", query, f"{project.id}/{zone}/types")

    # -- nodes ---------------------------------------------------------------------------------

    def _nodes_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        unreachable = set(self.faults.unreachable_zones(project.id))
        if zone == "-":
            if not self.settings.get("wildcard", True):
                raise errors.invalid(
                    "Wildcard location '-' is not supported for this request; name a zone.",
                    "parent",
                )
            zones = [z for z in sorted(project.zones) if z not in unreachable]
        else:
            if zone in unreachable:
                raise errors.generic(503)
            zones = [zone]
        items = [project.nodes[z][n] for z in zones for n in sorted(project.nodes[z])]
        out = self._page(items, "nodes", query, f"{project.id}/{zone}/nodes")
        if zone == "-" and unreachable and not _first(query, "pageToken"):
            out["unreachable"] = [
                f"projects/{project.id}/locations/{z}"
                for z in sorted(unreachable)
                if z in project.zones
            ]
        return 200, out

    def _get_node(self, project: Project, zone: str, node_id: str) -> dict[str, Any]:
        node = project.nodes[zone].get(node_id)
        if node is None:
            raise errors.not_found(f"projects/{project.id}/locations/{zone}/nodes/{node_id}")
        return node

    def _nodes_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return 200, copy.deepcopy(self._get_node(project, params["z"], params["n"]))

    def _validate_node_body(self, project: Project, zone: str, node: dict[str, Any]) -> str:
        accel = node.get("acceleratorType")
        config = node.get("acceleratorConfig")
        if accel and config:
            raise errors.invalid(
                "Only one of accelerator_type and accelerator_config may be set.",
                "node.accelerator_type",
            )
        if not accel and not config:
            raise errors.invalid(
                "One of accelerator_type or accelerator_config must be set.",
                "node.accelerator_type",
            )
        name = str(accel) if accel else tpu_facts.type_from_accelerator_config(config)
        if self.settings.get("validate_accelerator_types", True):
            if not name or not tpu_facts.is_supported(name):
                shown = accel or json.dumps(config, sort_keys=True)
                raise errors.invalid(
                    f"Invalid value for field 'node.accelerator_type': '{shown}'. Accelerator type "
                    f"'{shown}' is not supported in zone {zone}.",
                    "node.accelerator_type",
                )
            if name not in self._zone_types(project, zone):
                raise errors.invalid(
                    f"Accelerator type '{name}' is not available in zone {zone}.",
                    "node.accelerator_type",
                )
        if not node.get("runtimeVersion"):
            raise errors.invalid(
                "Field 'node.runtime_version' is required.", "node.runtime_version"
            )
        network = node.get("networkConfig")
        if network is not None and not isinstance(network, dict):
            raise errors.invalid("networkConfig must be an object.", "node.network_config")
        return name or ""

    def _nodes_create(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        node_id = _first(query, "nodeId")
        if not node_id:
            raise errors.invalid("The node_id query parameter is required.", "node_id")
        if not NODE_ID_RE.match(node_id):
            raise errors.invalid(
                f"Invalid node_id '{node_id}': it must be 1-63 characters of lowercase letters, "
                "digits and hyphens, start with a letter and not end with a hyphen.",
                "node_id",
            )
        if node_id in project.nodes[zone]:
            raise errors.already_exists(f"projects/{project.id}/locations/{zone}/nodes/{node_id}")
        self._validate_node_body(project, zone, body)
        node = self._new_node(project, zone, node_id, body)
        node["state"] = "CREATING"
        project.nodes[zone][node_id] = node
        op = self._operation(project, zone, "create", node["name"])
        info = self._node_info(project, zone, node)

        def apply(addresses: list[WorkerAddress]) -> dict[str, Any]:
            current = project.nodes[zone].get(node_id)
            if current is not node:
                raise errors.ApiError(
                    409,
                    f"Node {node['name']} was deleted while it was being created.",
                    status="ABORTED",
                )
            node["networkEndpoints"] = self._endpoints(addresses)
            node["state"] = "READY"
            node["health"] = "HEALTHY"
            return {"@type": TYPE_PREFIX + "Node", **copy.deepcopy(node)}

        self._run(op, lambda: self.backend.create(info), apply)
        return 200, copy.deepcopy(op)

    def _nodes_delete(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone, node_id = params["z"], params["n"]
        node = self._get_node(project, zone, node_id)
        node["state"] = "DELETING"
        op = self._operation(project, zone, "delete", node["name"])
        info = self._node_info(project, zone, node)

        def apply(_: Any) -> dict[str, Any]:
            if project.nodes[zone].get(node_id) is node:
                del project.nodes[zone][node_id]
            qr_name = node.get("queuedResource")
            if qr_name:
                qr = project.queued.get(zone, {}).get(self._short(qr_name))
                if qr is not None and qr["state"].get("state") == "ACTIVE":
                    qr["state"] = {"state": "SUSPENDED", "stateInitiator": "USER"}
            return {"@type": "type.googleapis.com/google.protobuf.Empty"}

        self._run(op, lambda: self.backend.delete(info), apply)
        return 200, copy.deepcopy(op)

    def _single_host_only(
        self, project: Project, zone: str, node: dict[str, Any], verb: str
    ) -> NodeInfo:
        info = self._node_info(project, zone, node)
        workers = len(node.get("networkEndpoints") or []) or info.workers
        if workers > 1:
            raise errors.failed_precondition(
                f"{verb.capitalize()} is only supported for single-host TPU nodes; node "
                f"{info.node_id} ({info.accelerator_type}) has {workers} hosts. Delete and "
                "recreate it instead."
            )
        return info

    def _nodes_stop(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone, node_id = params["z"], params["n"]
        node = self._get_node(project, zone, node_id)
        info = self._single_host_only(project, zone, node, "stop")
        if node["state"] != "READY":
            raise errors.failed_precondition(
                f"Node {node_id} is {node['state']}; only a READY node can be stopped."
            )
        node["state"] = "STOPPING"
        op = self._operation(project, zone, "stop", node["name"])

        def apply(_: Any) -> dict[str, Any]:
            node["state"] = "STOPPED"
            node.pop("health", None)
            self._drop_external(node)
            return {"@type": TYPE_PREFIX + "Node", **copy.deepcopy(node)}

        self._run(op, lambda: self.backend.stop(info), apply)
        return 200, copy.deepcopy(op)

    def _nodes_start(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone, node_id = params["z"], params["n"]
        node = self._get_node(project, zone, node_id)
        info = self._single_host_only(project, zone, node, "start")
        if node["state"] != "STOPPED":
            raise errors.failed_precondition(
                f"Node {node_id} is {node['state']}; only a STOPPED node can be started."
            )
        node["state"] = "STARTING"
        op = self._operation(project, zone, "start", node["name"])

        def apply(addresses: list[WorkerAddress]) -> dict[str, Any]:
            node["networkEndpoints"] = self._endpoints(addresses)
            node["state"] = "READY"
            node["health"] = "HEALTHY"
            return {"@type": TYPE_PREFIX + "Node", **copy.deepcopy(node)}

        self._run(op, lambda: self.backend.start(info), apply)
        return 200, copy.deepcopy(op)

    # -- operations ----------------------------------------------------------------------------

    def _operations_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        prefix = (
            f"projects/{project.id}/locations/{zone}/operations/"
            if zone != "-"
            else f"projects/{project.id}/"
        )
        items = [op for name, op in sorted(self.operations.items()) if name.startswith(prefix)]
        return 200, self._page(items, "operations", query, f"{project.id}/{zone}/operations")

    def _operations_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        name = f"projects/{project.id}/locations/{params['z']}/operations/{params['o']}"
        op = self.operations.get(name)
        if op is None:
            raise errors.not_found(name)
        return 200, copy.deepcopy(op)

    # -- queued resources ----------------------------------------------------------------------

    def _queuedresources_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        zones = sorted(project.zones) if zone == "-" else [zone]
        items = [project.queued[z][q] for z in zones for q in sorted(project.queued[z])]
        return 200, self._page(items, "queuedResources", query, f"{project.id}/{zone}/qr")

    def _get_qr(self, project: Project, zone: str, qr_id: str) -> dict[str, Any]:
        qr = project.queued[zone].get(qr_id)
        if qr is None:
            raise errors.not_found(
                f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
            )
        return qr

    def _queuedresources_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return 200, copy.deepcopy(self._get_qr(project, params["z"], params["q"]))

    def _queuedresources_create(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        qr_id = _first(query, "queuedResourceId")
        if not qr_id or not NODE_ID_RE.match(qr_id):
            raise errors.invalid(f"Invalid queued_resource_id '{qr_id}'.", "queued_resource_id")
        if qr_id in project.queued[zone]:
            raise errors.already_exists(
                f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
            )
        specs = _expand_node_specs(((body.get("tpu") or {}).get("nodeSpec")) or [], qr_id)
        if not specs:
            raise errors.invalid(
                "queued_resource.tpu.node_spec must name at least one node.", "queued_resource.tpu"
            )
        for spec in specs:
            node_id = str(spec.get("nodeId") or "")
            if not NODE_ID_RE.match(node_id):
                raise errors.invalid(
                    f"Invalid node_id '{node_id}' in node_spec.", "queued_resource.tpu.node_spec"
                )
            if node_id in project.nodes[zone]:
                raise errors.already_exists(
                    f"projects/{project.id}/locations/{zone}/nodes/{node_id}"
                )
            self._validate_node_body(project, zone, spec.get("node") or {})
        qr = copy.deepcopy(body)
        qr["name"] = f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
        qr["createTime"] = now_rfc3339()
        qr["state"] = {"state": "CREATING", "stateInitiator": "USER"}
        project.queued[zone][qr_id] = qr
        op = self._operation(project, zone, "create", qr["name"])
        spot = "spot" in body

        def accepted(_: Any) -> dict[str, Any]:
            qr["state"] = {"state": "ACCEPTED", "stateInitiator": "USER"}
            if project.zones[zone]["capacity"]:
                self._provision(project, zone, qr, specs, spot)
            else:
                qr["state"] = {"state": "WAITING_FOR_RESOURCES", "stateInitiator": "SERVICE"}
            return {"@type": TYPE_PREFIX + "QueuedResource", **copy.deepcopy(qr)}

        self._run(op, lambda: None, accepted)
        return 200, copy.deepcopy(op)

    def _provision(
        self,
        project: Project,
        zone: str,
        qr: dict[str, Any],
        specs: list[dict[str, Any]],
        spot: bool,
    ) -> None:
        """Create the queued resource's nodes (CREATING), then make it ACTIVE once all are READY."""
        qr["state"] = {"state": "PROVISIONING", "stateInitiator": "SERVICE"}
        created: list[tuple[dict[str, Any], NodeInfo]] = []
        for spec in specs:
            body = copy.deepcopy(spec.get("node") or {})
            if spot:
                body.setdefault("schedulingConfig", {})["spot"] = True
            node_id = str(spec["nodeId"])
            node = self._new_node(project, zone, node_id, body)
            node["state"] = "CREATING"
            node["queuedResource"] = qr["name"]
            project.nodes[zone][node_id] = node
            created.append((node, self._node_info(project, zone, node)))
        op = self._operation(project, zone, "create", qr["name"])

        def slow() -> list[list[WorkerAddress]]:
            return [self.backend.create(info) for _, info in created]

        def apply(all_addresses: list[list[WorkerAddress]]) -> dict[str, Any]:
            for (node, _), addresses in zip(created, all_addresses, strict=True):
                node["networkEndpoints"] = self._endpoints(addresses)
                node["state"] = "READY"
                node["health"] = "HEALTHY"
            if qr["state"].get("state") == "PROVISIONING":
                qr["state"] = {"state": "ACTIVE", "stateInitiator": "SERVICE"}
            return {"@type": TYPE_PREFIX + "QueuedResource", **copy.deepcopy(qr)}

        self._run(op, slow, apply)

    def _queuedresources_delete(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone, qr_id = params["z"], params["q"]
        qr = self._get_qr(project, zone, qr_id)
        force = _first(query, "force").lower() == "true"
        nodes = [
            (node_id, node)
            for node_id, node in project.nodes[zone].items()
            if node.get("queuedResource") == qr["name"]
        ]
        if nodes and not force:
            raise errors.failed_precondition(
                f"Queued resource {qr['name']} in state {qr['state'].get('state')} still has "
                f"{len(nodes)} node(s); delete them first or delete with force=true."
            )
        qr["state"] = {"state": "DELETING", "stateInitiator": "USER"}
        for _, node in nodes:
            node["state"] = "DELETING"
        infos = [self._node_info(project, zone, node) for _, node in nodes]
        op = self._operation(project, zone, "delete", qr["name"])

        def slow() -> None:
            for info in infos:
                self.backend.delete(info)

        def apply(_: Any) -> dict[str, Any]:
            for node_id, node in nodes:
                if project.nodes[zone].get(node_id) is node:
                    del project.nodes[zone][node_id]
            project.queued[zone].pop(qr_id, None)
            return {"@type": "type.googleapis.com/google.protobuf.Empty"}

        self._run(op, slow, apply)
        return 200, copy.deepcopy(op)

    # -- admin ---------------------------------------------------------------------------------

    def admin_node(
        self, project_id: str, zone: str, node_id: str, action: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        """Out-of-band changes the real service makes on its own: preemption, maintenance."""
        with self.lock:
            project = self.projects.get(project_id)
            if project is None or zone not in project.nodes:
                raise errors.location_not_found(f"projects/{project_id}/locations/{zone}")
            node = self._get_node(project, zone, node_id)
            info = self._node_info(project, zone, node)
            if action == "preempt":
                node["state"] = "PREEMPTED"
                node.pop("health", None)
                self._drop_external(node)
            elif action == "set":
                for key in ("state", "health", "healthDescription", "labels"):
                    if key in body:
                        node[key] = body[key]
            elif action == "maintenance":
                if node["state"] != "READY":
                    raise errors.failed_precondition(
                        f"Node {node_id} is {node['state']}; maintenance needs a READY node."
                    )
                node["health"] = "UNHEALTHY_MAINTENANCE"
            else:
                raise errors.ApiError(
                    404, f"unknown admin action {action!r}; use preempt, maintenance or set"
                )
            result = copy.deepcopy(node)
        if action == "preempt":
            self.backend.preempt(info)
        if action == "maintenance":
            self._maintenance(project, zone, node, info)
        return result

    def _maintenance(
        self, project: Project, zone: str, node: dict[str, Any], info: NodeInfo
    ) -> None:
        """Reboot the workers in the background; their addresses are read again afterwards."""
        generation = self._generation

        def worker() -> None:
            try:
                addresses = self.backend.maintenance(info)
            except Exception as exc:  # noqa: BLE001 - a failing backend leaves the node unhealthy
                with self.lock:
                    node["healthDescription"] = f"maintenance failed: {exc}"
                return
            with self.lock:
                if (
                    generation != self._generation
                    or project.nodes[zone].get(info.node_id) is not node
                ):
                    return
                node["networkEndpoints"] = self._endpoints(addresses)
                node["health"] = "HEALTHY"
                node.pop("healthDescription", None)

        threading.Thread(target=worker, name=f"maint-{info.node_id}", daemon=True).start()

    def _nodes_patch(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """Update what the v2 API changes in place: description, tags, labels, metadata."""
        zone, node_id = params["z"], params["n"]
        node = self._get_node(project, zone, node_id)
        mask = [f.strip() for f in _first(query, "updateMask").split(",") if f.strip()]
        if not mask:
            raise errors.invalid("The update_mask query parameter is required.", "update_mask")
        patchable = ("description", "tags", "labels", "metadata")
        refused = [f for f in mask if f not in patchable]
        if refused:
            raise errors.invalid(
                f"Field(s) {', '.join(refused)} cannot be updated here; the emulator updates "
                f"{', '.join(patchable)} (the API also networkConfig.enable_external_ips).",
                "update_mask",
            )
        changes = {key: copy.deepcopy(body.get(key)) for key in mask}
        op = self._operation(project, zone, "update", node["name"])

        def apply(_: Any) -> dict[str, Any]:
            for key, value in changes.items():
                if value in (None, "", [], {}):
                    node.pop(key, None)
                else:
                    node[key] = value
            return {"@type": TYPE_PREFIX + "Node", **copy.deepcopy(node)}

        def slow() -> None:
            # Running workers pick up new metadata (ssh-keys) the way the guest agent does.
            if "metadata" in changes:
                info = self._node_info(project, zone, node)
                self.backend.update_metadata(
                    dataclasses.replace(info, metadata=dict(changes["metadata"] or {}))
                )

        self._run(op, slow, apply)
        return 200, copy.deepcopy(op)


def tpu_scope() -> str:
    return "https://www.googleapis.com/auth/cloud-platform"


def _grpc_code(status: str) -> int:
    codes = {
        "CANCELLED": 1,
        "UNKNOWN": 2,
        "INVALID_ARGUMENT": 3,
        "DEADLINE_EXCEEDED": 4,
        "NOT_FOUND": 5,
        "ALREADY_EXISTS": 6,
        "PERMISSION_DENIED": 7,
        "RESOURCE_EXHAUSTED": 8,
        "FAILED_PRECONDITION": 9,
        "ABORTED": 10,
        "INTERNAL": 13,
        "UNAVAILABLE": 14,
        "UNAUTHENTICATED": 16,
    }
    return codes.get(status, 2)


def _expand_node_specs(specs: list[Any], qr_id: str) -> list[dict[str, Any]]:
    """Node specs with multisliceParams (v2; multiNodeParams in v2alpha1) expanded into one
    spec per node: ``nodeCount`` nodes named ``<nodeIdPrefix>-0`` ... (prefix default: the
    queued resource id)."""
    expanded: list[dict[str, Any]] = []
    for spec in specs:
        if not isinstance(spec, dict):
            raise errors.invalid("node_spec entries must be objects.", "queued_resource.tpu")
        multi = spec.get("multisliceParams") or spec.get("multiNodeParams")
        if not multi:
            expanded.append(spec)
            continue
        if spec.get("nodeId"):
            raise errors.invalid(
                "node_id and multislice_params are mutually exclusive in a node_spec.",
                "queued_resource.tpu.node_spec",
            )
        try:
            count = int(multi.get("nodeCount") or 0)
        except (TypeError, ValueError):
            count = 0
        if count < 2:
            raise errors.invalid(
                "multislice_params.node_count must be greater than 1.",
                "queued_resource.tpu.node_spec.multislice_params.node_count",
            )
        prefix = str(multi.get("nodeIdPrefix") or qr_id)
        for index in range(count):
            single = {
                k: v for k, v in spec.items() if k not in ("multisliceParams", "multiNodeParams")
            }
            single["nodeId"] = f"{prefix}-{index}"
            expanded.append(single)
    return expanded
