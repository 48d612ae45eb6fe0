"""The value checks (module_utils/tpu_checks.py) and their filters, on tables.

Every refusal is asserted to name the variable, to show the value as given and to say what is
allowed; every accepted case to return exactly ''.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    OPTION_LIMITS,
    boolean_problem,
    device_glob_problem,
    number_problem,
    option_problems,
    path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_name_checks import (
    gcp_name_problem,
    name_list,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import (
    address_problem,
    network_problem,
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
    ("/opt/my venv", {}, "it contains spaces", "without spaces"),
    ("/opt/x\u00a0y", {}, "it contains spaces", "without spaces"),
    ("/opt/x\n", {}, "a control character (U+000A, a line break)", "or control characters"),
    ("/opt/x\r", {}, "a control character (U+000D)", "or control characters"),
    ("/opt/x\x1b[2J", {}, "a control character (U+001B)", "without spaces"),
    ("/opt/x\x00", {}, "a control character (U+0000)", "without spaces"),
    ("/opt/x\x85", {}, "a control character (U+0085)", "without spaces"),
    # bidirectional-text controls show the path in another order than it has
    ("/opt/\u202egpj.exe", {}, "a bidirectional-text control character (U+202E)", "absolute"),
    ("/opt/a\u202ab", {}, "bidirectional-text control character (U+202A)", "absolute"),
    ("/opt/a\u2066b\u2069", {}, "bidirectional-text control character (U+2066)", "absolute"),
    ("/opt/a\u2069", {}, "bidirectional-text control character (U+2069)", "absolute"),
    ("/opt/a\u200fb", {}, "bidirectional-text control character (U+200F)", "absolute"),
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


# Python converts at most 4300 digits: 5000 of them once raised ValueError out of the check.
@pytest.mark.parametrize(
    ("value", "kwargs", "allowed"),
    [
        ("9" * 5000, {"minimum": 1, "maximum": 100}, "a whole number from 1 to 100"),
        ("1" * 5000, {}, "a whole number"),
        (" " + "7" * 65, {"integer": False}, "a number"),
        ("0." + "5" * 5000, {"integer": False, "maximum": 1}, "a number of at most 1"),
    ],
    ids=["5000-digits", "5000-digits-no-bounds", "65-digits", "5000-decimals"],
)
def test_number_of_any_length_is_refused_by_name(value: str, kwargs: dict, allowed: str) -> None:
    message = number_problem(value, "tpu_x_n", **kwargs)
    shown = json.dumps(value) if len(value) <= 100 else f'..." ({len(value)} characters)'
    assert message.startswith('tpu_x_n is "') and f"{shown}: " in message, message
    assert f": {len(value.strip())} characters, too long for a number;" in message, message
    assert message.endswith(f"; allowed: {allowed}."), message
    assert len(message) < 300, "the value is shown shortened"


def test_huge_numbers_and_values_are_shown_shortened() -> None:
    huge = 10**5000  # more digits than Python writes out (str() raises)
    message = number_problem(huge, "tpu_x_n", maximum=100)
    assert message == (
        "tpu_x_n is a whole number of about 5001 digits: out of range; "
        "allowed: a whole number of at most 100."
    )
    assert number_problem([huge], "tpu_x_n") == (
        "tpu_x_n is a list too large to show: not a whole number; allowed: a whole number."
    )
    message = path_problem("/" + "a" * 5000, "tpu_x_path", under=["/opt"])
    assert message.startswith(f'tpu_x_path is "/{"a" * 59}..." (5001 characters): '), message
    assert len(message) < 400, message


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
    """One filter file per check, named after it."""
    filters = {}
    for name in (
        "boolean_problem",
        "path_problem",
        "network_problem",
        "address_problem",
        "number_problem",
        "device_glob_problem",
        "gcp_name_problem",
        "name_list",
    ):
        module = importlib.import_module(f"ansible_collections.cloudtpu.pod.plugins.filter.{name}")
        filters.update(module.FilterModule().filters())
    assert filters == {
        "boolean_problem": boolean_problem,
        "path_problem": path_problem,
        "network_problem": network_problem,
        "address_problem": address_problem,
        "number_problem": number_problem,
        "device_glob_problem": device_glob_problem,
        "gcp_name_problem": gcp_name_problem,
        "name_list": name_list,
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("pod-a, pod-b,,", ["pod-a", "pod-b"]),
        ("", []),
        (" pod-a ", ["pod-a"]),
        (["pod-a", " b "], ["pod-a", " b "]),  # a list as given: its checks see every item
        ({"pod-a": 1}, {"pod-a": 1}),  # not a list: as given, for the check to refuse
        (None, None),
    ],
)
def test_a_name_list_from_a_list_or_a_comma_separated_string(value, expected) -> None:
    assert name_list(value) == expected
