# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The options every module that talks to the TPU API accepts (:func:`auth_argument_spec`), and
the defaults behind them: the API root, its environment override, the OAuth scope and the auth
kinds; and :func:`base_url_problem`, the rule for where the client may send its bearer token.

The tpu_api doc fragment (``plugins/doc_fragments/tpu_api.py``) documents the same options.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any
from urllib.parse import urlsplit

from ansible.module_utils.basic import env_fallback

DEFAULT_BASE_URL = "https://tpu.googleapis.com/v2"
ENDPOINT_ENV = "CLOUDTPU_API_ENDPOINT"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_SCOPES = [CLOUD_PLATFORM_SCOPE]
AUTH_KINDS = ["application", "serviceaccount", "machineaccount", "accesstoken"]
BASE_URL_NAME = f"base_url (env {ENDPOINT_ENV})"
BASE_URL_ALLOWED = (
    f"an https:// URL of the API root such as {DEFAULT_BASE_URL}, or http:// to this machine"
    " only (127.0.0.1, ::1 or localhost, as the local emulator)"
)
# The host part of a URL the client takes: a name or address and a port, nothing else (no user
# or password, no backslash or space that two URL parsers could read in two ways).
_NETLOC = re.compile(r"(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


def _loopback(host: str) -> bool:
    """True when ``host`` is this machine: localhost, 127.0.0.0/8 or ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def base_url_problem(value: Any, name: str = BASE_URL_NAME) -> str:
    """Why the client must not send its bearer token to the API root ``value``; ``''`` when it
    may: https to any host, plain http only to this machine (the local emulator). ``name`` is
    the option or variable the message names."""
    shown = json.dumps(value) if isinstance(value, str) else repr(value)

    def problem(reason: str) -> str:
        return f"{name} is {shown}: {reason}; allowed: {BASE_URL_ALLOWED}."

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
    if parts.scheme == "http" and not _loopback(host):
        return problem(
            f"plain http to {host}, not a loopback address of this machine, would send the "
            "access token over the network unencrypted"
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
        "retries": {"type": "int", "default": 5},
        "retry_max_sleep": {"type": "float", "default": 16.0},
        "request_timeout": {"type": "float", "default": 60.0},
    }
