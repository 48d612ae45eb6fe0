# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Errors of the TPU API client: :class:`TpuApiError`, and :func:`error_from_response`, which
reads a Google error answer (HTTP status, ``google.rpc.ErrorInfo``) and says what to do about it:
fix the credentials, enable the API, grant a role, fix a zone or the base URL, or retry later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_options import (
    DEFAULT_BASE_URL,
    ENDPOINT_ENV,
)

# Which predefined roles grant a permission; used in "permission missing" errors.
_READ_ROLES = ["roles/tpu.viewer", "roles/tpu.admin"]
_WRITE_ROLES = ["roles/tpu.admin"]
PERMISSION_ROLES: dict[str, list[str]] = {
    "tpu.locations.list": _READ_ROLES,
    "tpu.nodes.list": _READ_ROLES,
    "tpu.nodes.get": _READ_ROLES,
    "tpu.operations.get": _READ_ROLES,
    "tpu.queuedResources.list": _READ_ROLES,
    "tpu.queuedResources.get": _READ_ROLES,
    "tpu.nodes.create": _WRITE_ROLES,
    "tpu.nodes.delete": _WRITE_ROLES,
    "tpu.nodes.start": _WRITE_ROLES,
    "tpu.nodes.stop": _WRITE_ROLES,
    "tpu.nodes.update": _WRITE_ROLES,
    "tpu.queuedResources.create": _WRITE_ROLES,
    "tpu.queuedResources.delete": _WRITE_ROLES,
}


class TpuApiError(Exception):
    """An error from the TPU API (or from reaching it) with a message that says what to do.

    ``status`` is the HTTP status (None when no answer came back), ``reason`` a short machine
    word (``SERVICE_DISABLED``, ``IAM_PERMISSION_DENIED``, ``UNKNOWN_ZONE``, ``NOT_FOUND``,
    ``UNAUTHENTICATED``, ``UNAVAILABLE``, ``TIMEOUT``, ...), ``message`` the human text and
    ``api_message`` the API's own text when there was one.
    """

    def __init__(
        self,
        message: str,
        status: int | None = None,
        reason: str = "ERROR",
        api_message: str = "",
        url: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.api_message = api_message
        self.url = url

    @property
    def not_found(self) -> bool:
        return self.status == 404 and self.reason == "NOT_FOUND"

    def __str__(self) -> str:
        return self.message


def _error_details(body: Any) -> tuple[str, str, dict[str, Any]]:
    """(status word, api message, ErrorInfo dict) from a Google error JSON body."""
    if not isinstance(body, Mapping):
        return "", "", {}
    error = body.get("error")
    if not isinstance(error, Mapping):
        return "", "", {}
    info: dict[str, Any] = {}
    for detail in error.get("details") or []:
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith(
            "google.rpc.ErrorInfo"
        ):
            info = dict(detail)
            break
    return str(error.get("status") or ""), str(error.get("message") or ""), info


_UNKNOWN_LOCATION_RE = re.compile(
    r"\b(location|zone)s?\b[^.]*\b(not found|unknown|does not exist|is not valid|is invalid)\b"
)


def _says_unknown_location(text: str) -> bool:
    """True when an API message says a location or zone does not exist.

    Resource paths (``projects/p/locations/z/nodes/n``) are ignored, so "node ... not found"
    does not count, and neither does "type X is not supported in zone Z".
    """
    words = re.sub(r"\S*/\S*", " ", text.lower())
    return _UNKNOWN_LOCATION_RE.search(words) is not None


def error_from_response(
    status: int,
    body: Any,
    project: str = "",
    zone: str = "",
    permission: str = "",
    resource: str = "",
    url: str = "",
    attempts: int = 1,
) -> TpuApiError:
    """Build the TpuApiError for an HTTP error answer (a pure function, easy to test).

    ``permission`` is the IAM permission the call needs (for example ``tpu.nodes.list``) and
    ``resource`` what the call addresses (``node pod-a``) when it addresses one thing.
    """
    status_word, api_message, info = _error_details(body)
    if not api_message and isinstance(body, str):
        api_message = body.strip()[:300]
    reason = str(info.get("reason") or status_word or f"HTTP_{status}")
    meta = info.get("metadata") if isinstance(info.get("metadata"), Mapping) else {}
    where = f"project {project}" if project else "this project"
    said = f" (API said: {api_message})" if api_message else ""

    def build(message: str, reason_word: str = reason) -> TpuApiError:
        return TpuApiError(
            message, status=status, reason=reason_word, api_message=api_message, url=url
        )

    if status == 401:
        return build(
            f"The TPU API rejected the credentials (401 UNAUTHENTICATED){said}. Check auth_kind "
            "and its credential: for application, run 'gcloud auth application-default login' or "
            "set GOOGLE_APPLICATION_CREDENTIALS; for serviceaccount, check the key file; for "
            "accesstoken, the token may have expired ('gcloud auth print-access-token' gives a "
            "new one).",
            "UNAUTHENTICATED",
        )
    if status == 403:
        disabled = reason in ("SERVICE_DISABLED", "API_DISABLED") or any(
            marker in api_message.lower()
            for marker in (
                "has not been used",
                "is disabled",
                "api not enabled",
                "not been enabled",
            )
        )
        if disabled:
            target = project or str(meta.get("consumer", "")).replace("projects/", "") or "PROJECT"
            return build(
                f"The Cloud TPU API (tpu.googleapis.com) is not enabled in project {target}. "
                f"Enable it with 'gcloud services enable tpu.googleapis.com --project {target}', "
                f"wait a minute, then retry{said}.",
                "SERVICE_DISABLED",
            )
        needed = str(meta.get("permission") or permission or "")
        roles = PERMISSION_ROLES.get(needed, _WRITE_ROLES if needed else _READ_ROLES)
        perm_text = f"permission {needed}" if needed else "a TPU permission"
        return build(
            "Permission denied by the TPU API in {}: the caller lacks {}. Grant it a role that "
            "includes it ({}), for example 'gcloud projects add-iam-policy-binding {} "
            "--member=<principal> --role={}', or check that the project id is right{}.".format(
                where, perm_text, " or ".join(roles), project or "PROJECT", roles[0], said
            ),
            "IAM_PERMISSION_DENIED",
        )
    unknown_location = _says_unknown_location(api_message)
    if zone and ((status == 404 and not resource) or (status in (400, 404) and unknown_location)):
        return build(
            "Zone {} is unknown to the TPU API in {}, or TPUs are not offered there{}. List the "
            "zones with 'gcloud compute tpus locations list --project {}' and fix the zones "
            "option.".format(zone, where, said, project or "PROJECT"),
            "UNKNOWN_ZONE",
        )
    if status == 404 and not resource:
        return build(
            f"The TPU API answered 404 for {url or 'a list call'}{said}. Check that the base_url "
            f"option (env {ENDPOINT_ENV}) is the v2 API root, such as {DEFAULT_BASE_URL}.",
            "ENDPOINT_NOT_FOUND",
        )
    if status == 404:
        place = f" in {where}, zone {zone}" if zone else ""
        return build(f"{_sentence(resource)} was not found{place}{said}.", "NOT_FOUND")
    if status == 409:
        return build(
            f"{_sentence(resource or 'the resource')} already exists{said}.",
            "ALREADY_EXISTS",
        )
    if status == 429 or status >= 500:
        return build(
            f"The TPU API kept answering {status} after {attempts} attempt(s){said}. It is "
            "overloaded or failing; retry later, or raise the retries option.",
            reason,
        )
    about = f" for {resource}" if resource else ""
    return build(f"The TPU API refused the request{about} with {status} {reason}{said}.", reason)


def _sentence(text: str) -> str:
    """``text`` with its first letter in upper case (the rest untouched, unlike capitalize)."""
    return text[:1].upper() + text[1:]
