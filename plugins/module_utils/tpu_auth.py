# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Google credentials for the TPU API client, from the auth options every TPU module and the
tpu_vm inventory accept (``auth_kind``, ``service_account_file``, ...; see
``auth_argument_spec()`` in ``tpu_api.py``).

The auth kinds and option names are those of the google.cloud collection, so one set of
``GCP_*`` environment variables serves both; the credentials come straight from google-auth.
Every problem with the options raises :class:`AuthConfigError` with a message that names the
option, the value and what to do.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

try:
    import google.auth
    import google.auth.compute_engine
    from google.auth.transport.requests import AuthorizedSession
    from google.oauth2 import credentials as oauth2_credentials
    from google.oauth2 import service_account

    HAS_GOOGLE_AUTH = True
except ImportError:  # pragma: no cover - exercised only without google-auth installed
    HAS_GOOGLE_AUTH = False


class AuthConfigError(Exception):
    """The auth options cannot give credentials; the message says which option and why."""


# Options that only make sense with one auth kind: (option, the kind it belongs to).
_KIND_OF_OPTION = (
    ("service_account_email", "machineaccount"),
    ("service_account_file", "serviceaccount"),
    ("service_account_contents", "serviceaccount"),
    ("access_token", "accesstoken"),
)

_ENV_OF_OPTION = {
    "service_account_email": "GCP_SERVICE_ACCOUNT_EMAIL",
    "service_account_file": "GCP_SERVICE_ACCOUNT_FILE",
    "service_account_contents": "GCP_SERVICE_ACCOUNT_CONTENTS",
    "access_token": "GCP_ACCESS_TOKEN",
}


def check_options(params: Mapping[str, Any]) -> None:
    """Refuse options that belong to another auth kind (often a leftover environment variable)."""
    kind = params.get("auth_kind") or "application"
    for option, owner in _KIND_OF_OPTION:
        if params.get(option) is not None and kind != owner:
            raise AuthConfigError(
                f"{option} is set but auth_kind is {kind!r}; {option} only works with "
                f"auth_kind {owner!r}. Set auth_kind (GCP_AUTH_KIND) to {owner!r}, or unset "
                f"{option} (and the {_ENV_OF_OPTION[option]} environment variable)."
            )


def _service_account_info(params: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """(key JSON, where it came from) for auth_kind serviceaccount."""
    path = params.get("service_account_file")
    contents = params.get("service_account_contents")
    if path is not None:
        where = f"service_account_file {path!r}"
        real = os.path.realpath(os.path.expanduser(str(path)))
        try:
            with open(real, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise AuthConfigError(
                f"cannot read {where}: {exc.strerror}. Point service_account_file "
                "(GCP_SERVICE_ACCOUNT_FILE) at the JSON key of a service account."
            ) from None
    elif contents is not None:
        where, text = "service_account_contents", contents
    else:
        raise AuthConfigError(
            "auth_kind 'serviceaccount' needs service_account_file (GCP_SERVICE_ACCOUNT_FILE) or "
            "service_account_contents (GCP_SERVICE_ACCOUNT_CONTENTS)."
        )
    if isinstance(text, Mapping):
        return dict(text), where
    try:
        info = json.loads(text)
    except ValueError as exc:
        raise AuthConfigError(
            f"{where} is not JSON ({exc}); it must be a service account key as downloaded "
            "from the Google Cloud console."
        ) from None
    if not isinstance(info, dict):
        raise AuthConfigError(f"{where} must hold a JSON object (a service account key).")
    return info, where


def credentials(params: Mapping[str, Any]) -> Any:
    """google-auth credentials for the options in ``params``."""
    check_options(params)
    kind = params.get("auth_kind") or "application"
    scopes = list(params.get("scopes") or [])
    if kind == "application":
        return google.auth.default(scopes=scopes)[0]
    if kind == "serviceaccount":
        info, where = _service_account_info(params)
        try:
            creds = service_account.Credentials.from_service_account_info(info)
        except ValueError as exc:
            raise AuthConfigError(
                f"{where} is not a usable service account key: {exc}. Download a new JSON key "
                "of the service account."
            ) from None
        return creds.with_scopes(scopes)
    if kind == "machineaccount":
        email = params.get("service_account_email") or "default"
        return google.auth.compute_engine.Credentials(email)
    if kind == "accesstoken":
        token = params.get("access_token")
        if not token:
            raise AuthConfigError(
                "auth_kind 'accesstoken' needs access_token (GCP_ACCESS_TOKEN), for example from "
                "'gcloud auth print-access-token'."
            )
        return oauth2_credentials.Credentials(token, scopes=scopes)
    raise AuthConfigError(
        f"auth_kind {kind!r} is not one of application, serviceaccount, machineaccount, "
        "accesstoken."
    )


def authorized_session(params: Mapping[str, Any]) -> Any:
    """A requests session that adds the credentials of ``params`` to every call."""
    return AuthorizedSession(credentials(params))
