"""The emulated Cloud TPU v2 API: state, paging and request dispatch.

:class:`Emulator` is independent of HTTP: ``dispatch(method, path, query, body, headers)``
returns ``(status, json_body)``. The server module wraps it in an HTTP server. Each resource's
routes live in their own module (nodes, queued, operations, locations, service, admin); the emulator
combines them.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import time
from collections import Counter, deque
from typing import Any

from . import errors
from .admin import Admin
from .backends import Backend, InMemoryBackend
from .common import (
    API_VERSION,
    DEFAULT_SETTINGS,
    DEFAULT_ZONES,
    PERMISSIONS,
    ROUTES,
    Project,
    first,
)
from .faults import FaultPlan, NoAnswer
from .locations import Locations
from .metadata import MetadataService
from .nodes import Nodes
from .operations import Operations
from .queued import QueuedResources
from .service import Service


class Emulator(Nodes, QueuedResources, Operations, Locations, Service, Admin):
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
        self.guest: dict[tuple[str, str], dict[int, dict[str, dict[str, str]]]] = {}
        self.minted: dict[str, tuple[str, tuple[str, ...], float]] = {}
        self.token_counts: Counter[str] = Counter()
        # The workers' metadata servers answer from this emulator (backends that run workers).
        self.metadata = MetadataService(self)
        self.backend.attach_metadata(self.metadata)
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
            self.guest = {}
            self.faults.load(state.get("faults") or {})
            for index, (project_id, spec) in enumerate(
                sorted((state.get("projects") or {}).items())
            ):
                spec = spec or {}
                project = Project(project_id, str(spec.get("number") or 100000000000 + index))
                project.api_enabled = bool(spec.get("api_enabled", True))
                project.denied_permissions = set(spec.get("denied_permissions") or [])
                project.metadata = {str(k): str(v) for k, v in (spec.get("metadata") or {}).items()}
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
            self.token_counts.clear()

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": self.total_requests,
                "by_route": dict(self.requests),
                "by_status": dict(self.statuses),
                "log": list(self.log),
                "backend": self.backend.describe(),
                # the workers' service account tokens (metadata servers) and API calls with them
                "service_account_tokens": {
                    "minted": self.token_counts["minted"],
                    "api_calls": self.token_counts["api_calls"],
                },
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
                    "metadata": dict(project.metadata),
                    "zones": zones,
                }
            return {
                "settings": dict(self.settings),
                "projects": projects,
                "faults": self.faults.to_dict(),
            }

    # -- helpers --------------------------------------------------------------------------------

    def _page(
        self, items: list[dict[str, Any]], key: str, query: dict[str, Any], scope: str
    ) -> dict[str, Any]:
        try:
            size = int(first(query, "pageSize", "0") or 0)
        except ValueError:
            raise errors.invalid("pageSize must be an integer.", "page_size") from None
        if size < 0:
            raise errors.invalid("pageSize must not be negative.", "page_size")
        if size == 0:
            size = int(self.settings["default_page_size"])
        size = min(size, int(self.settings["max_page_size"]))
        token = first(query, "pageToken")
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
        for verb, pattern, name in ROUTES:
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
        except NoAnswer:
            with self.lock:
                self.statuses["dropped"] += 1
                self.log.append(f"{method} {path} dropped")
            raise
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
        problem = self.token_problem(auth[7:].strip())
        if problem is not None:
            raise problem
        if not relative.startswith(prefix):
            raise errors.ApiError(
                404, f"The requested URL {relative} was not found on this server."
            )
        api_path = relative[len(prefix) :]
        decision = self.faults.decide(method, api_path)
        if decision.latency:
            time.sleep(decision.latency)
        match = None
        for verb, pattern, name in ROUTES:
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
            if not decision.drop:
                return handler(project, params, query, body)
            try:  # carried out, whatever its outcome, and no answer sent
                handler(project, params, query, body)
            except errors.ApiError:
                pass
            raise NoAnswer(f"{method} {api_path}")
