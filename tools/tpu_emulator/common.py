"""Shared pieces of the emulated API: constants, routes, the project record, small helpers."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

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
    "validate_runtime_versions": True,
    "token_lifetime": 3599,
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
    # the IAM names of the methods added later, as the TPU permission reference spells them
    "acceleratorTypes.get": "tpu.acceleratortypes.get",
    "runtimeVersions.list": "tpu.runtimeversions.list",
    "runtimeVersions.get": "tpu.runtimeversions.get",
    "nodes.getGuestAttributes": "tpu.nodes.get",
    "locations.generateServiceIdentity": "tpu.locations.get",
    "operations.delete": "tpu.operations.delete",
    "operations.cancel": "tpu.operations.cancel",
    "queuedResources.reset": "tpu.nodes.reset",
}

ROUTES: list[tuple[str, re.Pattern[str], str]] = [
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
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/acceleratorTypes/(?P<t>[^/]+)$"),
        "acceleratorTypes.get",
    ),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/runtimeVersions$"),
        "runtimeVersions.list",
    ),
    (
        "GET",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/runtimeVersions/(?P<v>[^/]+)$"),
        "runtimeVersions.get",
    ),
    (
        "POST",
        re.compile(
            r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/nodes/(?P<n>[^/:]+):getGuestAttributes$"
        ),
        "nodes.getGuestAttributes",
    ),
    (
        "POST",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/:]+):generateServiceIdentity$"),
        "locations.generateServiceIdentity",
    ),
    (
        "DELETE",
        re.compile(r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/operations/(?P<o>[^/:]+)$"),
        "operations.delete",
    ),
    (
        "POST",
        re.compile(
            r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/operations/(?P<o>[^/:]+):cancel$"
        ),
        "operations.cancel",
    ),
    (
        "POST",
        re.compile(
            r"^projects/(?P<p>[^/]+)/locations/(?P<z>[^/]+)/queuedResources/(?P<q>[^/:]+):reset$"
        ),
        "queuedResources.reset",
    ),
]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def first(query: dict[str, Any], key: str, default: str = "") -> str:
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
        self.metadata: dict[str, str] = {}  # project-wide metadata (commonInstanceMetadata)
        self.zones: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, dict[str, Any]]] = {}  # zone -> id -> Node JSON
        self.queued: dict[str, dict[str, dict[str, Any]]] = {}  # zone -> id -> QueuedResource


def tpu_scope() -> str:
    return "https://www.googleapis.com/auth/cloud-platform"


def grpc_code(status: str) -> int:
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
