# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""TPU node specs, summaries and filters shared by the tpu_node, tpu_node_info and
tpu_queued_resource modules and the tpu_vm inventory.

A *spec* is a node described with the tpu_node module's option names (``accelerator_type``,
``runtime_version``, ``labels``, ...). :func:`node_body` turns a spec into the API's Node JSON,
:func:`node_spec` reads one back from it, and :func:`spec_differences` lists what differs between
what a task asks for and what exists, split into what the API can change in place (PATCH with an
update mask) and what needs the node to be created again.

Everything here is a pure function of its arguments. Waiting for a node is ``tpu_wait.py``;
what a queued resource request names and how far it got is ``tpu_queued.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_facts import (
    accelerator_facts,
    node_accelerator_type,
)

# Spec fields the v2 API changes in place (nodes.patch update mask), with their mask names.
# networkConfig.enable_external_ips can be patched too, but it hands out or takes away public
# addresses; this collection changes it only by creating the node again.
MUTABLE_FIELDS: dict[str, str] = {
    "description": "description",
    "labels": "labels",
    "metadata": "metadata",
    "tags": "tags",
}
# Spec fields fixed at creation.
IMMUTABLE_FIELDS = (
    "accelerator_type",
    "runtime_version",
    "network",
    "subnetwork",
    "enable_external_ips",
    "spot",
    "preemptible",
    "reserved",
    "service_account",
)
SPEC_FIELDS = IMMUTABLE_FIELDS + tuple(MUTABLE_FIELDS)

# Node states in which the node is on its way somewhere; waits poll through them.
TRANSITIONAL_STATES = ("CREATING", "STARTING", "STOPPING", "RESTARTING", "REIMAGING", "DELETING")
# States of a node whose workers are gone for good: only delete and create again helps.
LOST_STATES = ("PREEMPTED", "TERMINATED")


def short_name(name: Any) -> str:
    """Last path segment of a resource name (``projects/p/locations/z/nodes/n`` -> ``n``)."""
    return str(name or "").rstrip("/").rsplit("/", 1)[-1]


def _str_dict(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _ssh_key_user(line: str) -> str:
    """The user of an ``ssh-keys`` metadata line (``user:ssh-ed25519 AAAA... comment``)."""
    return line.split(":", 1)[0].strip() if ":" in line else ""


def merge_ssh_keys(current: str, wanted: str) -> str:
    """``current`` with the users of ``wanted`` given exactly ``wanted``'s keys.

    Lines of other users stay where they are; a wanted user's lines take the place of that
    user's first line on the node, or are added at the end. Merging twice gives the same text,
    so a re-run changes nothing.
    """
    wanted_lines = [ln.strip() for ln in str(wanted or "").splitlines() if ln.strip()]
    by_user: dict[str, list[str]] = {}
    for line in wanted_lines:
        by_user.setdefault(_ssh_key_user(line), []).append(line)
    merged: list[str] = []
    placed: set[str] = set()
    for line in (ln.strip() for ln in str(current or "").splitlines()):
        if not line:
            continue
        user = _ssh_key_user(line)
        if user in by_user:
            if user not in placed:
                merged.extend(by_user[user])
                placed.add(user)
            continue
        merged.append(line)
    for user, lines in by_user.items():
        if user not in placed:
            merged.extend(lines)
    return "\n".join(dict.fromkeys(merged))


def merge_metadata(current: Any, wanted: Any) -> dict[str, str]:
    """The node's metadata with the wanted keys set: other keys are kept, and ``ssh-keys`` is
    merged per user (see merge_ssh_keys), so other people's keys survive a re-provision."""
    merged = _str_dict(current)
    for key, value in _str_dict(wanted).items():
        merged[key] = merge_ssh_keys(merged.get(key, ""), value) if key == "ssh-keys" else value
    return merged


def node_metadata(
    extra: Mapping[str, Any], user: str, key: str, startup_script: str = ""
) -> dict[str, Any]:
    """The metadata provision.yml creates nodes with: the user's own (``extra``), its
    ``ssh-keys`` lines with ``user:key`` added (each line trimmed and once; none added for no
    key), and the ``startup-script`` when one is given (the pull bootstrap's)."""
    metadata = dict(extra)
    if key:
        current = str(metadata.get("ssh-keys") or "").splitlines()
        lines = (line.strip() for line in [*current, f"{user}:{key}"])
        metadata["ssh-keys"] = "\n".join(dict.fromkeys(line for line in lines if line))
    if startup_script:
        metadata["startup-script"] = startup_script
    return metadata


def _given(
    target: dict[str, Any],
    source: Mapping[str, Any],
    names: Mapping[str, str],
    convert: Callable[[Any], Any] = str,
) -> None:
    """``target[api] = convert(source[option])`` for each option of ``names`` that is not None."""
    for option, api in names.items():
        if source.get(option) is not None:
            target[api] = convert(source[option])


def _strs(items: Any) -> list[str]:
    return [str(item) for item in items]


def node_body(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The API's Node JSON for a spec; options that are None are left out."""
    body: dict[str, Any] = {}
    _given(
        body,
        spec,
        {
            "accelerator_type": "acceleratorType",
            "runtime_version": "runtimeVersion",
            "description": "description",
        },
    )
    network: dict[str, Any] = {}
    _given(network, spec, {"network": "network", "subnetwork": "subnetwork"})
    _given(network, spec, {"enable_external_ips": "enableExternalIps"}, bool)
    if network:
        body["networkConfig"] = network
    scheduling = {api: True for api in ("spot", "preemptible", "reserved") if spec.get(api) is True}
    if scheduling:
        body["schedulingConfig"] = scheduling
    _given(body, spec, {"labels": "labels", "metadata": "metadata"}, _str_dict)
    _given(body, spec, {"tags": "tags"}, _strs)
    account = spec.get("service_account")
    if isinstance(account, Mapping):
        sa: dict[str, Any] = {}
        _given(sa, account, {"email": "email"})
        _given(sa, account, {"scopes": "scope"}, _strs)
        if sa:
            body["serviceAccount"] = sa
    return body


def node_spec(node: Mapping[str, Any]) -> dict[str, Any]:
    """Read a spec (every field of SPEC_FIELDS) back from a Node JSON object."""
    network = node.get("networkConfig") or {}
    scheduling = node.get("schedulingConfig") or {}
    account = node.get("serviceAccount") or {}
    return {
        "accelerator_type": node_accelerator_type(node),
        "runtime_version": str(node.get("runtimeVersion") or ""),
        "description": str(node.get("description") or ""),
        "network": str(network.get("network") or ""),
        "subnetwork": str(network.get("subnetwork") or ""),
        "enable_external_ips": bool(network.get("enableExternalIps")),
        "spot": bool(scheduling.get("spot")),
        "preemptible": bool(scheduling.get("preemptible")),
        "reserved": bool(scheduling.get("reserved")),
        "labels": _str_dict(node.get("labels")),
        "metadata": _str_dict(node.get("metadata")),
        "tags": [str(t) for t in node.get("tags") or []],
        "service_account": {
            "email": str(account.get("email") or ""),
            "scopes": [str(s) for s in account.get("scope") or []],
        },
    }


def _same_resource(current: str, wanted: str) -> bool:
    """True when equal, or when one is a full path (projects/p/global/networks/x) of the other."""
    if current == wanted:
        return True
    if "/" in current or "/" in wanted:
        return short_name(current) == short_name(wanted)
    return False


def spec_differences(wanted: Mapping[str, Any], node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What the wanted spec changes on an existing node.

    Only options the task sets (not None) are compared. Each difference is
    ``{"field", "current", "wanted", "mutable"}``; ``mutable`` tells whether the API can change
    it in place.
    """
    current = node_spec(node)
    differences: list[dict[str, Any]] = []

    def differ(field: str, now: Any, want: Any) -> None:
        differences.append(
            {"field": field, "current": now, "wanted": want, "mutable": field in MUTABLE_FIELDS}
        )

    for field in SPEC_FIELDS:
        want = wanted.get(field)
        if want is None:
            continue
        now = current[field]
        if field == "accelerator_type":
            if str(want).strip().lower() != now.lower():
                differ(field, now, str(want))
        elif field in ("network", "subnetwork"):
            if not _same_resource(now, str(want)):
                differ(field, now, str(want))
        elif field in ("enable_external_ips", "spot", "preemptible", "reserved"):
            if bool(want) != now:
                differ(field, now, bool(want))
        elif field in ("labels", "metadata"):
            if _str_dict(want) != now:
                differ(field, now, _str_dict(want))
        elif field == "tags":
            if sorted(str(t) for t in want) != sorted(now):
                differ(field, now, [str(t) for t in want])
        elif field == "service_account":
            if not isinstance(want, Mapping):
                continue
            if want.get("email") is not None and str(want["email"]) != now["email"]:
                differ("service_account.email", now["email"], str(want["email"]))
            if want.get("scopes") is not None and sorted(str(s) for s in want["scopes"]) != sorted(
                now["scopes"]
            ):
                differ("service_account.scopes", now["scopes"], [str(s) for s in want["scopes"]])
        elif str(want) != now:
            differ(field, now, str(want))
    return differences


def describe_differences(differences: Sequence[Mapping[str, Any]]) -> str:
    """``field: current -> wanted`` for each difference, joined with ``; ``."""
    return "; ".join(
        "{}: {!r} -> {!r}".format(d["field"], d["current"], d["wanted"]) for d in differences
    )


def node_workers(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per worker: ``worker_id``, ``internal_ip``, ``external_ip`` (None if absent)."""
    workers = []
    endpoints = [e for e in node.get("networkEndpoints") or [] if isinstance(e, Mapping)]
    for worker_id, endpoint in enumerate(endpoints):
        access = endpoint.get("accessConfig") or {}
        external = access.get("externalIp") if isinstance(access, Mapping) else None
        workers.append(
            {
                "worker_id": worker_id,
                "internal_ip": str(endpoint.get("ipAddress") or ""),
                "external_ip": str(external) if external else None,
            }
        )
    return workers


def worker_addresses(found: Any) -> list[str]:
    """The addresses (internal, then external) of every worker in ``found``, each once, in the
    order found: a worker (``internal_ip``, ``external_ip``), or what holds workers (a node or a
    tpu_node result: ``workers``; a tpu_queued_resource result: ``nodes``), or lists of them."""
    addresses: list[str] = []

    def collect(item: Any) -> None:
        if isinstance(item, Mapping):
            if "workers" in item or "nodes" in item:
                collect(item.get("workers") or [])
                collect(item.get("nodes") or [])
                return
            for key in ("internal_ip", "external_ip"):
                address = item.get(key)
                if address and str(address) not in addresses:
                    addresses.append(str(address))
        elif isinstance(item, (list, tuple)):
            for entry in item:
                collect(entry)

    collect(found)
    return addresses


def parse_node_name(name: Any) -> tuple[str, str, str]:
    """(project, zone, node id) from ``projects/P/locations/Z/nodes/N`` (else empty parts)."""
    parts = str(name or "").split("/")
    if len(parts) == 6 and parts[0] == "projects" and parts[2] == "locations":
        return parts[1], parts[3], parts[5]
    return "", "", parts[-1]


def node_summary(node: Mapping[str, Any]) -> dict[str, Any]:
    """A node as the modules return it: the useful facts first, the API JSON in ``resource``."""
    project, zone, node_id = parse_node_name(node.get("name"))
    accel = node_accelerator_type(node)
    scheduling = node.get("schedulingConfig") or {}
    workers = node_workers(node)
    return {
        "name": node_id,
        "project": project,
        "zone": zone,
        "state": str(node.get("state") or "STATE_UNSPECIFIED"),
        "health": str(node.get("health") or "HEALTH_UNSPECIFIED"),
        "accelerator_type": accel,
        "generation": accelerator_facts(accel)["generation"],
        "runtime_version": str(node.get("runtimeVersion") or ""),
        "worker_count": len(workers),
        "workers": workers,
        "spot": bool(scheduling.get("spot") or scheduling.get("preemptible")),
        "labels": _str_dict(node.get("labels")),
        "queued_resource": short_name(node.get("queuedResource")) or None,
        "create_time": str(node.get("createTime") or ""),
        "spec": node_spec(node),
        "resource": dict(node),
    }


def node_matches(
    node: Mapping[str, Any],
    states: Sequence[str] = (),
    labels: Mapping[str, Any] | None = None,
    accelerator_types: Sequence[str] = (),
    names: Sequence[str] = (),
) -> bool:
    """The tpu_vm inventory's filters: True when the node passes every one (empty keeps all).

    ``labels`` values and the ``accelerator_types`` and ``names`` entries are shell-style
    patterns; states are compared without regard to case.
    """
    if states and str(node.get("state", "")).upper() not in {s.upper() for s in states}:
        return False
    node_labels = node.get("labels") or {}
    for key, pattern in (labels or {}).items():
        if key not in node_labels or not fnmatchcase(str(node_labels[key]), str(pattern)):
            return False
    if accelerator_types:
        accel = node_accelerator_type(node)
        if not any(fnmatchcase(accel, pattern) for pattern in accelerator_types):
            return False
    if names:
        node_id = parse_node_name(node.get("name"))[2]
        if not any(fnmatchcase(node_id, pattern) for pattern in names):
            return False
    return True
