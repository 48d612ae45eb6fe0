"""Nodes: list, get, create, delete, stop, start, patch, and loading them from a state file."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from typing import Any

from . import catalog, errors
from .backends import NodeInfo, WorkerAddress
from .common import NODE_ID_RE, OFF_STATES, TYPE_PREFIX, Project, first, now_rfc3339, tpu_scope

# AttachedDisk.DiskMode by number
DISK_MODES = {0: "DISK_MODE_UNSPECIFIED", 1: "READ_WRITE", 2: "READ_ONLY"}


class Nodes:
    """The nodes resource."""

    @staticmethod
    def _short(name: str) -> str:
        return name.rsplit("/", 1)[-1]

    def _node_info(self, project: Project, zone: str, node: dict[str, Any]) -> NodeInfo:
        accel = catalog.node_type(node)
        hosts = catalog.hosts(accel) or 1
        return NodeInfo(
            project=project.id,
            zone=zone,
            node_id=self._short(node["name"]),
            accelerator_type=accel,
            workers=hosts,
            external_ips=bool((node.get("networkConfig") or {}).get("enableExternalIps")),
            runtime_version=str(node.get("runtimeVersion", "")),
            labels=dict(node.get("labels") or {}),
            metadata=dict(node.get("metadata") or {}),
        )

    @staticmethod
    def _endpoints(
        addresses: list[WorkerAddress], keep_external: bool = True
    ) -> list[dict[str, Any]]:
        endpoints = []
        for address in addresses:
            endpoint: dict[str, Any] = {"ipAddress": address.internal_ip, "port": 8470}
            if keep_external and address.external_ip:
                endpoint["accessConfig"] = {"externalIp": address.external_ip}
            endpoints.append(endpoint)
        return endpoints

    @staticmethod
    def _drop_external(node: dict[str, Any]) -> None:
        for endpoint in node.get("networkEndpoints") or []:
            endpoint.pop("accessConfig", None)

    def _new_node(
        self, project: Project, zone: str, node_id: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        node = copy.deepcopy(body)
        for output_only in (
            "name",
            "state",
            "networkEndpoints",
            "createTime",
            "id",
            "apiVersion",
            "health",
        ):
            node.pop(output_only, None)
        node["name"] = f"projects/{project.id}/locations/{zone}/nodes/{node_id}"
        node["createTime"] = now_rfc3339()
        node["id"] = str(int(hashlib.sha256(node["name"].encode()).hexdigest()[:15], 16))
        node["apiVersion"] = "V2"
        node.setdefault("networkConfig", {"network": "default", "subnetwork": "default"})
        node.setdefault("serviceAccount", {"email": "default", "scope": [tpu_scope()]})
        node.setdefault("schedulingConfig", {})
        return node

    def _load_node(self, project: Project, zone: str, spec: dict[str, Any]) -> None:
        spec = dict(spec)
        node_id = str(spec.pop("nodeId", "") or self._short(str(spec.get("name", ""))))
        if not node_id:
            raise ValueError(f"a node in {project.id}/{zone} has neither nodeId nor name")
        state = str(spec.get("state", "READY"))
        endpoints = spec.get("networkEndpoints")
        node = self._new_node(project, zone, node_id, spec)
        node["state"] = state
        if spec.get("health"):
            node["health"] = spec["health"]
        elif state == "READY":
            node["health"] = "HEALTHY"
        if spec.get("createTime"):
            node["createTime"] = spec["createTime"]
        if endpoints is not None:
            node["networkEndpoints"] = copy.deepcopy(endpoints)
        elif state not in ("CREATING",):
            info = self._node_info(project, zone, node)
            node["networkEndpoints"] = self._endpoints(
                self.backend.create(info), keep_external=state not in OFF_STATES
            )
            if state in OFF_STATES:
                self.backend.stop(info)
        project.nodes[zone][node_id] = node

    # -- nodes ---------------------------------------------------------------------------------

    def _nodes_list(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        unreachable = set(self.faults.unreachable_zones(project.id))
        if zone == "-":
            if not self.settings.get("wildcard", True):
                raise errors.invalid(
                    "Wildcard location '-' is not supported for this request; name a zone.",
                    "parent",
                )
            zones = [z for z in sorted(project.zones) if z not in unreachable]
        else:
            if zone in unreachable:
                raise errors.generic(503)
            zones = [zone]
        items = [project.nodes[z][n] for z in zones for n in sorted(project.nodes[z])]
        out = self._page(items, "nodes", query, f"{project.id}/{zone}/nodes")
        if zone == "-" and unreachable and not first(query, "pageToken"):
            out["unreachable"] = [
                f"projects/{project.id}/locations/{z}"
                for z in sorted(unreachable)
                if z in project.zones
            ]
        return 200, out

    def _get_node(self, project: Project, zone: str, node_id: str) -> dict[str, Any]:
        node = project.nodes[zone].get(node_id)
        if node is None:
            raise errors.not_found(f"projects/{project.id}/locations/{zone}/nodes/{node_id}")
        return node

    def _nodes_get(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return 200, copy.deepcopy(self._get_node(project, params["z"], params["n"]))

    @staticmethod
    def _enum_names(node: dict[str, Any]) -> None:
        """Enums sent as numbers become their names, as the service stores them."""
        config = node.get("acceleratorConfig")
        if isinstance(config, dict) and type(config.get("type")) is int:
            config["type"] = catalog.CONFIG_TYPE_NUMBERS.get(config["type"], str(config["type"]))
        for disk in node.get("dataDisks") or []:
            if isinstance(disk, dict) and type(disk.get("mode")) is int:
                disk["mode"] = DISK_MODES.get(disk["mode"], str(disk["mode"]))

    def _validate_node_body(self, project: Project, zone: str, node: dict[str, Any]) -> str:
        self._enum_names(node)
        accel = node.get("acceleratorType")
        config = node.get("acceleratorConfig")
        if accel and config:
            raise errors.invalid(
                "Only one of accelerator_type and accelerator_config may be set.",
                "node.accelerator_type",
            )
        if not accel and not config:
            raise errors.invalid(
                "One of accelerator_type or accelerator_config must be set.",
                "node.accelerator_type",
            )
        name = str(accel) if accel else catalog.type_from_config(config)
        if self.settings.get("validate_accelerator_types", True):
            if not name or not catalog.is_offered(name):
                shown = accel or json.dumps(config, sort_keys=True)
                raise errors.invalid(
                    f"Invalid value for field 'node.accelerator_type': '{shown}'. Accelerator type "
                    f"'{shown}' is not supported in zone {zone}.",
                    "node.accelerator_type",
                )
            if name not in self._zone_types(project, zone):
                raise errors.invalid(
                    f"Accelerator type '{name}' is not available in zone {zone}.",
                    "node.accelerator_type",
                )
        if not node.get("runtimeVersion"):
            raise errors.invalid(
                "Field 'node.runtime_version' is required.", "node.runtime_version"
            )
        runtime = str(node["runtimeVersion"])
        if (
            self.settings.get("validate_runtime_versions", True)
            and name
            and catalog.is_offered(name)
            and not catalog.runtime_fits(name, runtime)
        ):
            raise errors.invalid(
                f"Invalid value for field 'node.runtime_version': '{runtime}'. Runtime version "
                f"'{runtime}' is not supported for accelerator type '{name}'; supported versions "
                f"include "
                f"{', '.join(catalog.runtimes_for(name))}.",
                "node.runtime_version",
            )
        network = node.get("networkConfig")
        if network is not None and not isinstance(network, dict):
            raise errors.invalid("networkConfig must be an object.", "node.network_config")
        return name or ""

    def _nodes_create(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone = params["z"]
        node_id = first(query, "nodeId")
        if not node_id:
            raise errors.invalid("The node_id query parameter is required.", "node_id")
        if not NODE_ID_RE.match(node_id):
            raise errors.invalid(
                f"Invalid node_id '{node_id}': it must be 1-63 characters of lowercase letters, "
                "digits and hyphens, start with a letter and not end with a hyphen.",
                "node_id",
            )
        if node_id in project.nodes[zone]:
            raise errors.already_exists(f"projects/{project.id}/locations/{zone}/nodes/{node_id}")
        self._validate_node_body(project, zone, body)
        node = self._new_node(project, zone, node_id, body)
        node["state"] = "CREATING"
        project.nodes[zone][node_id] = node
        op = self._operation(project, zone, "create", node["name"])
        info = self._node_info(project, zone, node)

        def apply(addresses: list[WorkerAddress]) -> dict[str, Any]:
            current = project.nodes[zone].get(node_id)
            if current is not node:
                raise errors.ApiError(
                    409,
                    f"Node {node['name']} was deleted while it was being created.",
                    status="ABORTED",
                )
            return self._ready(node, addresses)

        self._run(op, lambda: self.backend.create(info), apply)
        return 200, copy.deepcopy(op)

    def _nodes_delete(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        zone, node_id = params["z"], params["n"]
        node = self._get_node(project, zone, node_id)
        node["state"] = "DELETING"
        op = self._operation(project, zone, "delete", node["name"])
        info = self._node_info(project, zone, node)

        def apply(_: Any) -> dict[str, Any]:
            if project.nodes[zone].get(node_id) is node:
                del project.nodes[zone][node_id]
            qr_name = node.get("queuedResource")
            if qr_name:
                qr = project.queued.get(zone, {}).get(self._short(qr_name))
                if qr is not None and qr["state"].get("state") == "ACTIVE":
                    qr["state"] = {"state": "SUSPENDED", "stateInitiator": "USER"}
            return {"@type": "type.googleapis.com/google.protobuf.Empty"}

        self._run(op, lambda: self.backend.delete(info), apply)
        return 200, copy.deepcopy(op)

    def _single_host_only(
        self, project: Project, zone: str, node: dict[str, Any], verb: str
    ) -> NodeInfo:
        info = self._node_info(project, zone, node)
        workers = len(node.get("networkEndpoints") or []) or info.workers
        if workers > 1:
            raise errors.failed_precondition(
                f"{verb.capitalize()} is only supported for single-host TPU nodes; node "
                f"{info.node_id} ({info.accelerator_type}) has {workers} hosts. Delete and "
                "recreate it instead."
            )
        return info

    def _ready(self, node: dict[str, Any], addresses: list[WorkerAddress]) -> dict[str, Any]:
        """A node whose workers came up (created or started): READY and HEALTHY at these
        addresses; the operation's response."""
        node["networkEndpoints"] = self._endpoints(addresses)
        node["state"] = "READY"
        node["health"] = "HEALTHY"
        return {"@type": TYPE_PREFIX + "Node", **copy.deepcopy(node)}

    def _stopped(self, node: dict[str, Any], _: Any) -> dict[str, Any]:
        node["state"] = "STOPPED"
        node.pop("health", None)
        self._drop_external(node)
        return {"@type": TYPE_PREFIX + "Node", **copy.deepcopy(node)}

    def _nodes_power(
        self, project: Project, params: dict[str, str], verb: str
    ) -> tuple[int, dict[str, Any]]:
        """Stop or start a single-host node: from READY through STOPPING to STOPPED, or from
        STOPPED through STARTING to READY."""
        zone, node_id = params["z"], params["n"]
        node = self._get_node(project, zone, node_id)
        info = self._single_host_only(project, zone, node, verb)
        before, during, done, call, apply = {
            "stop": ("READY", "STOPPING", "stopped", self.backend.stop, self._stopped),
            "start": ("STOPPED", "STARTING", "started", self.backend.start, self._ready),
        }[verb]
        if node["state"] != before:
            raise errors.failed_precondition(
                f"Node {node_id} is {node['state']}; only a {before} node can be {done}."
            )
        node["state"] = during
        op = self._operation(project, zone, verb, node["name"])
        self._run(op, lambda: call(info), lambda result: apply(node, result))
        return 200, copy.deepcopy(op)

    def _nodes_stop(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return self._nodes_power(project, params, "stop")

    def _nodes_start(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        return self._nodes_power(project, params, "start")

    def _nodes_patch(
        self, project: Project, params: dict[str, str], query: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """Update what the v2 API changes in place: description, tags, labels, metadata."""
        zone, node_id = params["z"], params["n"]
        node = self._get_node(project, zone, node_id)
        mask = [f.strip() for f in first(query, "updateMask").split(",") if f.strip()]
        if not mask:
            raise errors.invalid("The update_mask query parameter is required.", "update_mask")
        patchable = ("description", "tags", "labels", "metadata")
        refused = [f for f in mask if f not in patchable]
        if refused:
            raise errors.invalid(
                f"Field(s) {', '.join(refused)} cannot be updated here; the emulator updates "
                f"{', '.join(patchable)} (the API also networkConfig.enable_external_ips).",
                "update_mask",
            )
        changes = {key: copy.deepcopy(body.get(key)) for key in mask}
        op = self._operation(project, zone, "update", node["name"])

        def apply(_: Any) -> dict[str, Any]:
            for key, value in changes.items():
                if value in (None, "", [], {}):
                    node.pop(key, None)
                else:
                    node[key] = value
            return {"@type": TYPE_PREFIX + "Node", **copy.deepcopy(node)}

        def slow() -> None:
            # Running workers pick up new metadata (ssh-keys) the way the guest agent does.
            if "metadata" in changes:
                info = self._node_info(project, zone, node)
                self.backend.update_metadata(
                    dataclasses.replace(info, metadata=dict(changes["metadata"] or {}))
                )

        self._run(op, slow, apply)
        return 200, copy.deepcopy(op)
