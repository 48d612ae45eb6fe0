# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Checks of a tpu_vm inventory source (the plugin calls :func:`config_problems` before any API
call): unknown keys, node states, the host name template, the hosts allowed over plain http and
the numeric options. Each returns ``''`` (or no problems) when fine, else sentences naming the
key, the value and what is allowed, as the checks of :mod:`tpu_checks` do."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_options import (
    HTTP_HOSTS_NAME,
    http_hosts_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    _shown,
    option_problems,
)

# Node states of the TPU v2 API (Node.State), as the inventory and tpu_node_info filter on them.
NODE_STATES = (
    "CREATING",
    "READY",
    "RESTARTING",
    "REIMAGING",
    "DELETING",
    "REPAIRING",
    "STOPPED",
    "STOPPING",
    "STARTING",
    "PREEMPTED",
    "TERMINATED",
    "HIDING",
    "HIDDEN",
    "UNHIDING",
    "UNKNOWN",
)
# An inventory host name: no spaces, commas, colons (ports), brackets (ranges) or quotes.
_HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}")
# What a hostname template is tried with: values of the shapes the API gives.
HOSTNAME_SAMPLE = {
    "node": "my-node",
    "worker_id": 0,
    "zone": "us-central2-b",
    "project": "my-project",
    "accelerator_type": "v4-8",
    "generation": "v4",
}


def states_problem(value: Any, name: str = "states") -> str:
    """Why ``value`` is not a list of TPU node states (any case); ``''`` when it is."""
    allowed = "a list of TPU node states: " + ", ".join(NODE_STATES) + " (empty keeps every state)"
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        return f"{name} is {_shown(value)}: not a list; allowed: {allowed}."
    unknown = [s for s in value if not isinstance(s, str) or s.upper() not in NODE_STATES]
    if unknown:
        hint = ""
        if any(str(s).upper() == "RUNNING" for s in unknown):
            hint = " (a running node is READY)"
        return (
            f"{name} is {_shown(value)}: {_shown(unknown)} not API node states{hint}; "
            f"allowed: {allowed}."
        )
    return ""


def hostname_problem(value: Any, name: str = "hostname", sample: Mapping | None = None) -> str:
    """Why the host name template ``value`` cannot give valid inventory host names; ``''`` if ok.

    The template is a Python format string over the keys of ``sample`` (HOSTNAME_SAMPLE by
    default); it is rendered with those sample values and the result must be a host name.
    """
    sample = dict(HOSTNAME_SAMPLE if sample is None else sample)
    fields = ", ".join("{%s}" % key for key in sample)
    allowed = (
        f"a format string over {fields} that gives letters, digits, '.', '-' and '_' only "
        "(not '.' or '-' first), such as {node}-w{worker_id}"
    )
    if not isinstance(value, str) or not value:
        return f"{name} is {_shown(value)}: not a template; allowed: {allowed}."
    try:
        rendered = value.format(**sample)
    except KeyError as exc:
        field = exc.args[0]
        return f"{name} is {_shown(value)}: it uses {{{field}}}, no such field; allowed: {allowed}."
    except (ValueError, IndexError, AttributeError) as exc:
        return f"{name} is {_shown(value)}: not a format string ({exc}); allowed: {allowed}."
    if "worker_id" in sample and rendered == value.format(**{**sample, "worker_id": 1}):
        return (
            f"{name} is {_shown(value)}: it must contain {{worker_id}}, else the workers of a "
            f"node get the same name; allowed: {allowed}."
        )
    if not _HOST_NAME.fullmatch(rendered):
        return (
            f"{name} is {_shown(value)}: it gives {_shown(rendered)}, not a valid host name; "
            f"allowed: {allowed}."
        )
    return ""


def config_problems(config: Mapping[str, Any], known: Iterable[str]) -> list[str]:
    """Problems of a tpu_vm inventory source: unknown keys, states, host names, the hosts
    allowed over plain http and numbers.

    ``config`` is the source file's mapping as written (with ``plugin``); ``known`` the option
    names the plugin documents.
    """
    allowed = sorted({*known, "plugin"})
    problems = []
    unknown = sorted(str(key) for key in config if key not in allowed)
    if unknown:
        problems.append(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"allowed: {', '.join(allowed)}."
        )
    if config.get("states") is not None:
        problems.append(states_problem(config["states"], "states"))
    if config.get("hostname") is not None:
        problems.append(hostname_problem(config["hostname"], "hostname"))
    if config.get("http_hosts") is not None:
        problems.append(http_hosts_problem(config["http_hosts"], HTTP_HOSTS_NAME))
    problems.extend(option_problems(config))
    return [p for p in problems if p]
