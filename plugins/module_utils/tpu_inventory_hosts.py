# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The hosts of the tpu_vm inventory, as pure functions: API JSON in, hosts, groups and variables
out. :func:`build_hosts` turns what the plugin fetched (or cached) into one ``(host name, host
variables, groups)`` per worker; :func:`slim_node` is what the cache keeps of a node,
:func:`fetched_data` the shape of what it keeps, :func:`cache_matches` whether an entry answers
a source's question (:func:`source_query`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_facts import (
    accelerator_facts,
    node_accelerator_type,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import job_vars, pod_vars
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import node_matches

HOSTNAME_FIELDS = ("node", "worker_id", "zone", "project", "accelerator_type", "generation")
_GROUP_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def group_name(prefix: str, value: Any) -> str:
    """``prefix`` + ``value`` with every character other than [A-Za-z0-9_] turned into ``_``."""
    return _GROUP_UNSAFE.sub("_", f"{prefix}{value}")


def parse_node_name(name: Any) -> tuple[str, str, str]:
    """(project, zone, node id) from ``projects/P/locations/Z/nodes/N`` (else empty parts)."""
    parts = str(name or "").split("/")
    if (
        len(parts) == 6
        and parts[0] == "projects"
        and parts[2] == "locations"
        and parts[4] == "nodes"
    ):
        return parts[1], parts[3], parts[5]
    return "", "", parts[-1]


def check_hostname_template(template: str) -> None:
    """Raise ValueError unless ``template`` is a format string over HOSTNAME_FIELDS only."""
    try:
        fields = [part[1] for part in string.Formatter().parse(template) if part[1] is not None]
    except ValueError as exc:
        raise ValueError(
            f"hostname template {template!r} is not a valid format string: {exc}"
        ) from None
    for field in fields:
        if field not in HOSTNAME_FIELDS:
            raise ValueError(
                f"hostname template {template!r} uses {{{field}}}; the fields are "
                + ", ".join("{%s}" % f for f in HOSTNAME_FIELDS)
            )
    if not fields or "worker_id" not in fields:
        raise ValueError(
            f"hostname template {template!r} must contain {{worker_id}}, else the workers of a "
            "node get the same name"
        )


NODE_FIELDS = (
    "name",
    "acceleratorType",
    "acceleratorConfig",
    "state",
    "health",
    "runtimeVersion",
    "labels",
    "schedulingConfig",
    "queuedResource",
    "multisliceNode",
)


def slim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a node JSON object the inventory uses (what the cache stores)."""
    slim = {key: node[key] for key in NODE_FIELDS if key in node}
    endpoints = []
    for endpoint in node.get("networkEndpoints") or []:
        if not isinstance(endpoint, Mapping):
            continue
        entry: dict[str, Any] = {"ipAddress": endpoint.get("ipAddress", "")}
        access = endpoint.get("accessConfig")
        if isinstance(access, Mapping) and access.get("externalIp"):
            entry["accessConfig"] = {"externalIp": access["externalIp"]}
        endpoints.append(entry)
    slim["networkEndpoints"] = endpoints
    return slim


# What the plugin fetches and caches: {"version", "projects": {project: {"nodes", "warnings"}},
# "query"}; a cache entry of another version or for another question is not used.
CACHE_VERSION = 3
NO_PROJECT = (
    "no project given; set 'projects' in the file or the CLOUDTPU_PROJECT environment variable "
    "(comma-separated project IDs)"
)


def source_query(projects: Any, zones: Any, base_url: Any) -> dict[str, Any]:
    """What a source asks the API: its projects and zones (empty entries left out) and the URL.
    Raises ValueError when it names no project."""
    query = {
        "projects": [p for p in (projects or []) if p],
        "zones": [z for z in (zones or []) if z],
        "base_url": base_url,
    }
    if not query["projects"]:
        raise ValueError(NO_PROJECT)
    return query


def fetched_data(
    projects: Iterable[str], collect: Callable[[str], tuple[Sequence[Any], Sequence[str]]]
) -> dict[str, Any]:
    """The data to cache: ``collect(project)`` gives a project's nodes and the API's warnings."""
    result: dict[str, Any] = {"version": CACHE_VERSION, "projects": {}}
    for project in projects:
        nodes, warnings = collect(project)
        result["projects"][project] = {
            "nodes": [slim_node(node) for node in nodes],
            "warnings": warnings,
        }
    return result


def api_warnings(data: Mapping[str, Any], cached: bool = False) -> list[str]:
    """The API's warnings in fetched (or, marked so, cached) data, project by project."""
    return [
        f"(cached result) {warning}" if cached else warning
        for _project, result in sorted((data.get("projects") or {}).items())
        for warning in result.get("warnings") or []
    ]


def cache_matches(data: Any, query: Mapping[str, Any]) -> bool:
    """A cache entry is used only if it answers the same question (projects, zones, URL)."""
    return (
        isinstance(data, Mapping)
        and data.get("version") == CACHE_VERSION
        and data.get("query") == dict(query)
    )


def _same(value: Any) -> Any:
    return value


def node_hosts(
    node: Mapping[str, Any],
    project: str,
    hostname: str = "{node}-w{worker_id}",
    use_internal_ip: bool = False,
    wrap: Callable[[Any], Any] = _same,
    job: Mapping[str, Any] | None = None,
) -> list[tuple[str, dict[str, Any], list[str]]]:
    """One ``(host name, host variables, groups)`` per worker of a node JSON object.

    ``job`` is the node's multislice job variables (module_utils/tpu_pod.py job_vars); without
    it the node is slice 0 of 1 of its own job.

    Nothing here raises on odd input: unknown accelerator types give generation ``unknown``,
    missing addresses give empty strings. ``wrap`` is applied once to every variable value
    (the plugin marks values unsafe with it); values shared by a node's workers are wrapped
    once per node.
    """
    zone, node_id = parse_node_name(node.get("name"))[1:]
    accel = node_accelerator_type(node)
    facts = accelerator_facts(accel)
    endpoints = [e for e in node.get("networkEndpoints") or [] if isinstance(e, Mapping)]
    scheduling = node.get("schedulingConfig") or {}
    labels = node.get("labels") or {}
    common = {
        "tpu_project": project,
        "tpu_zone": zone,
        "tpu_node": node_id,
        "tpu_worker_count": len(endpoints),
        "tpu_accelerator_type": accel,
        "tpu_generation": facts["generation"],
        "tpu_chips_per_host": facts["chips_per_host"],
        "tpu_device_glob": facts["device_glob"],
        "tpu_state": str(node.get("state") or "STATE_UNSPECIFIED"),
        "tpu_health": str(node.get("health") or "HEALTH_UNSPECIFIED"),
        "tpu_runtime_version": str(node.get("runtimeVersion") or ""),
        "tpu_labels": dict(labels) if isinstance(labels, Mapping) else {},
        "tpu_spot": bool(scheduling.get("spot") or scheduling.get("preemptible")),
    }
    common = {key: wrap(value) for key, value in common.items()}
    node_groups = [
        "tpu",
        group_name("tpu_node_", node_id),
        group_name("tpu_type_", accel or "unknown"),
        group_name("tpu_zone_", zone or "unknown"),
        group_name("tpu_gen_", facts["generation"]),
    ]
    hosts = []
    for worker_id, endpoint in enumerate(endpoints):
        internal = str(endpoint.get("ipAddress") or "")
        access = endpoint.get("accessConfig") or {}
        external = str(access.get("externalIp") or "") if isinstance(access, Mapping) else ""
        hostvars = dict(common)
        hostvars["tpu_worker_id"] = worker_id
        hostvars["tpu_internal_ip"] = wrap(internal)
        hostvars["tpu_external_ip"] = wrap(external) if external else None
        address = internal if use_internal_ip or not external else external
        if address:
            hostvars["ansible_host"] = wrap(address)
        name = hostname.format(
            node=node_id,
            worker_id=worker_id,
            zone=zone,
            project=project,
            accelerator_type=accel,
            generation=facts["generation"],
        )
        groups = node_groups + (["tpu_coordinator"] if worker_id == 0 else [])
        hosts.append((name, hostvars, groups))
    # The pod contract, decoded once here (module_utils/tpu_pod.py; the cloudtpu.pod.pod lookup
    # returns the same for static inventories).
    shared = pod_vars((name, str(hv["tpu_internal_ip"] or "")) for name, hv, _groups in hosts)
    shared = {key: wrap(value) for key, value in shared.items()}
    if job is None:
        job = {
            "tpu_queued_resource": queued_resource_id(node),
            "tpu_slice_id": 0,
            "tpu_num_slices": 1,
            "tpu_pod_job_coordinator": shared.get("tpu_pod_coordinator", ""),
            "tpu_pod_job_coordinator_ip": shared.get("tpu_pod_coordinator_ip", ""),
        }
    shared.update({key: wrap(value) for key, value in job.items()})
    slice_groups = []
    if int(job["tpu_num_slices"]) > 1:
        qr_id = job["tpu_queued_resource"]
        slice_groups = [
            group_name("tpu_multislice_", qr_id),
            group_name("tpu_slice_", f"{qr_id}_{job['tpu_slice_id']}"),
        ]
    for _name, hostvars, groups in hosts:
        hostvars.update(shared)
        groups.extend(slice_groups)
    return hosts


def queued_resource_id(node: Mapping[str, Any]) -> str:
    """The short ID of the queued resource that requested a node ("" when none did)."""
    return str(node.get("queuedResource") or "").rsplit("/", 1)[-1]


def multislice_jobs(
    data: Mapping[str, Any], hostname: str, use_internal_ip: bool
) -> dict[tuple[str, str], dict[str, Any]]:
    """``{(project, node id): job variables}`` of every node in a multislice job, from every
    node listed (filters are applied later, so they do not renumber the slices)."""
    requests: dict[tuple[str, str], dict[str, list[tuple[str, str]]]] = {}
    marked: set[tuple[str, str]] = set()
    for project, result in sorted((data.get("projects") or {}).items()):
        for node in result.get("nodes") or []:
            queued = str(node.get("queuedResource") or "")
            if not queued:
                continue
            node_id = parse_node_name(node.get("name"))[2]
            members = [
                (name, str(hv["tpu_internal_ip"] or ""))
                for name, hv, _groups in node_hosts(node, project, hostname, use_internal_ip)
            ]
            requests.setdefault((project, queued), {})[node_id] = members
            if node.get("multisliceNode") is True:
                marked.add((project, queued))
    jobs: dict[tuple[str, str], dict[str, Any]] = {}
    for (project, queued), slices in requests.items():
        if len(slices) > 1 or (project, queued) in marked:
            for node_id, job in job_vars(queued.rsplit("/", 1)[-1], slices).items():
                jobs[(project, node_id)] = job
    return jobs


def build_hosts(
    data: Mapping[str, Any],
    states: Sequence[str] = ("READY",),
    labels: Mapping[str, Any] | None = None,
    accelerator_types: Sequence[str] = (),
    names: Sequence[str] = (),
    hostname: str = "{node}-w{worker_id}",
    use_internal_ip: bool = False,
    wrap: Callable[[Any], Any] = _same,
) -> tuple[list[tuple[str, dict[str, Any], list[str]]], list[str]]:
    """All hosts of a fetched result (see :func:`fetched_data`), and warnings.

    Raises ValueError when two workers would get the same host name.
    """
    check_hostname_template(hostname)
    hosts: list[tuple[str, dict[str, Any], list[str]]] = []
    warnings: list[str] = []
    owner: dict[str, str] = {}
    node_places: dict[str, str] = {}
    jobs = multislice_jobs(data, hostname, use_internal_ip)
    for project, result in sorted((data.get("projects") or {}).items()):
        nodes = sorted(result.get("nodes") or [], key=lambda n: str(n.get("name", "")))
        for node in nodes:
            if not node_matches(node, states, labels, accelerator_types, names):
                continue
            zone, node_id = parse_node_name(node.get("name"))[1:]
            place = f"{project}/{zone}"
            if node_places.setdefault(node_id, place) != place:
                warnings.append(
                    f"TPU node name {node_id} exists in {node_places[node_id]} and {place}; group "
                    f"{group_name('tpu_node_', node_id)} holds the workers of both."
                )
            job = jobs.get((project, node_id))
            for name, hostvars, groups in node_hosts(
                node, project, hostname, use_internal_ip, wrap, job
            ):
                where = f"{place}/{node_id} worker {hostvars['tpu_worker_id']}"
                if name in owner:
                    raise ValueError(
                        f"host name {name!r} is used by {owner[name]} and {where}; add {{zone}} "
                        "and/or {project} to the hostname option, or narrow projects/zones/names"
                    )
                owner[name] = where
                hosts.append((name, hostvars, groups))
    return hosts, warnings
