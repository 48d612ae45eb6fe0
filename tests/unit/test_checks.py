"""The value checks (module_utils/tpu_checks.py) and their filters, on tables.

Every refusal is asserted to name the variable, to show the value as given and to say what is
allowed; every accepted case to return exactly ''.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.checks import FilterModule
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    OPTION_LIMITS,
    address_problem,
    device_glob_problem,
    gcp_name_problem,
    network_problem,
    number_problem,
    option_problems,
    path_problem,
)

HOME = "/home/tpu"


def assert_refusal(message: str, name: str, value: Any, reason: str, allowed: str) -> None:
    assert message, f"{name}={value!r} was accepted"
    assert message.startswith(f"{name} is "), message
    assert json.dumps(value, sort_keys=True, default=str) in message, message
    assert reason in message, message
    assert "allowed: " in message and allowed in message.split("allowed: ", 1)[1], message


# value, keyword arguments, reason in the message, part of what is allowed
PATH_REFUSED = [
    ("/", {}, "it is a system folder", "not / or a system folder"),
    ("/etc", {}, "it is a system folder", "absolute, normalised"),
    ("/etc/tpu", {}, "in the system folder /etc", "not / or a system folder"),
    ("/usr", {}, "it is a system folder", "system folder"),
    ("/usr/lib/python3", {}, "in the system folder /usr/lib", "system folder"),
    ("/usr/local", {}, "it is a system folder", "system folder"),
    ("/bin/x", {}, "in the system folder /bin", "system folder"),
    ("/sbin", {}, "it is a system folder", "system folder"),
    ("/lib", {}, "it is a system folder", "system folder"),
    ("/lib64/ld.so", {}, "in the system folder /lib64", "system folder"),
    ("/libx32/x", {}, "in the system folder /libx32", "system folder"),
    ("/boot/efi", {}, "in the system folder /boot", "system folder"),
    ("/dev/shm/x", {}, "in the system folder /dev", "system folder"),
    ("/proc/1", {}, "in the system folder /proc", "system folder"),
    ("/sys/fs", {}, "in the system folder /sys", "system folder"),
    ("/run/tpu", {}, "in the system folder /run", "system folder"),
    ("/var", {}, "it is a system folder", "system folder"),
    ("/var/lib", {}, "it is a system folder", "system folder"),
    ("/var/log", {}, "it is a system folder", "system folder"),
    ("/var/lib/dpkg/x", {}, "in the system folder /var/lib/dpkg", "system folder"),
    ("/var/run", {}, "it is a system folder", "system folder"),
    ("/var/run/tpu", {}, "in the system folder /var/run", "system folder"),
    ("/var/lock/x", {}, "in the system folder /var/lock", "system folder"),
    ("/var/spool/cron", {}, "in the system folder /var/spool", "system folder"),
    ("/var/mail", {}, "it is a system folder", "system folder"),
    ("/var/mail/tpu", {}, "in the system folder /var/mail", "system folder"),
    # the python role's uv link is named uv, so it never replaces another command
    (
        "/usr/local/bin/python3",
        {"under": ["/usr/local"], "basename": "uv"},
        "does not match uv",
        "uv",
    ),
    ("/usr/local/bin/sudo", {"under": ["/usr/local"], "basename": "uv"}, "does not match uv", "uv"),
    # the nfs export and mount point: never the login home or in it
    (HOME, {"not_under": [HOME]}, "it is in /home/tpu", "not in /home/tpu"),
    ("/home/tpu/.ssh", {"not_under": [HOME]}, "it is in /home/tpu", "not in /home/tpu"),
    ("/tmp", {}, "it is a system folder", "system folder"),
    ("/root", {}, "it is a system folder", "system folder"),
    ("/home", {}, "it is a system folder", "system folder"),
    ("/opt", {}, "it is a system folder", "system folder"),
    ("/srv", {}, "it is a system folder", "system folder"),
    ("/mnt", {}, "it is a system folder", "system folder"),
    ("relative/path", {}, "it is not absolute", "absolute"),
    ("~/venv", {}, "it is not absolute", "absolute"),
    ("/opt/../etc", {}, "it contains '..'", "absolute"),
    ("/opt/x/..", {}, "it contains '..'", "absolute"),
    ("/opt//x", {}, "not normalised (write /opt/x)", "normalised"),
    ("/opt/x/", {}, "not normalised (write /opt/x)", "normalised"),
    ("/opt/./x", {}, "not normalised (write /opt/x)", "normalised"),
    ("/opt/my venv", {}, "spaces or control characters", "without spaces"),
    ("/opt/x\n", {}, "spaces or control characters", "without spaces"),
    ("", {}, "not a path", "absolute"),
    (None, {}, "not a path", "absolute"),
    (42, {}, "not a path", "absolute"),
    (["/opt/x"], {}, "not a path", "absolute"),
    # per-variable rules: a lock file directly in /tmp
    ("/etc/passwd", {"parent": ["/tmp"]}, "in the system folder /etc", "directly in /tmp"),
    ("/var/tmp/lock", {"parent": ["/tmp"]}, "not directly in /tmp", "directly in /tmp"),
    ("/tmp/a/lock", {"parent": "/tmp"}, "not directly in /tmp", "directly in /tmp"),
    # a venv under the login home or /opt
    ("/srv/venv", {"under": [HOME, "/opt"]}, "not inside /home/tpu or /opt", "inside /home/tpu"),
    (HOME, {"under": [HOME, "/opt"]}, "not inside /home/tpu or /opt", "inside /home/tpu or /opt"),
    ("/home/tpux/venv", {"under": [HOME]}, "not inside /home/tpu", "inside /home/tpu"),
    ("/root/.venv", {"under": [HOME, "/opt"]}, "not inside", "inside /home/tpu or /opt"),
    # libtpu's lock file names
    (
        "/tmp/ssh-agent.sock",
        {"parent": ["/tmp"], "basename": "libtpu[a-z._]*lockfile"},
        "its last part ssh-agent.sock does not match libtpu[a-z._]*lockfile",
        "whose last part matches libtpu[a-z._]*lockfile directly in /tmp",
    ),
    (
        "/tmp/libtpu_lockfile.bak",
        {"basename": "libtpu[a-z._]*lockfile"},
        "does not match",
        "whose last part matches",
    ),
    # a mount point not in /home
    ("/home/tpu/data", {"not_under": ["/home"]}, "it is in /home", "not in /home"),
]

PATH_ACCEPTED = [
    ("/opt/venv", {}),
    ("/mnt/shared", {}),
    ("/srv/nfs/pod", {}),
    ("/data", {}),
    ("/var/lib/tpu", {}),
    ("/usr/local/venv", {}),
    ("/home/tpu/.venv310", {}),
    ("/root/.venv310", {}),
    ("/tmp/libtpu_lockfile", {"parent": ["/tmp"]}),
    ("/tmp/tpu_logs", {"parent": "/tmp"}),
    ("/tmp/libtpu.so_lockfile", {"parent": "/tmp", "basename": "libtpu[a-z._]*lockfile"}),
    ("/home/tpu/.venv310", {"under": [HOME, "/opt"]}),
    ("/opt/venvs/jax", {"under": [HOME, "/opt"]}),
    ("/mnt/shared", {"not_under": ["/home"]}),
    ("/home/tpux/share", {"not_under": [HOME]}),
    ("/usr/local/bin/uv", {"under": ["/usr/local"], "basename": "uv"}),
    ("/var/runner", {}),
]


@pytest.mark.parametrize(
    ("value", "kwargs", "reason", "allowed"),
    PATH_REFUSED,
    ids=[f"{v!r}-{sorted(k)}" for v, k, _, _ in PATH_REFUSED],
)
def test_path_refused(value: Any, kwargs: dict, reason: str, allowed: str) -> None:
    assert_refusal(
        path_problem(value, "tpu_x_path", **kwargs), "tpu_x_path", value, reason, allowed
    )


@pytest.mark.parametrize(("value", "kwargs"), PATH_ACCEPTED, ids=[v for v, _ in PATH_ACCEPTED])
def test_path_accepted(value: str, kwargs: dict) -> None:
    assert path_problem(value, "tpu_x_path", **kwargs) == ""


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
    (["fe80::%eth0/64"], {}, "a scope id (%)", "CIDR form"),
    (["10.0.0.0/8\n"], {}, "a line break", "CIDR form"),
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
    (["0.0.0.0/1"], {}),  # half the internet is still not the world
    (["0.0.0.0/1", "4000::/3"], {}),  # half of each internet at most
    (["::ffff:10.0.0.0/104"], {}),
    (["0.0.0.0/1", "128.0.0.0/2"], {"allow_world": True}),
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


NUM_REFUSED = [
    (-5, {"minimum": 1}, "out of range", "a whole number of at least 1"),
    ("-5", {"minimum": 1}, "out of range", "at least 1"),
    ("abc", {"minimum": 1}, "not a whole number", "at least 1"),
    ("", {}, "not a whole number", "a whole number"),
    (None, {}, "not a whole number", "a whole number"),
    (True, {"minimum": 0}, "not a whole number", "at least 0"),
    ("1.5", {"minimum": 0}, "not a whole number", "at least 0"),
    (1.5, {"minimum": 0}, "not a whole number", "at least 0"),
    ("1e3", {"integer": False}, "not a number", "a number"),
    (7200, {"minimum": 0, "maximum": 3600}, "out of range", "a whole number from 0 to 3600"),
    ("0", {"minimum": 0.05, "integer": False}, "out of range", "a number of at least 0.05"),
    ("nan", {"integer": False}, "not a number", "a number"),
    (101, {"maximum": 100}, "out of range", "a whole number of at most 100"),
    (float("nan"), {"integer": False}, "not a finite number", "a number"),
    (float("nan"), {"minimum": 1}, "not a finite number", "a whole number of at least 1"),
    (float("inf"), {"integer": False, "minimum": 0}, "not a finite number", "at least 0"),
    (float("-inf"), {"integer": False, "maximum": 60}, "not a finite number", "at most 60"),
    ("inf", {"integer": False}, "not a number", "a number"),
    ("-Infinity", {"integer": False}, "not a number", "a number"),
    ([3], {}, "not a whole number", "a whole number"),
]


@pytest.mark.parametrize(
    ("value", "kwargs", "reason", "allowed"),
    NUM_REFUSED,
    ids=[f"{v!r}-{k}" for v, k, _, _ in NUM_REFUSED],
)
def test_number_refused(value: Any, kwargs: dict, reason: str, allowed: str) -> None:
    assert_refusal(number_problem(value, "tpu_x_n", **kwargs), "tpu_x_n", value, reason, allowed)


NUM_ACCEPTED = [
    (5, {"minimum": 1}),
    ("5", {"minimum": 1}),
    (" 30 ", {"minimum": 0, "maximum": 3600}),
    ("+3", {}),
    (0, {"minimum": 0}),
    (2.0, {}),
    ("0.5", {"integer": False, "minimum": 0.05}),
    (".5", {"integer": False}),
    (10, {"integer": False}),
]


@pytest.mark.parametrize(("value", "kwargs"), NUM_ACCEPTED, ids=[repr(v) for v, _ in NUM_ACCEPTED])
def test_number_accepted(value: Any, kwargs: dict) -> None:
    assert number_problem(value, "tpu_x_n", **kwargs) == ""


# tpu-unlock --kill ends the holders of what the glob matches: /dev/* once ended sshd and journald.
GLOB_REFUSED = [
    ("/dev/*", "not a TPU device pattern"),
    ("/dev/fuse", "not a TPU device pattern"),
    ("/dev/input/*", "not a TPU device pattern"),
    ("/dev/vfio/*", "not a TPU device pattern"),  # /dev/vfio/vfio is every VFIO user's
    ("/dev/vfio/vfio", "not a TPU device pattern"),
    ("/dev/accel[a-z]*", "not a TPU device pattern"),
    ("/dev/accel*/../null", "not a TPU device pattern"),
    ("/dev/accel/", "not a TPU device pattern"),
    ("/tmp/accel*", "not a TPU device pattern"),
    ("accel*", "not a TPU device pattern"),
    ("/dev/accel*\n", "not a TPU device pattern"),
    ("", "not a glob pattern"),
    (["/dev/accel*"], "not a glob pattern"),
]
GLOB_ACCEPTED = ["/dev/accel*", "/dev/accel[0-9]*", "/dev/accel0", "/dev/accel/*"]
GLOB_ACCEPTED += ["/dev/accel/accel[0-9]*", "/dev/vfio/[0-9]*", "/dev/vfio/0"]


@pytest.mark.parametrize(("value", "reason"), GLOB_REFUSED, ids=[repr(v) for v, _ in GLOB_REFUSED])
def test_device_glob_refused(value: Any, reason: str) -> None:
    message = device_glob_problem(value, "tpu_x_glob")
    assert_refusal(message, "tpu_x_glob", value, reason, "/dev/accel* (or")
    assert "/dev/vfio/[0-9]* from v5e/v5p on" in message


@pytest.mark.parametrize("value", GLOB_ACCEPTED)
def test_device_glob_accepted(value: str) -> None:
    assert device_glob_problem(value, "tpu_x_glob") == ""


# The module options that reached the API before: timeout -5, poll interval 'abc' (0.0 after
# a playbook's | float), retries -3.
OPTIONS_REFUSED = [
    ({"timeout": -5}, "timeout", "a whole number from 1 to 604800"),
    ({"timeout": 0}, "timeout", "from 1"),
    ({"poll_interval": "abc"}, "poll_interval", "a number from 0.05 to 3600"),
    ({"poll_interval": 0.0}, "poll_interval", "from 0.05"),
    ({"retries": -3}, "retries", "a whole number from 1 to 100"),
    ({"retries": 0}, "retries", "from 1"),
    ({"retry_max_sleep": -1.0}, "retry_max_sleep", "from 0 to 600"),
    ({"request_timeout": 0}, "request_timeout", "from 1 to 3600"),
    ({"page_size": 0}, "page_size", "from 1 to 1000"),
    ({"poll_interval": float("nan")}, "poll_interval", "a number from 0.05 to 3600"),
    ({"timeout": float("inf")}, "timeout", "a whole number from 1 to 604800"),
    ({"retry_max_sleep": float("inf")}, "retry_max_sleep", "from 0 to 600"),
    ({"request_timeout": float("-inf")}, "request_timeout", "from 1 to 3600"),
]


@pytest.mark.parametrize(
    ("options", "key", "allowed"),
    OPTIONS_REFUSED,
    ids=[json.dumps(o) for o, _, _ in OPTIONS_REFUSED],
)
def test_option_limits(options: dict, key: str, allowed: str) -> None:
    problems = option_problems(options)
    assert len(problems) == 1, problems
    assert_refusal(problems[0], key, options[key], "", allowed)


def test_option_defaults_pass() -> None:
    defaults = {
        "timeout": 1800,
        "poll_interval": 10.0,
        "retries": 5,
        "retry_max_sleep": 16.0,
        "request_timeout": 60.0,
        "page_size": 100,
        "retry_backoff": 1.0,
        "requeue_tries": 0,
        "name": "anything else is not looked at",
    }
    assert option_problems(defaults) == []
    assert option_problems({"timeout": None}) == [], "an option left unset is not checked"
    assert set(OPTION_LIMITS) <= set(defaults)


def test_filters_are_the_checks() -> None:
    filters = FilterModule().filters()
    assert filters == {
        "path_problem": path_problem,
        "network_problem": network_problem,
        "address_problem": address_problem,
        "number_problem": number_problem,
        "device_glob_problem": device_glob_problem,
        "gcp_name_problem": gcp_name_problem,
    }


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
