# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The one client of the Cloud TPU v2 REST API in this collection.

Authentication comes from ``tpu_auth.py`` (auth kinds ``application``, ``serviceaccount``,
``machineaccount`` and ``accesstoken``, as in the google.cloud collection). The base URL is an
option with an environment fallback (``CLOUDTPU_API_ENDPOINT``) so that the local emulator, a
private endpoint or a proxy can stand in for ``https://tpu.googleapis.com/v2``; the bearer token
goes over https only, or plain http to a loopback address or to a host named in the
``http_hosts`` option (env ``CLOUDTPU_API_HTTP_HOSTS``) (``base_url_problem``).

The client follows ``nextPageToken``, retries 429 and 5xx answers with bounded exponential backoff
and jitter, and turns API errors into :class:`TpuApiError` whose message says what to do.

Use from a module::

    module = api_module(zone_argument_spec(name={"type": "str", "required": True}))
    client = TpuClient(module)            # module.params holds auth_argument_spec() options
    with failing_on_api_error(module):    # a TpuApiError fails the module with its reason
        ...

or, for a module whose work is a task object with ``run()`` and ``result``::

    module.exit_json(**run_task(module, NodeTask))

Use from anything else (an inventory plugin, a script)::

    client = TpuClient.from_params({"auth_kind": "accesstoken", "access_token": "t", ...})

The parts of the client live in their own files: the options and their defaults
(``tpu_api_options.py``), the errors and how an error answer is read (``tpu_api_errors.py``),
the sending of calls with credentials, retries and paging (``tpu_api_transport.py``), and the
long-running operations that node and queued-resource calls return, read and waited for
(``tpu_api_operations.py``). This file holds :class:`TpuClient`, one method per call on nodes,
locations and queued resources, and re-exports the public names of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_errors import (
    PERMISSION_ROLES,
    TpuApiError,
    error_from_response,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_operations import TpuOperations
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_options import (
    AUTH_KINDS,
    CLOUD_PLATFORM_SCOPE,
    DEFAULT_BASE_URL,
    DEFAULT_SCOPES,
    ENDPOINT_ENV,
    HTTP_HOSTS_ENV,
    auth_argument_spec,
    base_url_problem,
    http_hosts_problem,
    parse_http_hosts,
    project_argument_spec,
    zone_argument_spec,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_transport import (
    HAS_GOOGLE_AUTH,
    HAS_REQUESTS,
    USER_AGENT,
    TpuApiTransport,
    _zone_of,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import check_module_options
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_secrets import HidingModule

__all__ = [
    "ALL_ZONES",
    "AUTH_KINDS",
    "CLOUD_PLATFORM_SCOPE",
    "DEFAULT_BASE_URL",
    "DEFAULT_SCOPES",
    "ENDPOINT_ENV",
    "HAS_GOOGLE_AUTH",
    "HAS_REQUESTS",
    "HTTP_HOSTS_ENV",
    "PERMISSION_ROLES",
    "USER_AGENT",
    "TpuApiError",
    "TpuApiTransport",
    "TpuClient",
    "api_module",
    "auth_argument_spec",
    "base_url_problem",
    "error_from_response",
    "failing_on_api_error",
    "http_hosts_problem",
    "parse_http_hosts",
    "project_argument_spec",
    "run_task",
    "zone_argument_spec",
]

ALL_ZONES = "-"


class TpuClient(TpuOperations):
    """Client of the Cloud TPU v2 API.

    ``module`` is an AnsibleModule (or any object with ``params`` and ``fail_json``) whose params
    hold the auth options of :func:`auth_argument_spec`. Keyword arguments override the params.
    ``sleep`` and ``rand`` exist so that tests can observe backoff without waiting.
    """

    @staticmethod
    def _parent(project: str, zone: str) -> str:
        return "projects/{}/locations/{}".format(quote(project, safe=""), quote(zone, safe="-"))

    def _node_path(self, project: str, zone: str, node: str) -> str:
        return "{}/nodes/{}".format(self._parent(project, zone), quote(node, safe=""))

    def _qr_path(self, project: str, zone: str, name: str) -> str:
        return "{}/queuedResources/{}".format(self._parent(project, zone), quote(name, safe=""))

    def _on_node(
        self,
        method: str,
        project: str,
        zone: str,
        node: str,
        permission: str,
        verb: str = "",
        **more: Any,
    ) -> dict[str, Any]:
        """One call on one node (``verb``, such as ``:start``, after its path): the permission it
        needs and the node's name for the error, and ``more`` of :meth:`request`'s arguments."""
        path = self._node_path(project, zone, node) + verb
        return self.request(
            method,
            path,
            project=project,
            zone=zone,
            permission=permission,
            resource=f"TPU node {node}",
            **more,
        )

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
        return self._on_node("GET", project, zone, node, "tpu.nodes.get")

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
        """Start creating a node; returns the long-running operation. The call is sent once
        when no answer comes back (``OUTCOME_UNKNOWN``): ``tpu_create.create_or_find`` looks
        before sending it again."""
        return self.request(
            "POST",
            f"{self._parent(project, zone)}/nodes",
            params={"nodeId": node_id},
            body=body,
            project=project,
            zone=zone,
            permission="tpu.nodes.create",
            resource=f"TPU node {node_id}",
            once=True,
        )

    def delete_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        """Start deleting a node; returns the long-running operation."""
        return self._on_node("DELETE", project, zone, node, "tpu.nodes.delete")

    def start_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        """Start a stopped single-host node; returns the long-running operation."""
        return self._on_node("POST", project, zone, node, "tpu.nodes.start", ":start", body={})

    def stop_node(self, project: str, zone: str, node: str) -> dict[str, Any]:
        """Stop a single-host node; returns the long-running operation."""
        return self._on_node("POST", project, zone, node, "tpu.nodes.stop", ":stop", body={})

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
        return self._on_node(
            "PATCH",
            project,
            zone,
            node,
            "tpu.nodes.update",
            params={"updateMask": ",".join(update_mask)},
            body=body,
        )

    def get_guest_attributes(
        self,
        project: str,
        zone: str,
        node: str,
        query_path: str = "",
        worker_ids: Sequence[int | str] | None = None,
    ) -> list[dict[str, Any]]:
        """What the node's workers published as guest attributes (their metadata server's
        ``instance/guest-attributes/``), under ``query_path`` (``''`` all, ``ns/`` one namespace,
        ``ns/key`` one key): one ``{queryPath, queryValue: {items: [{namespace, key, value}]}}``
        per worker asked for (default: every worker), in worker order."""
        body: dict[str, Any] = {}
        if query_path:
            body["queryPath"] = query_path
        if worker_ids:
            body["workerIds"] = [str(worker) for worker in worker_ids]
        data = self._on_node(
            "POST",
            project,
            zone,
            node,
            "tpu.nodes.get",
            ":getGuestAttributes",
            body=body,
            answer="nodes.getGuestAttributes",
        )
        return list(data.get("guestAttributes") or [])

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


def api_module(argument_spec: dict[str, dict[str, Any]]) -> HidingModule:
    """The module object of a module that calls the TPU API: check mode supported, secret values
    hidden (``tpu_secrets.py``), failed before any call when a numeric option is out of bounds."""
    module = HidingModule(argument_spec=argument_spec, supports_check_mode=True)
    check_module_options(module)
    return module


@contextmanager
def failing_on_api_error(
    module: Any, partial: Callable[[], Mapping[str, Any]] = dict
) -> Iterator[None]:
    """Fail ``module`` on a :class:`TpuApiError` raised inside, with the error's message, reason,
    HTTP status and API message, and with what ``partial()`` says was done before it."""
    try:
        yield
    except TpuApiError as exc:
        module.fail_json(
            msg=str(exc),
            reason=exc.reason,
            status=exc.status,
            api_message=exc.api_message,
            **partial(),
        )


def run_task(module: Any, task_class: Callable[[Any, TpuClient], Any]) -> dict[str, Any]:
    """The result of ``task_class(module, client).run()``; on an API error the module fails with
    the task's ``result`` so far (what it changed before the error)."""
    task = None
    with failing_on_api_error(module, lambda: task.result if task is not None else {}):
        task = task_class(module, TpuClient(module))
        return task.run()
    return {}  # reached only when fail_json returns, as a test's stand-in may
