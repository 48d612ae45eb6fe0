# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The options every module that talks to the TPU API accepts (:func:`auth_argument_spec`), and
the defaults behind them: the API root, its environment override, the OAuth scope and the auth
kinds; and :func:`base_url_problem`, the rule for where the client may send its bearer token,
with its one exception asked for by name: the hosts that may be reached over plain http
(:func:`parse_http_hosts`, option ``http_hosts``, env ``CLOUDTPU_API_HTTP_HOSTS``;
:func:`plain_http_allowed`, which pull mode's repository URL follows too).

The tpu_api doc fragment (``plugins/doc_fragments/tpu_api.py``) documents the same options.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any
from urllib.parse import urlsplit

from ansible.module_utils.basic import env_fallback
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown

DEFAULT_BASE_URL = "https://tpu.googleapis.com/v2"
ENDPOINT_ENV = "CLOUDTPU_API_ENDPOINT"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_SCOPES = [CLOUD_PLATFORM_SCOPE]
AUTH_KINDS = ["application", "serviceaccount", "machineaccount", "accesstoken"]
BASE_URL_NAME = f"base_url (env {ENDPOINT_ENV})"
HTTP_HOSTS_ENV = "CLOUDTPU_API_HTTP_HOSTS"
HTTP_HOSTS_NAME = f"http_hosts (env {HTTP_HOSTS_ENV})"
BASE_URL_ALLOWED = (
    f"an https:// URL of the API root such as {DEFAULT_BASE_URL}, or http:// to this machine"
    " (127.0.0.1, ::1 or localhost, as the local emulator)"
)
HTTP_HOSTS_ALLOWED = (
    "a list (or a comma-separated string) of host names or addresses, each exactly as the host"
    " of the API URL, such as host.docker.internal or 10.0.0.5; empty (the default) allows none"
)
# The host part of a URL the client takes: a name or address and a port, nothing else (no user
# or password, no backslash or space that two URL parsers could read in two ways).
_NETLOC = re.compile(r"(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
# One host name of http_hosts: dot-separated labels, no wildcard, no trailing dot.
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


def _loopback(host: str) -> bool:
    """True when ``host`` is this machine: localhost, 127.0.0.0/8 or ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_key(host: str) -> str:
    """``host`` as it is compared: an address in its one written form, a name in lower case."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.lower()


def plain_http_allowed(host: str, http_hosts: list[str]) -> bool:
    """The one exception to encryption, for the API and pull mode's repository alike: ``host``
    may be reached over plain http (or git://) when it is a loopback address of the machine
    that connects, or one of ``http_hosts`` (as :func:`parse_http_hosts` returns them), named
    exactly: an address in any of its written forms, a name in any case."""
    return _loopback(host) or _host_key(host) in {_host_key(h) for h in http_hosts}


def _host_entry_problem(entry: str) -> str:
    """Why one entry of http_hosts is not a host name or address; ``''`` when it is."""
    if entry == "":
        return "an entry is empty"
    if "*" in entry or "?" in entry:
        return f"{_shown(entry)} is a pattern; name each host that may be reached over plain http"
    if "/" in entry or "@" in entry:
        return f"{_shown(entry)} is a URL or an address range, not a host; write each host alone"
    try:
        ipaddress.ip_address(entry)
        return ""
    except ValueError:
        pass
    if ":" in entry or "[" in entry:
        return f"{_shown(entry)} has a port or brackets; write the host alone"
    if len(entry) > 253 or not _HOST_NAME.fullmatch(entry):
        return f"{_shown(entry)} is not a host name or address"
    return ""


def parse_http_hosts(value: Any, name: str = HTTP_HOSTS_NAME) -> tuple[list[str], str]:
    """The hosts that may be reached over plain http (``value``: a list, or a comma-separated
    string as from the environment; None or empty for none), and why ``value`` is refused
    (``''`` when it is not). ``name`` is the option or variable the message names.

    Each entry is a host name or an address written alone, as in the API URL; spaces around an
    entry are dropped. An empty entry, a wildcard, a URL, a port or anything else is refused,
    since the exception is for the hosts named, and no other."""
    if value is None or value == "" or value == [] or value == ():
        return [], ""
    if isinstance(value, str):
        entries = value.split(",")
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        entries = list(value)
    else:
        reason = "not a list of host names"
        return [], f"{name} is {_shown(value)}: {reason}; allowed: {HTTP_HOSTS_ALLOWED}."
    # an empty variable reaches a list option as [""] (Ansible splits "" into one empty entry)
    if entries == [""]:
        return [], ""
    hosts = [entry.strip(" ") for entry in entries]
    for entry in hosts:
        reason = _host_entry_problem(entry)
        if reason:
            return [], f"{name} is {_shown(value)}: {reason}; allowed: {HTTP_HOSTS_ALLOWED}."
    return hosts, ""


def http_hosts_problem(value: Any, name: str = HTTP_HOSTS_NAME) -> str:
    """Why ``value`` is not a list of hosts that may be reached over plain http; ``''`` if ok."""
    return parse_http_hosts(value, name)[1]


def base_url_problem(
    value: Any,
    name: str = BASE_URL_NAME,
    http_hosts: Any = None,
    http_hosts_name: str = HTTP_HOSTS_NAME,
) -> str:
    """Why the client must not send its bearer token to the API root ``value``; ``''`` when it
    may: https to any host, plain http to this machine (the local emulator) or to a host named
    in ``http_hosts`` (see :func:`parse_http_hosts`), the exception asked for by name in the
    option or variable ``http_hosts_name``. ``name`` is the option or variable of ``value``;
    a refused ``http_hosts`` is the problem too."""
    shown = json.dumps(value) if isinstance(value, str) else repr(value)
    allowed_hosts, hosts_problem = parse_http_hosts(http_hosts, http_hosts_name)
    if hosts_problem:
        return hosts_problem
    named = ", ".join(allowed_hosts) if allowed_hosts else "none"
    allowed = f"{BASE_URL_ALLOWED} or to a host named in {http_hosts_name} (now {named})"

    def problem(reason: str, hint: str = "") -> str:
        return f"{name} is {shown}: {reason}; allowed: {allowed}.{hint}"

    if not isinstance(value, str) or not value:
        return problem("not a URL")
    if re.search(r"[\s\\\x00-\x1f\x7f]", value):
        return problem("it contains a space, a backslash or a control character")
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or 0 < parts.port
    except ValueError as exc:
        return problem(f"not a URL ({exc})")
    if "@" in parts.netloc:
        shown = json.dumps(value.replace(parts.netloc, "***@" + parts.netloc.rsplit("@", 1)[1]))
        return problem("it holds a user name or password (not shown)")
    if parts.scheme not in ("https", "http") or not parts.netloc:
        return problem("not an http(s) URL")
    if not _NETLOC.fullmatch(parts.netloc) or not port_ok:
        return problem(f"its host part {parts.netloc} is not a host name or address and a port")
    host = parts.hostname or ""
    if parts.scheme == "http" and not plain_http_allowed(host, allowed_hosts):
        return problem(
            f"plain http to {host}, not a loopback address of this machine, would send the "
            "access token over the network unencrypted",
            f" To allow it on a network you trust, name {host} in {http_hosts_name}.",
        )
    return ""


def auth_argument_spec() -> dict[str, dict[str, Any]]:
    """Argument spec entries every module that talks to the TPU API accepts."""
    return {
        "auth_kind": {
            "type": "str",
            "default": "application",
            "choices": AUTH_KINDS,
            "fallback": (env_fallback, ["GCP_AUTH_KIND"]),
        },
        "service_account_email": {
            "type": "str",
            "fallback": (env_fallback, ["GCP_SERVICE_ACCOUNT_EMAIL"]),
        },
        "service_account_file": {
            "type": "path",
            "fallback": (env_fallback, ["GCP_SERVICE_ACCOUNT_FILE"]),
        },
        "service_account_contents": {
            "type": "jsonarg",
            "no_log": True,
            "fallback": (env_fallback, ["GCP_SERVICE_ACCOUNT_CONTENTS"]),
        },
        "access_token": {
            "type": "str",
            "no_log": True,
            "fallback": (env_fallback, ["GCP_ACCESS_TOKEN"]),
        },
        "scopes": {
            "type": "list",
            "elements": "str",
            "default": list(DEFAULT_SCOPES),
            "fallback": (env_fallback, ["GCP_SCOPES"]),
        },
        "base_url": {"type": "str", "fallback": (env_fallback, [ENDPOINT_ENV])},
        "http_hosts": {
            "type": "list",
            "elements": "str",
            "fallback": (env_fallback, [HTTP_HOSTS_ENV]),
        },
        "retries": {"type": "int", "default": 5},
        "retry_max_sleep": {"type": "float", "default": 16.0},
        "request_timeout": {"type": "float", "default": 60.0},
    }


def project_argument_spec(**options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """auth_argument_spec() with the required ``project`` (env GCP_PROJECT) and a module's own
    ``options``: the spec of a module that reads or changes TPU resources of one project."""
    spec = auth_argument_spec()
    spec["project"] = {"type": "str", "required": True, "fallback": (env_fallback, ["GCP_PROJECT"])}
    spec.update(options)
    return spec


def zone_argument_spec(**options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """project_argument_spec() with the required ``zone``: the options documented by the
    fragments cloudtpu.pod.tpu_api, tpu_api.project and tpu_api.zone, and ``options``."""
    return project_argument_spec(zone={"type": "str", "required": True}, **options)
