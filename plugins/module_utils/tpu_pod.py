# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Which hosts form a pod, who coordinates it, and at which addresses.

Decoded once: the tpu_vm inventory publishes the answer as host variables
(``tpu_pod_coordinator``, ``tpu_pod_coordinator_ip``, ``tpu_pod_hosts``, ``tpu_pod_ips``), and
the ``cloudtpu.pod.pod`` lookup returns the same shape for a static inventory that sets only
``tpu_node``, ``tpu_worker_id`` and addresses by hand.

Multislice: the nodes of one queued resource with more than one node form one job. Each node is
a slice with its own pod (``coordinator``, ``hosts`` and ``ips`` stay per slice: the NFS share
and the wheel cache are per slice); the job has one coordinator, worker 0 of slice 0, published
as ``tpu_pod_job_coordinator`` and ``tpu_pod_job_coordinator_ip`` beside ``tpu_slice_id``,
``tpu_num_slices`` and ``tpu_queued_resource``. A single node is slice 0 of 1 and coordinates
its own job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

POD_VARS = ("tpu_pod_coordinator", "tpu_pod_coordinator_ip", "tpu_pod_hosts", "tpu_pod_ips")
JOB_VARS = (
    "tpu_queued_resource",
    "tpu_slice_id",
    "tpu_num_slices",
    "tpu_pod_job_coordinator",
    "tpu_pod_job_coordinator_ip",
)
# The node IDs the API gives a multislice request: <nodeIdPrefix>-0 ... <nodeIdPrefix>-<N-1>.
_SLICE_SUFFIX = re.compile(r"^(?P<prefix>.+)-(?P<index>[0-9]+)\Z")


# The port of JAX's distributed coordinator on worker 0 (jax.distributed.initialize).
JAX_COORDINATOR_PORT = 8476


def url_host(host: str) -> str:
    """The host as it goes before ``:port`` or ``:/path`` in URLs, JAX's coordinator address and
    NFS sources: an IPv6 address in brackets (``[fd00::1]``), anything else as it is."""
    text = str(host).strip()
    if ":" in text and not text.startswith("["):
        text = f"[{text}]"
    return text


def host_port(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets (``[fd00::1]:8476``), as URLs and JAX want."""
    return f"{url_host(host)}:{int(port)}"


# Where a static inventory's host has its pod address: what the inventory says, else the
# address the host itself reported as its default IPv4 (gathered facts; ansible_host is often
# the external address or, with the docker connection, a container name), else ansible_host.
ADDRESS_KEYS = ("tpu_internal_ip", "default_ipv4", "ansible_host")


def address(name: str, hostvars: Mapping[str, Any]) -> str:
    """A worker's address inside the pod (see ADDRESS_KEYS), else its inventory name."""
    for key in ADDRESS_KEYS:
        value = hostvars.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return name


def _rank(name: str, hostvars: Mapping[str, Any]) -> tuple[int, int, str]:
    """Sort key: hosts with a tpu_worker_id first, by it; then the others by name."""
    try:
        return (0, int(hostvars.get("tpu_worker_id")), name)
    except (TypeError, ValueError):
        return (1, 0, name)


def _one_host_per_worker_id(
    node: str, ranked: list[str], hostvars: Mapping[str, Mapping[str, Any]]
) -> None:
    """Raise ValueError when two hosts of one node give the same tpu_worker_id: which of them
    is worker 0 (the coordinator) would be a matter of their names."""
    seen: dict[int, str] = {}
    for name in ranked:
        rank = _rank(name, hostvars.get(name) or {})
        if rank[0] == 0 and rank[1] in seen:
            raise ValueError(
                f"{seen[rank[1]]} and {name} both have tpu_worker_id {rank[1]} in node "
                f"{node or '(none)'}; allowed: one host per worker id of a node (0, 1, ...)"
            )
        if rank[0] == 0:
            seen[rank[1]] = name


def pod_vars(members: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The published variables of a pod whose workers are ``(host name, address)`` in worker
    order (worker 0 first: the coordinator)."""
    ordered = list(members)
    if not ordered:
        return {}
    return {
        "tpu_pod_coordinator": ordered[0][0],
        "tpu_pod_coordinator_ip": ordered[0][1],
        "tpu_pod_hosts": [name for name, _ip in ordered],
        "tpu_pod_ips": [ip for _name, ip in ordered],
    }


def slice_ids(node_ids: Iterable[str]) -> tuple[dict[str, int], int]:
    """``({node id: slice id}, number of slices)`` for the nodes of one queued resource.

    The API names a multislice request's nodes ``<nodeIdPrefix>-<i>`` and says nothing else
    about their order, so the slice id is that number when every node has one, under one
    prefix, without repeats (the number of slices is then at least the highest id + 1, so a
    slice missing from the listing keeps the others' ids). Otherwise the nodes are numbered in
    the order of their names.
    """
    ids = sorted(set(node_ids))
    found = {node_id: _SLICE_SUFFIX.match(node_id) for node_id in ids}
    if ids and all(found.values()):
        numbers = {node_id: int(m.group("index")) for node_id, m in found.items() if m}
        prefixes = {m.group("prefix") for m in found.values() if m}
        if len(prefixes) == 1 and len(set(numbers.values())) == len(ids):
            return numbers, max(len(ids), max(numbers.values()) + 1)
    return {node_id: index for index, node_id in enumerate(ids)}, len(ids)


def job_vars(
    queued_resource: str, slices: Mapping[str, list[tuple[str, str]]]
) -> dict[str, dict[str, Any]]:
    """The published job variables (JOB_VARS) of each node of one queued resource.

    ``slices`` maps each node id to its workers ``(host name, address)`` in worker order. The
    job's coordinator is worker 0 of slice 0 (empty when slice 0 has no worker listed).
    """
    ids, count = slice_ids(slices)
    first = [node for node, index in ids.items() if index == 0 and slices[node]]
    name, ip = slices[first[0]][0] if first else ("", "")
    return {
        node: {
            "tpu_queued_resource": queued_resource,
            "tpu_slice_id": ids[node],
            "tpu_num_slices": count,
            "tpu_pod_job_coordinator": name,
            "tpu_pod_job_coordinator_ip": ip,
        }
        for node in slices
    }


def _whole(host: str, key: str, value: Any, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ValueError(f"{host}: {key} is {value!r}: not a whole number") from None
    return number


def _slice(host: str, hostvars: Mapping[str, Any]) -> tuple[int, int]:
    """``(slice id, number of slices)`` of a host, checked (a host without them: 0 of 1)."""
    count = _whole(host, "tpu_num_slices", hostvars.get("tpu_num_slices"), 1)
    index = _whole(host, "tpu_slice_id", hostvars.get("tpu_slice_id"), 0)
    if count < 1 or not 0 <= index < count:
        raise ValueError(
            f"{host}: tpu_slice_id is {index} and tpu_num_slices {count}; allowed: "
            "tpu_num_slices of at least 1 and tpu_slice_id from 0 to tpu_num_slices - 1"
        )
    return index, count


def _job(
    host: str,
    hostvars: Mapping[str, Mapping[str, Any]],
    names: list[str],
    coordinator: tuple[str, str],
) -> dict[str, Any]:
    """The job of ``host``: published, else the candidates of its queued resource."""
    own = hostvars.get(host) or {}
    index, count = _slice(host, own)
    queued = str(own.get("tpu_queued_resource") or "")
    job = {"slice_id": index, "num_slices": count, "queued_resource": queued}
    if own.get("tpu_pod_job_coordinator") and own.get("tpu_pod_job_coordinator_ip"):
        job["job_coordinator"] = str(own["tpu_pod_job_coordinator"])
        job["job_coordinator_ip"] = str(own["tpu_pod_job_coordinator_ip"])
        return job
    if count == 1:
        job["job_coordinator"], job["job_coordinator_ip"] = coordinator
        return job
    first = [
        n
        for n in names
        if str((hostvars.get(n) or {}).get("tpu_queued_resource") or "") == queued
        and _slice(n, hostvars.get(n) or {}) == (0, count)
    ]
    if not first:
        raise ValueError(
            f"{host} is slice {index} of {count} (queued resource {queued!r}) but no host of "
            "that job has tpu_slice_id 0: its worker 0 coordinates the job"
        )
    lead = sorted(first, key=lambda n: _rank(n, hostvars.get(n) or {}))[0]
    job["job_coordinator"] = lead
    job["job_coordinator_ip"] = address(lead, hostvars.get(lead) or {})
    return job


def pod_of(
    host: str, hostvars: Mapping[str, Mapping[str, Any]], candidates: Iterable[str]
) -> dict[str, Any]:
    """The pod of ``host``: ``{node, worker_id, coordinator, coordinator_ip,
    jax_coordinator_address, hosts, ips}`` (its slice) and ``{slice_id, num_slices,
    queued_resource, job_coordinator, job_coordinator_ip}``
    (its multislice job).

    When the host carries the inventory's published variables, they are the answer. Otherwise
    the pod is every candidate host with the same ``tpu_node`` (all candidates when the host has
    none), ordered by ``tpu_worker_id`` then name; its first host coordinates. A host that sets
    ``tpu_num_slices`` above 1 and its ``tpu_slice_id`` by hand belongs to the job of the
    candidates with the same ``tpu_queued_resource`` (or none); the first host of slice 0
    coordinates it. Raises ValueError when a host's slice variables are wrong.
    """
    own = hostvars.get(host) or {}
    node = str(own.get("tpu_node") or "")
    names = list(dict.fromkeys([*candidates, host]))
    if all(own.get(key) not in (None, "", []) for key in POD_VARS):
        hosts = [str(h) for h in own["tpu_pod_hosts"]]
        published = {
            "tpu_pod_coordinator": str(own["tpu_pod_coordinator"]),
            "tpu_pod_coordinator_ip": str(own["tpu_pod_coordinator_ip"]),
            "tpu_pod_hosts": hosts,
            "tpu_pod_ips": [str(ip) for ip in own["tpu_pod_ips"]],
        }
    else:
        same = [n for n in names if str((hostvars.get(n) or {}).get("tpu_node") or "") == node]
        ranked = sorted(same, key=lambda n: _rank(n, hostvars.get(n) or {}))
        _one_host_per_worker_id(node, ranked, hostvars)
        published = pod_vars((n, address(n, hostvars.get(n) or {})) for n in ranked)
    hosts = published["tpu_pod_hosts"]
    coordinator = (published["tpu_pod_coordinator"], published["tpu_pod_coordinator_ip"])
    return {
        "node": node,
        "worker_id": hosts.index(host) if host in hosts else None,
        "coordinator": coordinator[0],
        "coordinator_ip": coordinator[1],
        "jax_coordinator_address": host_port(coordinator[1], JAX_COORDINATOR_PORT),
        "hosts": hosts,
        "ips": published["tpu_pod_ips"],
        **_job(host, hostvars, names, coordinator),
    }
