"""Queued resources: list, get, create (with multislice node specs), delete."""

from __future__ import annotations

import copy
from typing import Any

from . import errors
from .backends import NodeInfo, WorkerAddress
from .common import NODE_ID_RE, TYPE_PREFIX, Project, first, now_rfc3339


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
        qr = copy.deepcopy(body)
        qr["name"] = f"projects/{project.id}/locations/{zone}/queuedResources/{qr_id}"
        qr["createTime"] = now_rfc3339()
        qr["state"] = {"state": "CREATING", "stateInitiator": "USER"}
        project.queued[zone][qr_id] = qr
        op = self._operation(project, zone, "create", qr["name"])
        spot = "spot" in body

        def accepted(_: Any) -> dict[str, Any]:
            qr["state"] = {"state": "ACCEPTED", "stateInitiator": "USER"}
            if project.zones[zone]["capacity"]:
                self._provision(project, zone, qr, specs, spot)
            else:
                qr["state"] = {"state": "WAITING_FOR_RESOURCES", "stateInitiator": "SERVICE"}
            return {"@type": TYPE_PREFIX + "QueuedResource", **copy.deepcopy(qr)}

        self._run(op, lambda: None, accepted)
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
            return {"@type": TYPE_PREFIX + "QueuedResource", **copy.deepcopy(qr)}

        self._run(op, slow, apply)

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
