# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The python role's one download of wheels per pod (roles/python/tasks/pod_wheels.yml): who
takes part, and the command of the coordinator's wheel server (the cloudtpu.pod.pod_wheels_plan
filter)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import url_host

# The server's lifetime if the play dies before it stops it: the copies take seconds.
MAX_SECONDS = 900


def pod_wheels_plan(
    pod: Mapping[str, Any],
    host: str,
    play_hosts: Iterable[str],
    needing: Iterable[str],
    service_mgr: str,
    wheels_dir: str,
    port: Any,
    unit: str,
) -> dict[str, Any]:
    """Whether ``host`` takes part in the pod's one download, and how.

    ``pod`` is the pod contract (the cloudtpu.pod.pod lookup: ``hosts``, ``ips``,
    ``coordinator``, ``coordinator_ip``), ``needing`` the play's hosts that need installing,
    ``service_mgr`` the coordinator's service manager (its gathered fact). The coordinator
    serves only when it is in the play, has systemd and an internal address, and two or more
    hosts of its pod need the wheels. Returns ``coordinator``, ``is_coordinator``, ``used``,
    ``address``, ``members`` (the pod's addresses), ``url`` and ``serve`` (the server's
    command line, for a transient systemd unit ``unit``).
    """
    play, wanted = set(play_hosts), set(needing)
    coordinator = pod["coordinator"]
    address = pod["coordinator_ip"] or ""
    todo = [name for name in pod["hosts"] if name in play and name in wanted]
    used = (
        coordinator in play
        and len(todo) > 1
        and len(address) > 0
        and (host == coordinator or host in todo)
        and service_mgr == "systemd"
    )
    members = [ip for ip in pod["ips"] if ip]
    serve = [
        "systemd-run",
        f"--unit={unit}",
        "--collect",
        "--property=DynamicUser=yes",
        "--property=ProtectSystem=strict",
        "--property=ProtectHome=yes",
        "--property=PrivateTmp=yes",
        "--property=NoNewPrivileges=yes",
        f"--property=RuntimeMaxSec={MAX_SECONDS}",
        "/usr/bin/python3",
        f"{wheels_dir}/wheel_cache.py",
        "serve",
        "--bind",
        address,
        "--port",
        str(port),
        *(f"--allow={ip}" for ip in members),
        f"{wheels_dir}/wheels",
    ]
    return {
        "coordinator": coordinator,
        "is_coordinator": host == coordinator,
        "used": bool(used),
        "address": address,
        "members": members,
        "url": f"http://{url_host(address)}:{port}" if address else "",
        "serve": serve,
    }


def hosts_with_fact(
    play_hosts: Iterable[str], hostvars: Mapping[str, Mapping[str, Any]], fact: str
) -> list[str]:
    """The hosts of ``play_hosts``, in order, whose fact ``fact`` is set and true.

    ``hostvars`` is the play's hostvars (a host's variables by its name); a host that has not
    set the fact (it skipped the task, or failed before it) is not one of them.
    """
    return [host for host in play_hosts if bool(hostvars[host].get(fact))]


def pod_cache_serves(
    pod: Mapping[str, Any],
    host: str,
    play_hosts: Iterable[str],
    hostvars: Mapping[str, Mapping[str, Any]],
    seen: str,
) -> bool:
    """Whether ``host`` is its pod's coordinator and two or more hosts of the pod go through
    the role's tasks in this play, so that it goes through them too, converged or not, and
    serves the pod's wheels (the pod_wheels entry point).

    ``seen`` names the role's fact of the converged fast path (cloudtpu.pod.tpu_state): a host
    goes through the tasks unless that fact says ``converged``.
    """
    play = list(play_hosts)
    if len(play) < 2 or pod["coordinator"] != host:
        return False
    going = [
        name
        for name in pod["hosts"]
        if name in play and not (hostvars[name].get(seen) or {}).get("converged")
    ]
    return len(going) > 1
