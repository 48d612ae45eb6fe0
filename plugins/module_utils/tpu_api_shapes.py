# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The shapes of the TPU v2 API's answers as this collection reads them, and
:func:`answer_problem`, which the client (``tpu_api_transport.py``) runs on every answer before
any caller sees it.

A shape gives the JSON type of each field the modules and the inventory read, after the public
v2 reference (Node, Operation, QueuedResource, Location and the list pages). Only types are
checked: a missing field (or a null) is left to the callers' defaults, and fields the shape does
not name are ignored, since the API adds fields over time. So a caller never meets a string where
it reads an object, or an object where it walks a list.

Shapes are written as: ``str``, ``bool``, ``int`` (a JSON number, or a string of digits as
int64 fields are), ``dict`` (any object), ``[shape]`` (a list of that), ``{field: shape}`` (an
object) and ``MapOf(shape)`` (an object whose values have the shape: labels, metadata).
"""

from __future__ import annotations

import json
from typing import Any


class MapOf:
    """An object whose keys are free and whose values all have ``shape``."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


_KINDS = {str: "a string", bool: "a boolean", int: "a whole number", dict: "an object"}

NETWORK_CONFIG = {
    "network": str,
    "subnetwork": str,
    "enableExternalIps": bool,
    "canIpForward": bool,
    "queueCount": int,
}
NODE = {
    "name": str,
    "description": str,
    "acceleratorType": str,
    "acceleratorConfig": {"type": str, "topology": str},
    "state": str,
    "health": str,
    "healthDescription": str,
    "runtimeVersion": str,
    "cidrBlock": str,
    "createTime": str,
    "id": int,
    "apiVersion": str,
    "queuedResource": str,
    "multisliceNode": bool,
    "networkConfig": NETWORK_CONFIG,
    "networkConfigs": [NETWORK_CONFIG],
    "networkEndpoints": [{"ipAddress": str, "port": int, "accessConfig": {"externalIp": str}}],
    "serviceAccount": {"email": str, "scope": [str]},
    "schedulingConfig": {
        "preemptible": bool,
        "reserved": bool,
        "spot": bool,
        "provisioningModel": str,
        "reservation": str,
        "terminationTimestamp": str,
    },
    "labels": MapOf(str),
    "metadata": MapOf(str),
    "tags": [str],
    "dataDisks": [{"sourceDisk": str, "mode": str}],
    "symptoms": [{"createTime": str, "symptomType": str, "details": str, "workerId": str}],
    "shieldedInstanceConfig": {"enableSecureBoot": bool},
    "upcomingMaintenance": dict,
}
_STATUS = {"code": int, "message": str, "details": [dict]}
OPERATION = {
    "name": str,
    "done": bool,
    "metadata": {"target": str, "verb": str, "statusDetail": str, "createTime": str},
    "error": _STATUS,
    "response": dict,
}
_SLICES = {"nodeCount": int, "nodeIdPrefix": str}
QUEUED_RESOURCE = {
    "name": str,
    "createTime": str,
    "reservationName": str,
    "tpu": {
        "nodeSpec": [
            {
                "parent": str,
                "nodeId": str,
                "multisliceParams": _SLICES,
                "multiNodeParams": _SLICES,
                "node": NODE,
            }
        ]
    },
    "spot": dict,
    "guaranteed": dict,
    "queueingPolicy": dict,
    "state": {"state": str, "stateInitiator": str, "failedData": {"error": _STATUS}},
}
LOCATION = {"name": str, "locationId": str, "displayName": str, "labels": MapOf(str)}
GUEST_ATTRIBUTES = {
    "guestAttributes": [
        {
            "queryPath": str,
            "queryValue": {"items": [{"namespace": str, "key": str, "value": str}]},
        }
    ]
}


def _page(key: str, item: Any) -> dict[str, Any]:
    return {key: [item], "nextPageToken": str, "unreachable": [str]}


# The answer of each call, by the IAM permission the call needs (what the client names it by),
# or by the method's name where two calls need the same permission.
ANSWERS: dict[str, Any] = {
    "nodes.getGuestAttributes": GUEST_ATTRIBUTES,
    "tpu.locations.list": _page("locations", LOCATION),
    "tpu.nodes.list": _page("nodes", NODE),
    "tpu.nodes.get": NODE,
    "tpu.queuedResources.list": _page("queuedResources", QUEUED_RESOURCE),
    "tpu.queuedResources.get": QUEUED_RESOURCE,
    "tpu.operations.get": OPERATION,
    **{
        f"tpu.{verb}": OPERATION
        for verb in (
            "nodes.create",
            "nodes.delete",
            "nodes.start",
            "nodes.stop",
            "nodes.update",
            "queuedResources.create",
            "queuedResources.delete",
        )
    },
}


def _kind(value: Any) -> str:
    """What a JSON value is, in words, with the value (shortened)."""
    words = {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}
    kind = next((w for t, w in words.items() if isinstance(value, t)), "a number")
    text = json.dumps(value, sort_keys=True, default=str)
    return f"{kind} ({text[:60]}{'...' if len(text) > 60 else ''})"


def shape_problem(value: Any, shape: Any, where: str) -> str:
    """Where ``value`` (at ``where``) is not of ``shape``, in words; ``''`` when it is."""
    if value is None:
        return ""
    if shape is int:
        digits = isinstance(value, str) and value.isascii() and value.lstrip("-").isdigit()
        fits = (isinstance(value, int) and not isinstance(value, bool)) or digits
        return "" if fits else f"{where} is {_kind(value)}, not {_KINDS[int]}"
    if shape in (str, bool, dict):
        return "" if isinstance(value, shape) else f"{where} is {_kind(value)}, not {_KINDS[shape]}"
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} is {_kind(value)}, not a list"
        for index, item in enumerate(value):
            found = shape_problem(item, shape[0], f"{where}[{index}]")
            if found:
                return found
        return ""
    if not isinstance(value, dict):
        return f"{where} is {_kind(value)}, not an object"
    if isinstance(shape, MapOf):
        fields = {key: shape.shape for key in value}
    else:
        fields = {key: sub for key, sub in shape.items() if key in value}
    for key, sub in fields.items():
        found = shape_problem(value[key], sub, f"{where}.{key}" if where else str(key))
        if found:
            return found
    return ""


def answer_problem(data: Any, permission: str) -> str:
    """Where the decoded answer of the call that needs ``permission`` is not of its shape;
    ``''`` when it is (or when the call has no shape here, which must still be an object)."""
    if not isinstance(data, dict):
        return f"the answer is {_kind(data)}, not an object"
    return shape_problem(data, ANSWERS.get(permission, dict), "")
