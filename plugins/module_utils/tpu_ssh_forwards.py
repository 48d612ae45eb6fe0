# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Port forwards to the coordinator (worker 0) of a pod, as playbooks/ssh_config.yml writes them.

A forward is a known service name (SERVICES: the port its server listens on, the same on both
ends) or a mapping ``{local: PORT, remote: PORT, host: HOST}``: ``127.0.0.1:local`` on the
user's machine reaches ``host:remote`` as seen from the worker (host ``localhost`` when not
given). Decided here once: the service table, what is accepted, and the ssh_config lines.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _number, _shown
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import url_host

# The port each service's server listens on by default on the TPU VM.
SERVICES = {"jupyter": 8888, "tensorboard": 6006, "profiler": 9012}
DEFAULT_HOST = "localhost"
# Where the local end listens: the loopback address only, so that no other machine can use the
# tunnel into the pod.
BIND_ADDRESS = "127.0.0.1"
KEYS = ("local", "remote", "host")
# A DNS name or single label: letters, digits, '-', '_' and '.'; nothing ssh_config would split.
_HOST_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})")

ALLOWED = (
    "a list whose items are each a service name ("
    + ", ".join(f"{name} = port {port}" for name, port in SERVICES.items())
    + ") or a mapping {local: PORT, remote: PORT, host: HOST} (ports whole numbers from 1 to"
    " 65535, no local port twice; host a host name or IP address without spaces, default"
    " localhost)"
)


class ForwardError(ValueError):
    """A forward that cannot be written; the message names the variable and the value."""


def _port(value: Any) -> int | None:
    """The port as a number (an int, or a whole-number string from -e), None when not one."""
    number = _number(value, integer=True)
    return number if number is not None and 1 <= number <= 65535 else None


def _host(value: Any) -> str | None:
    """The host as written, None when it is not one host name or IP address."""
    if not isinstance(value, str):
        return None
    if _HOST_NAME.fullmatch(value):
        return value
    try:
        return str(ipaddress.ip_address(value.strip("[]") if value.startswith("[") else value))
    except ValueError:
        return None


def _one(item: Any, where: str, name: str) -> dict[str, Any]:
    """One forward, as {local, remote, host}; ForwardError when it is not acceptable."""
    if isinstance(item, str):
        if item in SERVICES:
            return {"local": SERVICES[item], "remote": SERVICES[item], "host": DEFAULT_HOST}
        known = ", ".join(SERVICES)
        raise ForwardError(
            f"{name} {where} is {_shown(item)}: not a known service; known services: {known}"
            " (or a mapping {local: PORT, remote: PORT, host: HOST} for any other port)."
        )
    if not isinstance(item, Mapping):
        raise ForwardError(f"{name} {where} is {_shown(item)}: allowed: {ALLOWED}.")
    unknown = [str(key) for key in item if key not in KEYS]
    if unknown:
        raise ForwardError(
            f"{name} {where} is {_shown(item)}: unknown key(s) {', '.join(unknown)};"
            f" allowed keys: {', '.join(KEYS)}."
        )
    found: dict[str, Any] = {}
    for key in ("local", "remote"):
        if key not in item:
            raise ForwardError(
                f"{name} {where} is {_shown(item)}: it has no {key} port; allowed: {ALLOWED}."
            )
        port = _port(item[key])
        if port is None:
            raise ForwardError(
                f"{name} {where} is {_shown(item)}: its {key} port {_shown(item[key])} is not"
                " a whole number from 1 to 65535."
            )
        found[key] = port
    host = _host(item.get("host", DEFAULT_HOST))
    if host is None:
        raise ForwardError(
            f"{name} {where} is {_shown(item)}: its host {_shown(item.get('host'))} is not one"
            " host name or IP address (letters, digits, '.', '-', '_', or an IPv4 or IPv6"
            " address; no spaces)."
        )
    found["host"] = host
    return found


def parse_forwards(value: Any, name: str = "tpu_ssh_config_forwards") -> list[dict[str, Any]]:
    """The forwards as ``[{local, remote, host}]`` (None or '' for none); ForwardError with one
    sentence naming ``name``, the value and what is allowed when they cannot be written."""
    if value is None or value == "":
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise ForwardError(f"{name} is {_shown(value)}: not a list; allowed: {ALLOWED}.")
    forwards = [_one(item, f"item {index + 1}", name) for index, item in enumerate(value)]
    seen: dict[int, int] = {}
    for index, forward in enumerate(forwards):
        if forward["local"] in seen:
            raise ForwardError(
                f"{name} is {_shown(value)}: local port {forward['local']} is forwarded twice"
                f" (items {seen[forward['local']] + 1} and {index + 1}); each local port can be"
                " used once."
            )
        seen[forward["local"]] = index
    return forwards


def forwards_problem(value: Any, name: str = "tpu_ssh_config_forwards") -> str:
    """Why the forwards cannot be written (``''`` when they can), see parse_forwards."""
    try:
        parse_forwards(value, name)
    except ForwardError as exc:
        return str(exc)
    return ""


def forward_lines(value: Any, name: str = "tpu_ssh_config_forwards") -> list[str]:
    """The ssh_config options of worker 0's Host entry for the forwards (none for none): one
    ``LocalForward 127.0.0.1:LOCAL HOST:REMOTE`` each, then ``ExitOnForwardFailure yes``.
    ForwardError when they cannot be written."""
    forwards = parse_forwards(value, name)
    lines = [
        f"LocalForward {BIND_ADDRESS}:{f['local']} {url_host(f['host'])}:{f['remote']}"
        for f in forwards
    ]
    return [*lines, "ExitOnForwardFailure yes"] if lines else []
