# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Which hosts form a pod, who coordinates it, and at which addresses.

Decoded once: the tpu_vm inventory publishes the answer as host variables
(``tpu_pod_coordinator``, ``tpu_pod_coordinator_ip``, ``tpu_pod_hosts``, ``tpu_pod_ips``), and
the ``cloudtpu.pod.pod`` lookup returns the same shape for a static inventory that sets only
``tpu_node``, ``tpu_worker_id`` and addresses by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

POD_VARS = ("tpu_pod_coordinator", "tpu_pod_coordinator_ip", "tpu_pod_hosts", "tpu_pod_ips")


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


def pod_of(
    host: str, hostvars: Mapping[str, Mapping[str, Any]], candidates: Iterable[str]
) -> dict[str, Any]:
    """The pod of ``host``: ``{node, worker_id, coordinator, coordinator_ip, hosts, ips}``.

    When the host carries the inventory's published variables, they are the answer. Otherwise
    the pod is every candidate host with the same ``tpu_node`` (all candidates when the host has
    none), ordered by ``tpu_worker_id`` then name; its first host coordinates.
    """
    own = hostvars.get(host) or {}
    node = str(own.get("tpu_node") or "")
    if all(own.get(key) not in (None, "", []) for key in POD_VARS):
        hosts = [str(h) for h in own["tpu_pod_hosts"]]
        published = {
            "tpu_pod_coordinator": str(own["tpu_pod_coordinator"]),
            "tpu_pod_coordinator_ip": str(own["tpu_pod_coordinator_ip"]),
            "tpu_pod_hosts": hosts,
            "tpu_pod_ips": [str(ip) for ip in own["tpu_pod_ips"]],
        }
    else:
        names = list(dict.fromkeys([*candidates, host]))
        same = [n for n in names if str((hostvars.get(n) or {}).get("tpu_node") or "") == node]
        ranked = sorted(same, key=lambda n: _rank(n, hostvars.get(n) or {}))
        published = pod_vars((n, address(n, hostvars.get(n) or {})) for n in ranked)
    hosts = published["tpu_pod_hosts"]
    return {
        "node": node,
        "worker_id": hosts.index(host) if host in hosts else None,
        "coordinator": published["tpu_pod_coordinator"],
        "coordinator_ip": published["tpu_pod_coordinator_ip"],
        "hosts": hosts,
        "ips": published["tpu_pod_ips"],
    }
