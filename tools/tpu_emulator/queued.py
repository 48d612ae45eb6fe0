"""Queued resources: list, get, create (with multislice node specs), delete, reset.

A request goes CREATING -> ACCEPTED -> PROVISIONING -> ACTIVE, or waits in
WAITING_FOR_RESOURCES when the zone has no capacity or its queueingPolicy's validAfter has not
come; it FAILS when its validUntil passes while waiting (or when the zone's next request was
made to fail, see admin.py). A flex-start request (runDuration.maxRunDuration) is SUSPENDED when
its run duration is up, its nodes deleted.
"""

from __future__ import annotations

import copy
import re
import threading
from typing import Any

from . import errors
from .backends import NodeInfo, WorkerAddress
from .common import NODE_ID_RE, TYPE_PREFIX, Project, first, now_rfc3339

DURATION_RE = re.compile(r"^([0-9]{1,9}(?:\.[0-9]{1,9})?)s$")


class QueuedResources:
    """The queuedResources resource."""

    def _load_queued(self, project: Project, zone: str, spec: dict[str, Any]) -> None:
        spec = copy.deepcopy(spec)
        qr_id = str(spec.pop("queuedResourceId", "") or self._short(str(spec.get("name", ""))))
        spec["name"] = f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
        spec.setdefault("createTime", now_rfc3339())
        spec.setdefault("state", {"state": "ACTIVE"})
        project.queued[zone][qr_id] = spec

    # -- queued resources ----------------------------------------------------------------------

    def _queuedresources_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        zones = sorted(project.zones) if zone == "-" else [zone]
        items = [project.queued[z][q] for z in zones for q in sorted(project.queued[z])]
        return 200, self._page(items, "queuedResources", query, f"{project.id}/{zone}/qr")

    def _get_qr(self, project: Project, zone: str, qr_id: str) -> dict[str, Any]:
        qr = project.queued[zone].get(qr_id)
        if qr is None:
            raise errors.not_found(
                f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
            )
        return qr

    def _queuedresources_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return 200, copy.deepcopy(self._get_qr(project, params["z"], params["q"]))

    def _queuedresources_create(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        qr_id = first(query, "queuedResourceId")
        if not qr_id or not NODE_ID_RE.match(qr_id):
            raise errors.invalid(f"Invalid queued_resource_id '{qr_id}'.", "queued_resource_id")
        if qr_id in project.queued[zone]:
            raise errors.already_exists(
                f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
            )
        specs = expand_node_specs(((body.get("tpu") or {}).get("nodeSpec")) or [], qr_id)
        if not specs:
            raise errors.invalid(
                "queued_resource.tpu.node_spec must name at least one node.", "queued_resource.tpu"
            )
        for spec in specs:
            node_id = str(spec.get("nodeId") or "")
            if not NODE_ID_RE.match(node_id):
                raise errors.invalid(
                    f"Invalid node_id '{node_id}' in node_spec.", "queued_resource.tpu.node_spec"
                )
            if node_id in project.nodes[zone]:
                raise errors.already_exists(
                    f"projects/{project.id}/locations/{zone}/nodes/{node_id}"
                )
            self._validate_node_body(project, zone, spec.get("node") or {})
        validate_schedule(body)
        qr = copy.deepcopy(body)
        qr["name"] = f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
        qr["createTime"] = now_rfc3339()
        qr["state"] = {"state": "CREATING", "stateInitiator": "USER"}
        project.queued[zone][qr_id] = qr
        op = self._operation(project, zone, "create", qr["name"])
        self._accept(project, zone, qr, specs, op)
        return 200, copy.deepcopy(op)

    def _accept(
        self,
        project: Project,
        zone: str,
        qr: dict[str, Any],
        specs: list[dict[str, Any]],
        op: dict[str, Any],
    ) -> None:
        """After the operation delay the request is ACCEPTED, then provisioned, queued or
        failed; ``op`` resolves to the request."""
        after, until = validate_schedule(qr)
        spot = "spot" in qr

        def accepted(_: Any) -> dict[str, Any]:
            qr["state"] = {"state": "ACCEPTED", "stateInitiator": "USER"}
            fail_next = project.zones[zone].get("fail_next") or []
            if fail_next:
                self.fail_queued(qr, fail_next.pop(0))
            elif project.zones[zone]["capacity"] and not after:
                self._provision(project, zone, qr, specs, spot)
            else:
                qr["state"] = {"state": "WAITING_FOR_RESOURCES", "stateInitiator": "SERVICE"}
                self._queue_window(project, zone, qr, specs, after, until)
            return {"@type": TYPE_PREFIX + "QueuedResource", **copy.deepcopy(qr)}

        self._run(op, lambda: None, accepted)

    def _queuedresources_reset(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """A SUSPENDED or FAILED request goes back into the queue with its node specs, as if
        created again (its nodes are gone by then)."""
        zone, qr_id = params["z"], params["q"]
        qr = self._get_qr(project, zone, qr_id)
        word = qr["state"].get("state")
        if word not in ("SUSPENDED", "FAILED"):
            raise errors.failed_precondition(
                f"Queued resource {qr['name']} is {word}; only a SUSPENDED or FAILED request "
                "can be reset."
            )
        specs = expand_node_specs(((qr.get("tpu") or {}).get("nodeSpec")) or [], qr_id)
        taken = [str(s["nodeId"]) for s in specs if str(s["nodeId"]) in project.nodes[zone]]
        if taken:
            raise errors.failed_precondition(
                f"Queued resource {qr['name']} cannot be reset while node(s) "
                f"{', '.join(taken)} exist."
            )
        qr["state"] = {"state": "CREATING", "stateInitiator": "USER"}
        op = self._operation(project, zone, "reset", qr["name"])
        self._accept(project, zone, qr, specs, op)
        return 200, copy.deepcopy(op)

    def _provision(
        self,
        project: Project,
        zone: str,
        qr: dict[str, Any],
        specs: list[dict[str, Any]],
        spot: bool,
    ) -> None:
        """Create the queued resource's nodes (CREATING), then make it ACTIVE once all are READY."""
        qr["state"] = {"state": "PROVISIONING", "stateInitiator": "SERVICE"}
        created: list[tuple[dict[str, Any], NodeInfo]] = []
        for spec in specs:
            body = copy.deepcopy(spec.get("node") or {})
            if spot:
                body.setdefault("schedulingConfig", {})["spot"] = True
            node_id = str(spec["nodeId"])
            node = self._new_node(project, zone, node_id, body)
            node["state"] = "CREATING"
            node["queuedResource"] = qr["name"]
            project.nodes[zone][node_id] = node
            created.append((node, self._node_info(project, zone, node)))
        op = self._operation(project, zone, "create", qr["name"])

        def slow() -> list[list[WorkerAddress]]:
            return [self.backend.create(info) for _, info in created]

        def apply(all_addresses: list[list[WorkerAddress]]) -> dict[str, Any]:
            for (node, _), addresses in zip(created, all_addresses, strict=True):
                node["networkEndpoints"] = self._endpoints(addresses)
                node["state"] = "READY"
                node["health"] = "HEALTHY"
            if qr["state"].get("state") == "PROVISIONING":
                qr["state"] = {"state": "ACTIVE", "stateInitiator": "SERVICE"}
                self._run_duration_ends(project, zone, qr)
            return {"@type": TYPE_PREFIX + "QueuedResource", **copy.deepcopy(qr)}

        self._run(op, slow, apply)

    def _queue_window(
        self,
        project: Project,
        zone: str,
        qr: dict[str, Any],
        specs: list[dict[str, Any]],
        after: float,
        until: float | None,
    ) -> None:
        """A waiting request is provisioned once validAfter has come (if the zone has capacity)
        and FAILS when validUntil passes first."""
        generation = self._generation

        def waiting() -> bool:
            return (
                generation == self._generation
                and qr["state"].get("state") == "WAITING_FOR_RESOURCES"
            )

        def start() -> None:
            with self.lock:
                if waiting() and project.zones[zone]["capacity"]:
                    self._provision(project, zone, qr, specs, "spot" in qr)

        def expire() -> None:
            with self.lock:
                if waiting():
                    self.fail_queued(
                        qr, "The request's validity window ended before capacity was found."
                    )

        for delay, action in ((after, start), (until, expire)):
            if delay:
                timer = threading.Timer(delay, action)
                timer.daemon = True
                timer.start()

    def _queuedresources_delete(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone, qr_id = params["z"], params["q"]
        qr = self._get_qr(project, zone, qr_id)
        force = first(query, "force").lower() == "true"
        nodes = [
            (node_id, node)
            for node_id, node in project.nodes[zone].items()
            if node.get("queuedResource") == qr["name"]
        ]
        if nodes and not force:
            raise errors.failed_precondition(
                f"Queued resource {qr['name']} in state {qr['state'].get('state')} still has "
                f"{len(nodes)} node(s); delete them first or delete with force=true."
            )
        qr["state"] = {"state": "DELETING", "stateInitiator": "USER"}
        for _, node in nodes:
            node["state"] = "DELETING"
        infos = [self._node_info(project, zone, node) for _, node in nodes]
        op = self._operation(project, zone, "delete", qr["name"])

        def slow() -> None:
            for info in infos:
                self.backend.delete(info)

        def apply(_: Any) -> dict[str, Any]:
            for node_id, node in nodes:
                if project.nodes[zone].get(node_id) is node:
                    del project.nodes[zone][node_id]
            project.queued[zone].pop(qr_id, None)
            return {"@type": "type.googleapis.com/google.protobuf.Empty"}

        self._run(op, slow, apply)
        return 200, copy.deepcopy(op)


def expand_node_specs(specs: list[Any], qr_id: str) -> list[dict[str, Any]]:
    """Node specs with multisliceParams (v2; multiNodeParams in v2alpha1) expanded into one
    spec per node: ``nodeCount`` nodes named ``<nodeIdPrefix>-0`` ... (prefix default: the
    queued resource id)."""
    expanded: list[dict[str, Any]] = []
    for spec in specs:
        if not isinstance(spec, dict):
            raise errors.invalid("node_spec entries must be objects.", "queued_resource.tpu")
        multi = spec.get("multisliceParams") or spec.get("multiNodeParams")
        if not multi:
            expanded.append(spec)
            continue
        if spec.get("nodeId"):
            raise errors.invalid(
                "node_id and multislice_params are mutually exclusive in a node_spec.",
                "queued_resource.tpu.node_spec",
            )
        try:
            count = int(multi.get("nodeCount") or 0)
        except (TypeError, ValueError):
            count = 0
        if count < 2:
            raise errors.invalid(
                "multislice_params.node_count must be greater than 1.",
                "queued_resource.tpu.node_spec.multislice_params.node_count",
            )
        prefix = str(multi.get("nodeIdPrefix") or qr_id)
        for index in range(count):
            single = {
                k: v for k, v in spec.items() if k not in ("multisliceParams", "multiNodeParams")
            }
            single["nodeId"] = f"{prefix}-{index}"
            expanded.append(single)
    return expanded


def validate_schedule(body: dict[str, Any]) -> tuple[float, float | None]:
    """Check runDuration and queueingPolicy as the API does; (seconds until the request may be
    provisioned, seconds it may wait in all or None)."""
    run = body.get("runDuration") or {}
    if run and not DURATION_RE.match(str(run.get("maxRunDuration") or "")):
        raise errors.invalid(
            f"Invalid run_duration.max_run_duration '{run.get('maxRunDuration')}'.",
            "queued_resource.run_duration.max_run_duration",
        )
    flex = any(
        ((spec.get("node") or {}).get("schedulingConfig") or {}).get("provisioningModel")
        == "FLEX_START"
        for spec in (body.get("tpu") or {}).get("nodeSpec") or []
        if isinstance(spec, dict)
    )
    if flex and not run:
        raise errors.invalid(
            "A FLEX_START request needs run_duration.max_run_duration.",
            "queued_resource.run_duration",
        )
    if flex and ("spot" in body or "guaranteed" in body or body.get("reservationName")):
        raise errors.invalid(
            "A FLEX_START request takes no spot, guaranteed or reservation tier.",
            "queued_resource.tier",
        )
    policy = body.get("queueingPolicy") or {}
    seconds = {}
    for key in ("validUntilDuration", "validAfterDuration"):
        if key in policy:
            match = DURATION_RE.match(str(policy[key]))
            if not match:
                raise errors.invalid(
                    f"Invalid queueing_policy.{key} '{policy[key]}'.",
                    "queued_resource.queueing_policy",
                )
            seconds[key] = float(match.group(1))
    return seconds.get("validAfterDuration", 0.0), seconds.get("validUntilDuration")
