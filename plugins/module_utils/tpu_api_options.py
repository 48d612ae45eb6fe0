# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The options every module that talks to the TPU API accepts (:func:`auth_argument_spec`), and
the defaults behind them: the API root, its environment override, the OAuth scope and the auth
kinds.

The tpu_api doc fragment (``plugins/doc_fragments/tpu_api.py``) documents the same options.
"""

from __future__ import annotations

from typing import Any

from ansible.module_utils.basic import env_fallback

DEFAULT_BASE_URL = "https://tpu.googleapis.com/v2"
ENDPOINT_ENV = "CLOUDTPU_API_ENDPOINT"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_SCOPES = [CLOUD_PLATFORM_SCOPE]
AUTH_KINDS = ["application", "serviceaccount", "machineaccount", "accesstoken"]


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
