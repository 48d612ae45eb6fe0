# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Where playbooks/status.yml asks the TPU API: projects and zones from the request, the
inventory's hosts, its tpu_vm sources and the environment."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

DOCUMENTATION = r"""
name: status_places
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The projects and zones status.yml asks the TPU API about, and where it looked
description:
  - Projects, unless O(projects) names them, are those of the inventory's hosts (the
    C(tpu_project) the C(cloudtpu.pod.tpu_vm) inventory sets), those of each tpu_vm source file
    of the inventory (its C(projects), else C(CLOUDTPU_PROJECT), else C(GCP_PROJECT), as the
    inventory plugin reads them) and C(CLOUDTPU_PROJECT). The source files count even when the
    inventory has no host, as when every node is PREEMPTED and the inventory lists READY ones.
  - Zones, unless O(zones) names them, are C(CLOUDTPU_ZONES); else those of the tpu_vm
    sources (each its C(zones); one without any means every zone); else, without a tpu_vm
    source, the C(tpu_zone) values of the hosts. Empty means every zone.
  - A tpu_vm source is a file of the inventory sources (or a file in a source folder) whose
    name ends in C(tpu_vm.yml) or C(tpu_vm.yaml) and whose C(plugin) is C(cloudtpu.pod.tpu_vm).
positional: host_projects, host_zones, env, projects, zones
options:
  _input:
    description: The inventory sources (C(ansible_inventory_sources)), files or folders.
    type: list
    elements: str
    required: true
  host_projects:
    description: The C(tpu_project) values of the inventory's hosts.
    type: list
    elements: str
    default: []
  host_zones:
    description: The C(tpu_zone) values of the inventory's hosts.
    type: list
    elements: str
    default: []
  env:
    description: C(CLOUDTPU_PROJECT), C(GCP_PROJECT) and C(CLOUDTPU_ZONES) of the environment.
    type: dict
    default: {}
  projects:
    description: Projects the user named (a list or a comma-separated string); none when unset.
    type: raw
  zones:
    description: Zones the user named (a list or a comma-separated string); none when unset.
    type: raw
"""

EXAMPLES = r"""
- name: Where to look
  ansible.builtin.set_fact:
    places: >-
      {{ ansible_inventory_sources | cloudtpu.pod.status_places(['p'], [], {}) }}
"""

RETURN = r"""
_value:
  description:
    - C(projects) and C(zones) (lists; no zone means every zone), and C(searched), a sentence
      that says where the projects were looked for (for the message when there is none).
  type: dict
"""

SUFFIXES = ("tpu_vm.yml", "tpu_vm.yaml")
PLUGIN = "cloudtpu.pod.tpu_vm"


def as_list(value: Any) -> list[str]:
    """A list of non-empty strings from a list or a comma-separated string; templates dropped."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Iterable):
        items = [items]
    found = [str(v).strip() for v in items if v is not None]
    return [v for v in found if v and "{{" not in v]


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def source_files(sources: Sequence[str] | None) -> list[str]:
    """The files among the sources (and in source folders) that the tpu_vm plugin would read."""
    found: list[str] = []
    for source in sources or []:
        source = str(source)
        if os.path.isdir(source):
            names = sorted(os.listdir(source))
            found += [os.path.join(source, n) for n in names if n.endswith(SUFFIXES)]
        elif source.endswith(SUFFIXES):
            found.append(source)
    return [f for f in found if os.path.isfile(f)]


def read_source(path: str) -> dict[str, Any] | None:
    """The options of a tpu_vm source file, or None when it is not one (or unreadable)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(data, Mapping) or data.get("plugin") != PLUGIN:
        return None
    return dict(data)


def status_places(
    sources: Sequence[str] | None,
    host_projects: Sequence[str] | None = (),
    host_zones: Sequence[str] | None = (),
    env: Mapping[str, Any] | None = None,
    projects: Any = None,
    zones: Any = None,
) -> dict[str, Any]:
    """Projects and zones to ask about, and where they were looked for (see DOCUMENTATION)."""
    env = env or {}
    env_projects = as_list(env.get("CLOUDTPU_PROJECT"))
    source_projects = as_list(env.get("CLOUDTPU_PROJECT")) or as_list(env.get("GCP_PROJECT"))
    env_zones = as_list(env.get("CLOUDTPU_ZONES"))
    files = [(path, read_source(path)) for path in source_files(sources)]
    options = [(path, data) for path, data in files if data is not None]

    if projects is not None:
        found_projects = _unique(as_list(projects))
    else:
        from_files = [
            p for _path, data in options for p in as_list(data.get("projects")) or source_projects
        ]
        found_projects = _unique(as_list(host_projects) + from_files + env_projects)

    if zones is not None:
        found_zones = _unique(as_list(zones))
    elif env_zones:
        found_zones = _unique(env_zones)
    elif options:
        per_file = [as_list(data.get("zones")) for _path, data in options]
        found_zones = [] if not all(per_file) else _unique(z for zs in per_file for z in zs)
    else:
        found_zones = _unique(as_list(host_zones))

    if projects is not None:
        searched = "tpu_status_projects"
    else:
        names = ", ".join(os.path.basename(path) for path, _data in options)
        searched = (
            "the tpu_project of the inventory's hosts, "
            + (f"the projects of its tpu_vm sources ({names}), " if names else "no tpu_vm source, ")
            + "CLOUDTPU_PROJECT"
        )
    return {"projects": found_projects, "zones": found_zones, "searched": searched}


class FilterModule:
    """cloudtpu.pod.status_places."""

    def filters(self) -> dict[str, Any]:
        return {"status_places": status_places}
