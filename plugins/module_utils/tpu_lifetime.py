# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""A node's lifetime, so that a forgotten node stops billing: provision.yml labels each node it
makes with one (``tpu_provision_lifetime``: label ``cloudtpu-lifetime``, value such as ``8h``),
and playbooks/expire.yml deletes the nodes that have lived longer, counted from the creation
time the TPU API reports (a node recover.yml made again starts its lifetime again).

The label holds the duration, not an end time, so running provision.yml again leaves a node's
labels as they are."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown

LABEL = "cloudtpu-lifetime"
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
LONGEST = 366 * 86400
_LIFETIME = re.compile(r"([1-9][0-9]{0,7})([smhd])")


def lifetime_problem(value: Any, name: str = "tpu_provision_lifetime") -> str:
    """'' for a lifetime (or unset: None, ''), else one sentence naming the variable, the value
    and what is allowed."""
    if value is None or value == "":
        return ""
    seconds = lifetime_seconds(value) if isinstance(value, str) else 0
    if seconds and seconds <= LONGEST:
        return ""
    return (
        f"{name} is {_shown(value)}: not a lifetime; allowed: a whole number and a unit, "
        "s, m, h or d (90m, 8h, 2d), up to 366 days"
    )


def lifetime_seconds(value: str) -> int:
    """The seconds of a lifetime such as ``8h``; 0 for anything else."""
    match = _LIFETIME.fullmatch(value) if isinstance(value, str) else None
    return int(match[1]) * UNITS[match[2]] if match else 0


def node_lifetime(value: Any, name: str = "tpu_provision_lifetime") -> dict[str, Any]:
    """provision.yml's view of a lifetime: C(problem) ('' or why it is refused) and C(labels),
    the label to add to the node's own ({} when no lifetime is asked for, or a bad one)."""
    problem = lifetime_problem(value, name)
    return {"problem": problem, "labels": {LABEL: value} if value and not problem else {}}


_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))"
)


def _created(text: str) -> float | None:
    """Seconds since 1970 of an RFC 3339 time (the API's createTime, nanoseconds and all), or
    None."""
    match = _RFC3339.fullmatch(str(text))
    if not match:
        return None
    try:
        when = datetime(*(int(part) for part in match.groups()[:6]), tzinfo=timezone.utc)
    except ValueError:
        return None
    offset = 0 if match[8] else (int(match[10]) * 3600 + int(match[11]) * 60)
    offset = -offset if match[9] == "-" else offset
    return when.timestamp() - offset + float(f"0.{match[7] or 0}")


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _span(seconds: float) -> str:
    minutes = int(abs(seconds) // 60)
    if minutes < 1:
        return f"{int(abs(seconds))} s"
    if minutes < 120:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h {minutes % 60} min"
    return f"{minutes // 1440} d {minutes // 60 % 24} h"


def expiry_plan(nodes: Sequence[Mapping[str, Any]], now: float) -> dict[str, Any]:
    """What expire.yml does with the nodes (summaries as tpu_node_info returns them): C(expired)
    maps project -> {node: zone} for each node past its lifetime, C(lines) says of every node
    with the label when it expires or expired (or why its label is not understood, the node
    then kept), C(count) is the number of expired nodes."""
    expired: dict[str, dict[str, str]] = {}
    lines = []
    for node in sorted(nodes, key=lambda n: (str(n.get("zone")), str(n.get("name")))):
        labels = node.get("labels") if isinstance(node.get("labels"), Mapping) else {}
        if LABEL not in labels:
            continue
        name, zone = str(node.get("name") or ""), str(node.get("zone") or "")
        where = f"{name} ({node.get('project') or '?'}/{zone})"
        seconds = lifetime_seconds(labels[LABEL])
        created = _created(node.get("create_time") or "")
        if not seconds or created is None:
            why = f"label {LABEL} is {_shown(labels[LABEL])}" if not seconds else "no creation time"
            lines.append(f"{where}: kept, {why}")
            continue
        end = created + seconds
        lifetime = f"lifetime {labels[LABEL]} from {_utc(created)}"
        if end <= now:
            expired.setdefault(str(node.get("project") or ""), {})[name] = zone
            lines.append(f"{where}: expired {_span(now - end)} ago ({lifetime})")
        else:
            lines.append(f"{where}: expires in {_span(end - now)}, {_utc(end)} ({lifetime})")
    return {"expired": expired, "lines": lines, "count": sum(map(len, expired.values()))}
