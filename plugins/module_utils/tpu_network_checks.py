# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The network checks shared by the collection's roles, playbooks and modules, in the manner of
:mod:`tpu_checks` (``''`` when the value is fine, else one sentence that names the variable, the
value given and what is allowed):

* :func:`network_problem`: CIDRs (IPv4 and IPv6) given as a string or a list. A set that is open
  to the world is refused unless ``allow_world`` (a boolean, or a string as from ``-e``) is true.
  Open to the world is:

  - a set whose ranges together cover every IPv4 or every IPv6 address (``0.0.0.0/0``, two
    ``/1``, ``::/0`` in pieces), or more than half of the IPv4 internet or of the IPv6 one (the
    global unicast space ``2000::/3``);
  - any one IPv4 range broader than a ``/8`` (a ``/7`` holds 33 million addresses, and every
    ``/7`` reaches public ones; ``10.0.0.0/8`` itself passes);
  - any one IPv6 range broader than a ``/32`` that reaches ``2000::/3`` (a ``/32`` is what a
    registry gives one provider: more is many networks of strangers). Unique local
    (``fc00::/7``) and link-local (``fe80::/10``) ranges are not the internet and pass.

  An IPv6 range of IPv4-mapped addresses (in ``::ffff:0:0/96``) counts as the IPv4 range it
  maps; one that holds all of ``::ffff:0:0/96`` (``::/8``...) counts as every IPv4 address.
* :func:`address_problem`: a non-empty list of single IPv4 or IPv6 addresses.
* :func:`host_problem`: one server, as an IPv4 or IPv6 address or a DNS name.

The filter plugins of the same names (``plugins/filter/<name>.py``, one file each) expose these
to Jinja.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown

_WORLD = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
# "The world" is also any set covering more than half of the IPv4 space or of the IPv6 global
# unicast space (2000::/3): all but a few addresses is the internet still.
_INTERNET = {4: ipaddress.ip_network("0.0.0.0/0"), 6: ipaddress.ip_network("2000::/3")}
# The broadest single range that is not the world: prefix lengths per IP version.
BROADEST_PREFIX = {4: 8, 6: 32}
_MAPPED = ipaddress.ip_network("::ffff:0:0/96")

NETWORKS_ALLOWED = (
    "a list of networks in CIDR form such as 10.130.0.0/20 or fd00::/64, none broader than an"
    " IPv4 /8 or an IPv6 /32 of the internet (2000::/3), and not the whole internet"
)


def _share(networks: list, version: int) -> float:
    """The share (0 to 1) of the internet of ``version`` that ``networks`` cover together."""
    space = _INTERNET[version]
    same = [n for n in networks if n.version == version]
    covered = 0
    for net in ipaddress.collapse_addresses(same):
        if net.subnet_of(space):
            covered += net.num_addresses
        elif space.subnet_of(net):
            covered += space.num_addresses
    return covered / space.num_addresses


def _reached(net: Any) -> list:
    """``net`` and, for an IPv6 range of IPv4-mapped addresses, the IPv4 range it reaches."""
    if net.version == 6 and net.subnet_of(_MAPPED):
        return [
            net,
            ipaddress.ip_network((int(net.network_address) & 0xFFFFFFFF, net.prefixlen - 96)),
        ]
    return [net]


def _too_broad(net: Any) -> bool:
    """True when one range alone is open to much of the internet (see the module's words)."""
    if net.prefixlen >= BROADEST_PREFIX[net.version]:
        return False
    return net.version == 4 or net.overlaps(_INTERNET[6])


def network_problem(
    value: Any,
    name: str,
    allow_world: Any = False,
    world_flag: str = "",
    allow_empty: bool = False,
) -> str:
    """Why ``value`` (a CIDR or a list of them) is not acceptable for ``name``; ``''`` if it is.

    A set open to the world (see the module's words: every address, more than half of the
    internet, or one range broader than an IPv4 /8 or an IPv6 /32 of the internet) only passes
    when ``allow_world`` is true; the message then names ``world_flag``, the switch that allows
    it.
    """
    items = [value] if isinstance(value, str) else value
    flag = f" (set {world_flag}=true to allow it)" if world_flag else ""
    allowed = NETWORKS_ALLOWED + flag

    def problem(reason: str) -> str:
        return f"{name} is {_shown(value)}: {reason}; allowed: {allowed}."

    if isinstance(items, (Mapping, bytes)) or not isinstance(items, Iterable):
        return problem("not a network or a list of networks")
    items = list(items)
    if not items and not allow_empty:
        return problem("the list is empty")
    given = []  # (the text given, the networks it reaches)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            return problem(f"{_shown(item)} is not a network")
        if item != item.strip() or "%" in item:
            return problem(f"{_shown(item)} has spaces, a line break or a scope id (%)")
        try:
            given.append((item, _reached(ipaddress.ip_network(item, strict=True))))
        except ValueError as exc:
            hint = ""
            try:
                hint = f" (the network is {ipaddress.ip_network(item.strip(), strict=False)})"
            except ValueError:
                pass
            return problem(f"{_shown(item)} is not a valid CIDR: {exc}{hint}")
    try:
        world_ok = boolean(allow_world, strict=True)
    except TypeError:
        return f"{world_flag or 'allow_world'} must be true or false; got {_shown(allow_world)}."
    if world_ok:
        return ""
    networks = [net for _text, reached in given for net in reached]
    for world in _WORLD:
        same = [n for n in networks if n.version == world.version]
        if same and world in ipaddress.collapse_addresses(same):
            return problem(f"together these cover every IPv{world.version} address ({world})")
    for version, space in _INTERNET.items():
        share = _share(networks, version)
        if share > 0.5:
            return problem(
                f"together these cover {share:.4%} of the IPv{version} internet ({space})"
            )
    for item, reached in given:
        if reached[0].version == 6 and _MAPPED.subnet_of(reached[0]) and reached[0] != _MAPPED:
            return problem(
                f"{_shown(item)} holds every IPv4-mapped address (::ffff:0:0/96), so it reaches "
                "every IPv4 address"
            )
        for net in reached:
            if _too_broad(net):
                broadest = BROADEST_PREFIX[net.version]
                return problem(
                    f"{_shown(item)} is broader than an IPv{net.version} /{broadest} "
                    f"({net} holds {net.num_addresses:,} addresses): open to much of the internet"
                )
    return ""


def address_problem(value: Any, name: str) -> str:
    """Why ``value`` is not a non-empty list of single IPv4 or IPv6 addresses; ``''`` if it is."""
    items = [value] if isinstance(value, str) else value
    allowed = "allowed: a list of single addresses such as 10.130.0.2 or fd00::2"
    if isinstance(items, (Mapping, bytes)) or not isinstance(items, Iterable) or not items:
        return f"{name} is {_shown(value)}: {allowed}."
    for item in items:
        try:
            ipaddress.ip_address(item if isinstance(item, str) and "%" not in item else None)
        except ValueError:
            return f"{name} is {_shown(value)}: {_shown(item)} is not one address; {allowed}."
    return ""


# A DNS name: dot-separated labels of letters, digits and '-' (not first or last), 253 at most.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DNS_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?")


def host_problem(value: Any, name: str) -> str:
    """Why ``value`` is not one server (an IP address or a DNS name); ``''`` when it is."""
    allowed = (
        "allowed: one IPv4 or IPv6 address (10.0.0.2, fd00::2) or DNS name"
        " (nfs.example.internal), no port or path"
    )
    if not isinstance(value, str) or not value:
        return f"{name} is {_shown(value)}: not a host; {allowed}."
    try:
        ipaddress.ip_address(value if "%" not in value else None)
        return ""
    except ValueError:
        pass
    if len(value) > 253 or not _DNS_NAME.fullmatch(value) or value.replace(".", "").isdigit():
        return f"{name} is {_shown(value)}: not an address or a DNS name; {allowed}."
    return ""
