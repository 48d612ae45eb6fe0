# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The VPC firewall rules of playbooks/firewall.yml: its settings checked, and the rule set.

:func:`firewall_plan` takes the play's settings (``source_ranges``, ``allow_world``,
``target_tags``, ``network``, ``name_prefix``, ``ssh``, ``ssh_port``, ``mosh``, ``mosh_ports``,
``priority``, ``state``; the switches already checked to be booleans) and returns
``ranges_problem`` (the source ranges), ``problem`` (the other settings) and ``rules``: one rule
per service (SSH over TCP, mosh over UDP) and address family, since a VPC firewall rule holds
either IPv4 or IPv6 source ranges; none while anything is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import (
    network_problem,
)

NETWORK = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
NAME_PREFIX = r"[a-z]([-a-z0-9]{0,50}[a-z0-9])?"
RANGES_EXAMPLE = '["203.0.113.7/32"]'


def _matches(value: Any, pattern: str) -> bool:
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None


def _on(value: Any) -> bool:
    return boolean(value, strict=False)


def ranges_problem(value: Any, allow_world: Any) -> str:
    """Why tpu_firewall_source_ranges is refused (``''`` when it is fine): unset, not a list, or
    a range network_problem refuses; the whole internet, or a range broader than an IPv4 /8 or
    an IPv6 /32, only with tpu_firewall_allow_world."""
    if value is None:
        return (
            "tpu_firewall_source_ranges is not set; it is required: a non-empty list of CIDRs "
            f"that may reach the workers, for example {RANGES_EXAMPLE} (your address)."
        )
    if isinstance(value, str):
        return (
            f"tpu_firewall_source_ranges is {json.dumps(value)}: not a list; allowed: a list of "
            f"CIDRs such as {RANGES_EXAMPLE} (JSON with -e)."
        )
    return network_problem(
        value,
        "tpu_firewall_source_ranges",
        allow_world=allow_world,
        world_flag="tpu_firewall_allow_world",
    )


def _port(value: Any) -> int | None:
    text = str(value)
    return int(text) if re.fullmatch(r"[0-9]{1,5}", text) else None


def _port_range(value: Any) -> bool:
    match = re.fullmatch(r"([0-9]{1,5})-([0-9]{1,5})", str(value))
    return bool(match) and 1 <= int(match.group(1)) <= int(match.group(2)) <= 65535


def settings_problem(settings: Mapping[str, Any]) -> str:
    """Why the settings other than the source ranges build no rule (``''`` when they do)."""
    tags = settings.get("target_tags")
    network = settings.get("network")
    prefix = settings.get("name_prefix")
    ssh_port = _port(settings.get("ssh_port"))
    priority = _port(settings.get("priority"))
    state = settings.get("state")
    checks = (
        (
            isinstance(tags, (list, tuple))
            and len(tags) > 0
            and all(_matches(tag, NETWORK) for tag in tags),
            f"tpu_firewall_target_tags is '{tags}'; it is required and must be a non-empty list "
            "of network tags (lower case, digits, '-') of the TPU nodes. Without tags a rule "
            "applies to every instance of the network.",
        ),
        (
            _matches(network, NETWORK),
            f"tpu_firewall_network is '{network}'; it must be a VPC network name.",
        ),
        (
            _matches(prefix, NAME_PREFIX),
            f"tpu_firewall_name_prefix is '{prefix}'; it must be lower case letters, digits and "
            "'-', starting with a letter, at most 52 characters.",
        ),
        (
            ssh_port is not None and 1 <= ssh_port <= 65535,
            f"tpu_firewall_ssh_port is '{settings.get('ssh_port')}'; it must be a port from 1 to "
            "65535.",
        ),
        (
            _port_range(settings.get("mosh_ports")),
            f"tpu_firewall_mosh_ports is '{settings.get('mosh_ports')}'; it must be a port range "
            "LOW-HIGH with 1 <= LOW <= HIGH <= 65535, like 60000-61000.",
        ),
        (
            priority is not None and priority <= 65535,
            f"tpu_firewall_priority is '{settings.get('priority')}'; it must be 0 to 65535.",
        ),
        (
            state in ("present", "absent"),
            f"tpu_firewall_state is '{state}'; it must be present or absent.",
        ),
        (
            _on(settings.get("ssh")) or _on(settings.get("mosh")),
            "tpu_firewall_ssh and tpu_firewall_mosh are both false; there is no rule to make.",
        ),
    )
    text = " ".join(message for fine, message in checks if not fine)
    return f"Refusing to build the firewall rules: {text}" if text else ""


def firewall_rules(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rule set, in the shape of google.cloud.gcp_compute_firewall's options."""
    services = []
    if _on(settings.get("ssh")):
        services.append(("ssh", "tcp", str(settings.get("ssh_port")), "SSH"))
    if _on(settings.get("mosh")):
        services.append(("mosh", "udp", str(settings.get("mosh_ports")), "mosh"))
    ranges = list(settings.get("source_ranges") or [])
    families = (
        ("", [r for r in ranges if ":" not in str(r)]),
        ("-v6", [r for r in ranges if ":" in str(r)]),
    )
    return [
        {
            "name": f"{settings.get('name_prefix')}-{name}{suffix}",
            "description": f"{what} to TPU workers (cloudtpu.pod playbooks/firewall.yml)",
            "network": {"selfLink": f"global/networks/{settings.get('network')}"},
            "direction": "INGRESS",
            "priority": int(str(settings.get("priority"))),
            "allowed": [{"ip_protocol": protocol, "ports": [ports]}],
            "source_ranges": family,
            "target_tags": settings.get("target_tags"),
        }
        for name, protocol, ports, what in services
        for suffix, family in families
        if family
    ]


def firewall_plan(settings: Mapping[str, Any]) -> dict[str, Any]:
    """See the module's docstring."""
    ranges = ranges_problem(settings.get("source_ranges"), settings.get("allow_world", False))
    problem = settings_problem(settings)
    rules = [] if ranges or problem else firewall_rules(settings)
    return {"ranges_problem": ranges, "problem": problem, "rules": rules}
