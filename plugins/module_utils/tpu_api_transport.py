# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""How the TPU API client sends a call: the base URL, Google credentials from ``tpu_auth.py``,
retries of 429 and 5xx answers with bounded exponential backoff and jitter, ``nextPageToken``
paging, error answers turned into :class:`TpuApiError` (``tpu_api_errors.py``), and every other
answer checked against the API's shapes (``tpu_api_shapes.py``) before a caller reads it.

:class:`TpuApiTransport` is the base of :class:`TpuClient` in ``tpu_api.py``, which adds one
method per API call (the operations' calls through ``tpu_api_operations.py``).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

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


from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_errors import (
    TpuApiError,
    error_from_response,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_options import (
    DEFAULT_BASE_URL,
    DEFAULT_SCOPES,
    ENDPOINT_ENV,
    HTTP_HOSTS_ENV,
    auth_argument_spec,
    base_url_problem,
    http_hosts_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_shapes import answer_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_auth import (
    AuthConfigError,
    authorized_session,
)

USER_AGENT = "cloudtpu.pod-tpu-api"


class _ParamsModule:
    """The small part of AnsibleModule that GcpSession uses, for callers that are not modules."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.params = dict(params)

    def fail_json(self, msg: str = "", **kwargs: Any) -> None:
        raise TpuApiError(f"Google authentication setup failed: {msg}", reason="AUTH_CONFIG")


def _zone_of(name: str) -> str:
    """Zone id of a resource or location name (``projects/p/locations/z/...`` or ``z``)."""
    parts = name.split("/")
    if "locations" in parts:
        index = parts.index("locations")
        if index + 1 < len(parts):
            return parts[index + 1]
    return parts[-1]


_Transport = TypeVar("_Transport", bound="TpuApiTransport")


class TpuApiTransport:
    """Sends calls to the Cloud TPU v2 API: construction from the auth options, retries, paging.

    The base of :class:`TpuClient` (``tpu_api.py``), whose docstring describes the arguments.
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
        http_hosts: Any = None,
    ) -> None:
        params = getattr(module, "params", {}) or {}
        url = base_url or params.get("base_url") or os.environ.get(ENDPOINT_ENV) or DEFAULT_BASE_URL
        # The bearer token goes with every call: over https, or plain http to this machine, or
        # to the hosts named in http_hosts (the exception asked for by name).
        if http_hosts is None:
            http_hosts = params.get("http_hosts")
        if http_hosts is None:
            http_hosts = os.environ.get(HTTP_HOSTS_ENV)
        problem = http_hosts_problem(http_hosts)
        if problem:
            raise TpuApiError(problem, reason="BAD_HTTP_HOSTS")
        problem = base_url_problem(url, http_hosts=http_hosts)
        if problem:
            raise TpuApiError(problem, reason="BAD_BASE_URL")
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
    def from_params(cls: type[_Transport], params: Mapping[str, Any], **kwargs: Any) -> _Transport:
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
        once: bool = False,
        answer: str = "",
    ) -> dict[str, Any]:
        """Send one API call (with retries) and return the decoded JSON answer.

        ``once``: the call is not safe to repeat blindly (a create). When no answer comes back
        it is not sent again: :class:`TpuApiError` with reason ``OUTCOME_UNKNOWN`` says that it
        may have been carried out, so that the caller looks before sending it again.
        ``answer``: the name of the answer's shape in ``tpu_api_shapes.ANSWERS`` when it is not
        ``permission`` (calls that need the same permission and answer differently).
        """
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
                if once:
                    raise TpuApiError(
                        f"The TPU API at {self.base_url} gave no answer to {method} {url} "
                        f"({exc.__class__.__name__}); it may have been carried out, so it was "
                        "not sent again.",
                        reason="OUTCOME_UNKNOWN",
                        url=url,
                    ) from None
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
        except (ValueError, RecursionError):
            raise TpuApiError(
                f"The TPU API at {url} answered {response.status_code} with a body that is not "
                f"JSON; is base_url the API root (for example {DEFAULT_BASE_URL})?",
                status=response.status_code,
                reason="BAD_RESPONSE",
                url=url,
            ) from None
        # One check of every answer against the API's shapes, before any caller reads it.
        problem = answer_problem(data, answer or permission)
        if problem:
            raise TpuApiError(
                f"The TPU API's answer to {permission[4:] or 'the call'} ({method} {url}) does "
                f"not have the API's shape: {problem}. Check that base_url (env {ENDPOINT_ENV}) "
                f"is the TPU v2 API root, such as {DEFAULT_BASE_URL}, and that no proxy on the "
                "way changes the answers.",
                status=response.status_code,
                reason="BAD_RESPONSE",
                url=url,
            )
        return data

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
