# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The one client of the Cloud TPU v2 REST API in this collection.

Authentication comes from ``tpu_auth.py`` (auth kinds ``application``, ``serviceaccount``,
``machineaccount`` and ``accesstoken``, as in the google.cloud collection). The base URL is an
option with an environment fallback (``CLOUDTPU_API_ENDPOINT``) so that the local emulator, a
private endpoint or a proxy can stand in for ``https://tpu.googleapis.com/v2``.

The client follows ``nextPageToken``, retries 429 and 5xx answers with bounded exponential backoff
and jitter, and turns API errors into :class:`TpuApiError` whose message says what to do.

Use from a module::

    client = TpuClient(module)            # module.params holds auth_argument_spec() options

Use from anything else (an inventory plugin, a script)::

    client = TpuClient.from_params({"auth_kind": "accesstoken", "access_token": "t", ...})
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

try:
    from requests.exceptions import RequestException

    HAS_REQUESTS = True
except ImportError:  # pragma: no cover - exercised only without requests installed
    HAS_REQUESTS = False

    class RequestException(Exception):  # type: ignore[no-redef]
        """Stand-in so that except clauses stay valid without requests."""


try:
    from google.auth.exceptions import GoogleAuthError

    HAS_GOOGLE_AUTH = True
except ImportError:  # pragma: no cover - exercised only without google-auth installed
    HAS_GOOGLE_AUTH = False

    class GoogleAuthError(Exception):  # type: ignore[no-redef]
        """Stand-in so that except clauses stay valid without google-auth."""


from ansible.module_utils.basic import env_fallback
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_auth import (
    AuthConfigError,
    authorized_session,
)

DEFAULT_BASE_URL = "https://tpu.googleapis.com/v2"
ENDPOINT_ENV = "CLOUDTPU_API_ENDPOINT"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_SCOPES = [CLOUD_PLATFORM_SCOPE]
AUTH_KINDS = ["application", "serviceaccount", "machineaccount", "accesstoken"]
ALL_ZONES = "-"
USER_AGENT = "cloudtpu.pod-tpu-api"

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


class _ParamsModule:
    """The small part of AnsibleModule that GcpSession uses, for callers that are not modules."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.params = dict(params)

    def fail_json(self, msg: str = "", **kwargs: Any) -> None:
        raise TpuApiError(f"Google authentication setup failed: {msg}", reason="AUTH_CONFIG")


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


def _zone_of(name: str) -> str:
    """Zone id of a resource or location name (``projects/p/locations/z/...`` or ``z``)."""
    parts = name.split("/")
    if "locations" in parts:
        index = parts.index("locations")
        if index + 1 < len(parts):
            return parts[index + 1]
    return parts[-1]


class TpuClient:
    """Client of the Cloud TPU v2 API.

    ``module`` is an AnsibleModule (or any object with ``params`` and ``fail_json``) whose params
    hold the auth options of :func:`auth_argument_spec`. Keyword arguments override the params.
    ``sleep`` and ``rand`` exist so that tests can observe backoff without waiting.
    """

    def __init__(
        self,
        module: Any,
        base_url: str | None = None,
        retries: int | None = None,
        backoff: float = 1.0,
        max_sleep: float | None = None,
        timeout: float | None = None,
        session: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[float, float], float] = random.uniform,
    ) -> None:
        params = getattr(module, "params", {}) or {}
        url = base_url or params.get("base_url") or os.environ.get(ENDPOINT_ENV) or DEFAULT_BASE_URL
        if not url.startswith(("https://", "http://")):
            raise TpuApiError(
                f"base_url {url!r} is not an http(s) URL; use the API root such as "
                f"{DEFAULT_BASE_URL}",
                reason="BAD_BASE_URL",
            )
        self.base_url = url.rstrip("/")
        self.retries = max(1, int(retries if retries is not None else params.get("retries") or 5))
        self.backoff = max(0.0, float(backoff))
        self.max_sleep = float(
            max_sleep if max_sleep is not None else params.get("retry_max_sleep") or 16.0
        )
        self.timeout = float(
            timeout if timeout is not None else params.get("request_timeout") or 60.0
        )
        self._sleep = sleep
        self._rand = rand
        self.request_count = 0
        self.auth_kind = params.get("auth_kind") or "application"
        if session is not None:
            self._http = session
            return
        if not (HAS_REQUESTS and HAS_GOOGLE_AUTH):
            raise TpuApiError(
                "The Python libraries requests and google-auth are required on the controller to "
                "talk to the TPU API; install them into the Python that runs Ansible.",
                reason="MISSING_DEPENDENCY",
            )
        if not params.get("scopes"):
            module.params["scopes"] = list(DEFAULT_SCOPES)
        try:
            self._http = authorized_session(module.params)
        except AuthConfigError as exc:
            raise TpuApiError(
                f"Google authentication setup failed: {exc}", reason="AUTH_CONFIG"
            ) from None
        except GoogleAuthError as exc:
            raise self._auth_error(exc) from None

    @classmethod
    def from_params(cls, params: Mapping[str, Any], **kwargs: Any) -> TpuClient:
        """Build a client from a plain dict of auth_argument_spec() options."""
        full = {key: None for key in auth_argument_spec()}
        full.update(params)
        if not full.get("auth_kind"):
            full["auth_kind"] = "application"
        return cls(_ParamsModule(full), **kwargs)

    # -- plumbing ---------------------------------------------------------------------------

    def _auth_error(self, exc: Exception) -> TpuApiError:
        hints = {
            "application": "run 'gcloud auth application-default login' or set "
            "GOOGLE_APPLICATION_CREDENTIALS to a service account key file",
            "serviceaccount": "check service_account_file or service_account_contents",
            "machineaccount": "this only works on a Google Cloud VM with a service account",
            "accesstoken": "the access token was rejected or has expired; get a new one with "
            "'gcloud auth print-access-token'",
        }
        return TpuApiError(
            f"Could not get Google credentials for the TPU API (auth_kind {self.auth_kind}): "
            f"{str(exc).rstrip('. ')}. To fix it, "
            f"{hints.get(self.auth_kind, 'check the auth options')}.",
            status=401,
            reason="UNAUTHENTICATED",
        )

    def _url(self, path: str) -> str:
        return "{}/{}".format(self.base_url, path.lstrip("/"))

    def backoff_delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based): exponential, jittered, capped."""
        ceiling = min(self.max_sleep, self.backoff * (2 ** (attempt - 1)))
        delay = self._rand(ceiling / 2.0, ceiling)
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        return max(0.0, min(delay, self.max_sleep))

    def request(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
        project: str = "",
        zone: str = "",
        permission: str = "",
        resource: str = "",
    ) -> dict[str, Any]:
        """Send one API call (with retries) and return the decoded JSON answer."""
        url = self._url(path)
        idempotent = method in ("GET", "DELETE")
        response = None
        for attempt in range(1, self.retries + 1):
            self.request_count += 1
            try:
                response = self._http.request(
                    method,
                    url,
                    params=params,
                    json=body,
                    timeout=self.timeout,
                    headers={"User-Agent": USER_AGENT},
                )
            except GoogleAuthError as exc:
                raise self._auth_error(exc) from None
            except RequestException as exc:
                if attempt < self.retries:
                    self._sleep(self.backoff_delay(attempt))
                    continue
                raise TpuApiError(
                    f"Cannot reach the TPU API at {self.base_url} after {attempt} attempt(s): "
                    f"{exc.__class__.__name__}. Check the network, a proxy (HTTPS_PROXY/NO_PROXY) "
                    f"or the base_url option (env {ENDPOINT_ENV}).",
                    reason="UNREACHABLE",
                    url=url,
                ) from None
            status = response.status_code
            transient = status == 429 or status == 503 or (idempotent and status >= 500)
            if transient and attempt < self.retries:
                self._sleep(self.backoff_delay(attempt, response.headers.get("Retry-After")))
                continue
            break
        if response is None:  # only when retries < 1, which __init__ prevents
            raise TpuApiError("No request was sent.", reason="NO_ATTEMPT", url=url)
        if response.status_code >= 400:
            try:
                payload: Any = response.json()
            except ValueError:
                payload = response.text
            raise error_from_response(
                response.status_code,
                payload,
                project=project,
                zone=zone,
                permission=permission,
                resource=resource,
                url=url,
                attempts=attempt,
            )
        if not response.content:
            return {}
        try:
            data = response.json()
        except ValueError:
            raise TpuApiError(
                f"The TPU API at {url} answered {response.status_code} with a body that is not "
                f"JSON; is base_url the API root (for example {DEFAULT_BASE_URL})?",
                status=response.status_code,
                reason="BAD_RESPONSE",
                url=url,
            ) from None
        return data if isinstance(data, dict) else {"value": data}

    def _paged(
        self,
        path: str,
        key: str,
        page_size: int | None,
        **context: str,
    ) -> tuple[list[dict[str, Any]], list[str]]:
        items: list[dict[str, Any]] = []
        unreachable: list[str] = []
        seen = set()
        token = ""
        while True:
            params: dict[str, Any] = {}
            if page_size:
                params["pageSize"] = int(page_size)
            if token:
                params["pageToken"] = token
            data = self.request("GET", path, params=params or None, **context)
            items.extend(data.get(key) or [])
            for location in data.get("unreachable") or []:
                zone = _zone_of(str(location))
                if zone not in unreachable:
                    unreachable.append(zone)
            token = data.get("nextPageToken") or ""
            if not token:
                return items, unreachable
            if token in seen:
                raise TpuApiError(
                    f"The TPU API returned the same page token twice for {path}; stopping "
                    "instead of looping forever.",
                    reason="PAGINATION_LOOP",
                )
            seen.add(token)

    @staticmethod
    def _parent(project: str, zone: str) -> str:
        return "projects/{}/locations/{}".format(quote(project, safe=""), quote(zone, safe="-"))

    def _node_path(self, project: str, zone: str, node: str) -> str:
        return "{}/nodes/{}".format(self._parent(project, zone), quote(node, safe=""))

    def _qr_path(self, project: str, zone: str, name: str) -> str:
        return "{}/queuedResources/{}".format(self._parent(project, zone), quote(name, safe=""))

    # -- locations ----------------------------------------------------------------------------

    def list_locations(self, project: str, page_size: int | None = None) -> list[dict[str, Any]]:
        """All locations (zones) the TPU API offers to ``project``."""
        items = self._paged(
            "projects/{}/locations".format(quote(project, safe="")),
            "locations",
            page_size,
            project=project,
            permission="tpu.locations.list",
        )[0]
        return items

    # -- nodes --------------------------------------------------------------------------------

    def list_nodes(
        self, project: str, zone: str = ALL_ZONES, page_size: int | None = None
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Nodes in one zone, or in all with ``zone='-'``; returns (nodes, unreachable zones)."""
        return self._paged(
            f"{self._parent(project, zone)}/nodes",
            "nodes",
            page_size,
            project=project,
            zone="" if zone == ALL_ZONES else zone,
            permission="tpu.nodes.list",
        )

    def collect_nodes(
        self,
        project: str,
        zones: Sequence[str] | None = None,
        page_size: int | None = None,
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Nodes of a project in the given zones (default: all), plus human warnings.

        All zones are read through the ``locations/-`` wildcard; if the API refuses the wildcard
        the zones are listed and read one by one. Locations the API reports as unreachable become
        warnings, because their nodes are missing from the result.
        """
        warnings: list[str] = []
        nodes: list[dict[str, Any]] = []
        unreachable: list[str] = []
        if not zones:
            try:
                nodes, unreachable = self.list_nodes(project, ALL_ZONES, page_size)
            except TpuApiError as exc:
                if exc.status not in (400, 404, 501):
                    raise
                zones = [
                    str(loc.get("locationId") or _zone_of(str(loc.get("name", ""))))
                    for loc in self.list_locations(project)
                ]
                warnings.append(
                    f"The TPU API refused the all-zones wildcard for project {project} "
                    f"({exc.reason}); read {len(zones)} zones one by one instead."
                )
        if zones:
            for zone in zones:
                found, missing = self.list_nodes(project, zone, page_size)
                nodes.extend(found)
                unreachable.extend(z for z in missing if z not in unreachable)
        for zone in unreachable:
            warnings.append(
                f"TPU API: location {zone} of project {project} was unreachable; its nodes are "
                "missing from this result. Retry later."
            )
        return nodes, warnings

    def get_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        """One node; raises TpuApiError with ``not_found`` True when it does not exist."""
        return self.request(
            "GET",
            self._node_path(project, zone, node),
            project=project,
            zone=zone,
            permission="tpu.nodes.get",
            resource=f"TPU node {node}",
        )

    def find_node(self, project: str, zone: str, node: str) -> dict[str, Any] | None:
        """Like get_node, but None when the node does not exist."""
        try:
            return self.get_node(project, zone, node)
        except TpuApiError as exc:
            if exc.not_found:
                return None
            raise

    def create_node(
        self, project: str, zone: str, node_id: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Start creating a node; returns the long-running operation."""
        return self.request(
            "POST",
            f"{self._parent(project, zone)}/nodes",
            params={"nodeId": node_id},
            body=body,
            project=project,
            zone=zone,
            permission="tpu.nodes.create",
            resource=f"TPU node {node_id}",
        )

    def delete_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        """Start deleting a node; returns the long-running operation."""
        return self.request(
            "DELETE",
            self._node_path(project, zone, node),
            project=project,
            zone=zone,
            permission="tpu.nodes.delete",
            resource=f"TPU node {node}",
        )

    def start_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        """Start a stopped single-host node; returns the long-running operation."""
        return self.request(
            "POST",
            self._node_path(project, zone, node) + ":start",
            body={},
            project=project,
            zone=zone,
            permission="tpu.nodes.start",
            resource=f"TPU node {node}",
        )

    def stop_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        """Stop a single-host node; returns the long-running operation."""
        return self.request(
            "POST",
            self._node_path(project, zone, node) + ":stop",
            body={},
            project=project,
            zone=zone,
            permission="tpu.nodes.stop",
            resource=f"TPU node {node}",
        )

    def update_node(
        self,
        project: str,
        zone: str,
        node: str,
        body: Mapping[str, Any],
        update_mask: Sequence[str],
    ) -> dict[str, Any]:
        """Change the fields named in ``update_mask`` in place (the API allows description,
        tags, labels, metadata, networkConfig.enable_external_ips); returns the operation."""
        return self.request(
            "PATCH",
            self._node_path(project, zone, node),
            params={"updateMask": ",".join(update_mask)},
            body=body,
            project=project,
            zone=zone,
            permission="tpu.nodes.update",
            resource=f"TPU node {node}",
        )

    # -- operations ---------------------------------------------------------------------------

    def get_operation(self, name: str) -> dict[str, Any]:
        """An operation by its full name ``projects/p/locations/z/operations/x``."""
        return self.request(
            "GET",
            name,
            zone=_zone_of(name),
            permission="tpu.operations.get",
            resource=f"operation {name}",
        )

    def wait_operation(
        self,
        operation: Mapping[str, Any],
        timeout: float = 1800.0,
        poll: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> dict[str, Any]:
        """Poll an operation until it is done; return it, or raise if it failed or timed out."""
        current = dict(operation)
        deadline = clock() + timeout
        while not current.get("done"):
            if clock() >= deadline:
                raise TpuApiError(
                    f"Operation {current.get('name', '?')} is not done after {timeout:.0f} s. It "
                    "goes on in the background; look at it with 'gcloud compute tpus tpu-vm "
                    "operations describe' or wait longer (timeout).",
                    reason="TIMEOUT",
                )
            self._sleep(poll)
            current = self.get_operation(str(current["name"]))
        error = current.get("error")
        if isinstance(error, Mapping):
            meta = current.get("metadata") or {}
            raise TpuApiError(
                "Operation {} on {} failed: {} (code {}).".format(
                    current.get("name", "?"),
                    meta.get("target", "?") if isinstance(meta, Mapping) else "?",
                    error.get("message", "no message"),
                    error.get("code", "?"),
                ),
                reason="OPERATION_FAILED",
                api_message=str(error.get("message", "")),
            )
        return current

    # -- queued resources ---------------------------------------------------------------------

    def list_queued_resources(
        self, project: str, zone: str, page_size: int | None = None
    ) -> tuple[list[dict[str, Any]], list[str]]:
        """Queued resources in a zone; returns (queued resources, unreachable zones)."""
        return self._paged(
            f"{self._parent(project, zone)}/queuedResources",
            "queuedResources",
            page_size,
            project=project,
            zone="" if zone == ALL_ZONES else zone,
            permission="tpu.queuedResources.list",
        )

    def get_queued_resource(self, project: str, zone: str, name: str) -> dict[str, Any]:
        return self.request(
            "GET",
            self._qr_path(project, zone, name),
            project=project,
            zone=zone,
            permission="tpu.queuedResources.get",
            resource=f"queued resource {name}",
        )

    def create_queued_resource(
        self, project: str, zone: str, queued_resource_id: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Request capacity through a queued resource; returns the long-running operation."""
        return self.request(
            "POST",
            f"{self._parent(project, zone)}/queuedResources",
            params={"queuedResourceId": queued_resource_id},
            body=body,
            project=project,
            zone=zone,
            permission="tpu.queuedResources.create",
            resource=f"queued resource {queued_resource_id}",
        )

    def delete_queued_resource(
        self, project: str, zone: str, name: str, force: bool = False
    ) -> dict[str, Any]:
        """Delete a queued resource (``force`` also deletes its nodes); returns the operation."""
        return self.request(
            "DELETE",
            self._qr_path(project, zone, name),
            params={"force": "true"} if force else None,
            project=project,
            zone=zone,
            permission="tpu.queuedResources.delete",
            resource=f"queued resource {name}",
        )
