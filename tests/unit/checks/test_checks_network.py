"""The network checks (module_utils/tpu_network_checks.py: network_problem, address_problem),
on tables.

Every refusal is asserted to name the variable, to show the value as given and to say what is
allowed; every accepted case to return exactly ''. Open to the world, and refused unless the
caller's flag allows the world: every address, more than half of the internet, or one range
broader than an IPv4 /8 or an IPv6 /32 of 2000::/3.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import (
    address_problem,
    network_problem,
)

from tests.unit.checks.test_checks import assert_refusal

NET_REFUSED = [
    ("0.0.0.0/0", {}, "cover every IPv4 address (0.0.0.0/0)", "not the whole internet"),
    (["0.0.0.0/1", "128.0.0.0/1"], {}, "every IPv4 address", "not the whole internet"),
    (["10.0.0.0/8", "0.0.0.0/0"], {}, "every IPv4 address", "not the whole internet"),
    (["::/1", "8000::/1"], {}, "every IPv6 address (::/0)", "not the whole internet"),
    (["::/0"], {}, "every IPv6 address", "not the whole internet"),
    (
        ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"],
        {},
        "every IPv4 address",
        "not the whole internet",
    ),
    (
        ["0.0.0.0/0"],
        {"allow_world": "no", "world_flag": "tpu_nfs_allow_world"},
        "every IPv4",
        "set tpu_nfs_allow_world=true",
    ),
    # all but one address is the world still: 32 ranges that leave out 0.0.0.0 only
    (
        [f"{ipaddress.IPv4Address(1 << (31 - i))}/{i + 1}" for i in range(32)],
        {},
        "cover 100.0000% of the IPv4 internet",
        "not the whole internet",
    ),
    (["0.0.0.0/1", "128.0.0.0/2"], {}, "cover 75.0000% of the IPv4 internet", "not the whole"),
    (["2000::/4", "3000::/5"], {}, "cover 75.0000% of the IPv6 internet (2000::/3)", "CIDR"),
    (["0.0.0.0/1", "::/1", "8000::/2"], {}, "100.0000% of the IPv6 internet", "CIDR form"),
    (["::ffff:0:0/96"], {}, "every IPv4 address (0.0.0.0/0)", "not the whole internet"),
    (["::ffff:0.0.0.0/97", "::ffff:128.0.0.0/97"], {}, "every IPv4 address", "not the whole"),
    # a range that holds every IPv4-mapped address reaches every IPv4 address
    (["::/8"], {}, '"::/8" holds every IPv4-mapped address (::ffff:0:0/96), so it reaches', "/8"),
    (["::fffe:0:0/95"], {}, "so it reaches every IPv4 address", "not the whole internet"),
    # one range broader than a /8 is open to much of the internet, alone
    (
        ["128.0.0.0/1"],
        {},
        '"128.0.0.0/1" is broader than an IPv4 /8 (128.0.0.0/1 holds 2,147,483,648 addresses)',
        "none broader than an IPv4 /8",
    ),
    (["0.0.0.0/1"], {}, '"0.0.0.0/1" is broader than an IPv4 /8', "not the whole internet"),
    (["10.0.0.0/7"], {}, '"10.0.0.0/7" is broader than an IPv4 /8', "none broader"),
    (
        ["10.130.0.0/20", "64.0.0.0/3"],
        {"world_flag": "tpu_firewall_allow_world"},
        '"64.0.0.0/3" is broader than an IPv4 /8',
        "set tpu_firewall_allow_world=true to allow it",
    ),
    (["::ffff:128.0.0.0/97"], {}, '"::ffff:128.0.0.0/97" is broader than an IPv4 /8', "/8"),
    (["2001::/16"], {}, '"2001::/16" is broader than an IPv6 /32', "an IPv6 /32 of the internet"),
    (["2000::/31"], {}, "broader than an IPv6 /32 (2000::/31 holds", "(2000::/3)"),
    (["2400::/6"], {}, '"2400::/6" is broader than an IPv6 /32', "none broader"),
    (["fe80::%eth0/64"], {}, "a scope id (%)", "CIDR form"),
    (["10.0.0.0/8\n"], {}, "a line break", "CIDR form"),
    ("10.0.0.0/8\n", {}, "a line break", "CIDR form"),
    ([" 10.0.0.0/8"], {}, "spaces", "CIDR form"),
    ("10.0.0.1/8", {}, "not a valid CIDR", "CIDR form"),
    ("10.0.0.0/33", {}, "not a valid CIDR", "CIDR form"),
    ("300.1.1.1/32", {}, "not a valid CIDR", "CIDR form"),
    ("fd00::1/64", {}, "not a valid CIDR", "CIDR form"),
    ("example.com", {}, "not a valid CIDR", "CIDR form"),
    ([""], {}, "is not a network", "CIDR form"),
    ([10], {}, "is not a network", "CIDR form"),
    ([], {}, "the list is empty", "CIDR form"),
    ({"cidr": "10.0.0.0/8"}, {}, "not a network or a list of networks", "CIDR form"),
    (None, {}, "not a network or a list of networks", "CIDR form"),
]


@pytest.mark.parametrize(
    ("value", "kwargs", "reason", "allowed"),
    NET_REFUSED,
    ids=[f"{json.dumps(v)}-{sorted(k)}" for v, k, _, _ in NET_REFUSED],
)
def test_network_refused(value: Any, kwargs: dict, reason: str, allowed: str) -> None:
    message = network_problem(value, "tpu_nfs_clients", **kwargs)
    assert_refusal(message, "tpu_nfs_clients", value, reason, allowed)


def test_network_hint_names_the_network() -> None:
    assert "(the network is 10.0.0.0/8)" in network_problem("10.0.0.1/8", "tpu_x")


NET_ACCEPTED = [
    ("10.130.0.0/20", {}),
    (["10.130.0.0/20", "192.168.1.7"], {}),
    (["fd00::/64", "10.0.0.0/8"], {}),
    # a /8 is the broadest single IPv4 range that passes, a /32 the broadest of 2000::/3
    (["10.0.0.0/8", "172.16.0.0/12", "100.64.0.0/10"], {}),
    (["2001:db8::/32"], {}),
    # IPv6 ranges outside the internet (2000::/3): unique local, link-local
    (["fd00::/8"], {}),
    (["fc00::/7", "fe80::/10"], {}),
    (["0.0.0.0/1", "4000::/3"], {"allow_world": True}),
    (["::ffff:10.0.0.0/104"], {}),
    (["0.0.0.0/1", "128.0.0.0/2"], {"allow_world": True}),
    (["128.0.0.0/1"], {"allow_world": "yes", "world_flag": "tpu_firewall_allow_world"}),
    (["2001::/16"], {"allow_world": True}),
    (["0.0.0.0/0"], {"allow_world": True}),
    (["0.0.0.0/0"], {"allow_world": "yes"}),
    (["::/0"], {"allow_world": "true"}),
    ([], {"allow_empty": True}),
]


@pytest.mark.parametrize(
    ("value", "kwargs"), NET_ACCEPTED, ids=[f"{json.dumps(v)}-{k}" for v, k in NET_ACCEPTED]
)
def test_network_accepted(value: Any, kwargs: dict) -> None:
    assert network_problem(value, "tpu_nfs_clients", **kwargs) == ""


def test_network_bad_world_flag_is_named() -> None:
    message = network_problem("0.0.0.0/0", "tpu_x", allow_world="maybe", world_flag="tpu_x_world")
    assert message == 'tpu_x_world must be true or false; got "maybe".'


@pytest.mark.parametrize(
    "value",
    [["10.0.0.2", "10.0.0.3"], "fd00::2", ["10.0.0.2", "2001:db8::1"]],
)
def test_address_lists_that_pass(value: object) -> None:
    assert address_problem(value, "tpu_pod_ips") == ""


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ([], "[]"),
        (["10.0.0.0/24"], '"10.0.0.0/24"'),
        (["10.0.0.2\n"], '"10.0.0.2\\n"'),
        (["ALL"], '"ALL"'),
        (["10.0.0.2 ALL"], '"10.0.0.2 ALL"'),
        (["fe80::1%eth0"], '"fe80::1%eth0"'),
        ([167772162], "167772162"),
        ({"a": "10.0.0.2"}, '{"a": "10.0.0.2"}'),
    ],
)
def test_address_lists_that_are_refused(value: object, shown: str) -> None:
    message = address_problem(value, "tpu_pod_ips")
    assert message.startswith("tpu_pod_ips is "), message
    assert shown in message and "allowed: a list of single addresses" in message, message
