# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Queued resource requests (TPU v2 API QueuedResource): the request body for the module's
options, the node ids a request names and its state, the differences with an existing request,
the body that creates a request again with the spec the API reports, and the progress record of
a request through its states."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import (
    node_body,
    short_name,
)

NODE_FIELDS = (
    "accelerator_type",
    "runtime_version",
    "description",
    "network",
    "subnetwork",
    "enable_external_ips",
    "labels",
    "metadata",
    "service_account",
    "tags",
)
TIERS = ("on_demand", "spot", "guaranteed", "flex_start")
# States after which the service does nothing more for the request; a re-queue deletes and
# creates it again.
GIVEN_UP = ("FAILED", "SUSPENDING", "SUSPENDED")
# What a request created again keeps of the one the API reports (the rest is output only).
REQUEST_FIELDS = (
    "tpu",
    "spot",
    "guaranteed",
    "bestEffort",
    "queueingPolicy",
    "reservationName",
    "runDuration",
)
# queueingPolicy fields for the module's validity window options.
WINDOW_FIELDS = {
    "valid_until_duration": "validUntilDuration",
    "valid_until_time": "validUntilTime",
    "valid_after_duration": "validAfterDuration",
    "valid_after_time": "validAfterTime",
}
# google.protobuf.Duration and Timestamp in JSON, as the API takes them (\Z: "3600s\n" fails).
DURATION_RE = re.compile(r"^[0-9]{1,9}(\.[0-9]{1,9})?s\Z")
TIMESTAMP_RE = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})\Z"
)


def schedule_problems(params: Mapping[str, Any]) -> list[str]:
    """Why the tier, run duration and validity window options cannot make a request."""
    found = []
    for name in ("max_run_duration", "valid_until_duration", "valid_after_duration"):
        value = params.get(name)
        if value is not None and not DURATION_RE.match(str(value)):
            found.append(
                f"{name} is {value!r}: not a duration; allowed: seconds with an 's', such as "
                "'3600s' or '1.5s'."
            )
    for name in ("valid_until_time", "valid_after_time"):
        value = params.get(name)
        if value is not None and not TIMESTAMP_RE.match(str(value)):
            found.append(
                f"{name} is {value!r}: not a time; allowed: RFC 3339 UTC such as "
                "'2030-01-31T08:00:00Z'."
            )
    for pair in (
        ("valid_until_duration", "valid_until_time"),
        ("valid_after_duration", "valid_after_time"),
    ):
        if params.get(pair[0]) is not None and params.get(pair[1]) is not None:
            found.append(f"{pair[0]} and {pair[1]} are mutually exclusive; give one.")
    tier = params.get("tier")
    if tier == "flex_start" and not params.get("max_run_duration"):
        found.append(
            "tier flex_start needs max_run_duration (how long the nodes may run, such as "
            "'14400s'); the service deletes them after it."
        )
    if tier != "flex_start" and params.get("max_run_duration"):
        found.append(f"max_run_duration is for tier flex_start only; tier is {tier!r}.")
    if tier == "flex_start" and params.get("reservation_name"):
        found.append("tier flex_start takes no reservation_name; it is capacity without one.")
    return found


def request_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """The QueuedResource JSON for the module's options."""
    parent = "projects/{}/locations/{}".format(params["project"], params["zone"])
    node = node_body({field: params.get(field) for field in NODE_FIELDS})
    if params["tier"] == "flex_start":
        node.setdefault("schedulingConfig", {})["provisioningModel"] = "FLEX_START"
    node_spec: dict[str, Any] = {"parent": parent, "node": node}
    if params["node_count"] > 1:
        node_spec["multisliceParams"] = {
            "nodeCount": params["node_count"],
            "nodeIdPrefix": params.get("node_prefix") or params["name"],
        }
    else:
        node_spec["nodeId"] = params.get("node_id") or params["name"]
    body: dict[str, Any] = {"tpu": {"nodeSpec": [node_spec]}}
    if params["tier"] == "spot":
        body["spot"] = {}
    elif params["tier"] == "guaranteed":
        body["guaranteed"] = {}
    elif params["tier"] == "flex_start":
        body["runDuration"] = {"maxRunDuration": params["max_run_duration"]}
    if params.get("reservation_name"):
        body["reservationName"] = params["reservation_name"]
    window = {key: params[option] for option, key in WINDOW_FIELDS.items() if params.get(option)}
    if window:
        body["queueingPolicy"] = window
    return body


def multislice_node_ids(
    queued_resource_id: str, node_id: str | None, node_count: int, node_prefix: str | None
) -> list[str]:
    """Node ids a queued resource creates: one node, or ``<prefix>-0`` .. ``<prefix>-(N-1)``."""
    if node_count <= 1:
        return [node_id or queued_resource_id]
    prefix = node_prefix or queued_resource_id
    return [f"{prefix}-{index}" for index in range(node_count)]


def queued_resource_node_ids(qr: Mapping[str, Any]) -> list[str]:
    """Node ids named by a queued resource's ``tpu.nodeSpec`` (multislice specs expanded)."""
    ids: list[str] = []
    qr_id = short_name(qr.get("name"))
    for spec in (qr.get("tpu") or {}).get("nodeSpec") or []:
        if not isinstance(spec, Mapping):
            continue
        multi = spec.get("multisliceParams") or spec.get("multiNodeParams") or {}
        if multi:
            ids.extend(
                multislice_node_ids(
                    qr_id, None, int(multi.get("nodeCount") or 0), multi.get("nodeIdPrefix")
                )
            )
        elif spec.get("nodeId"):
            ids.append(str(spec["nodeId"]))
    return ids


def queued_resource_state(qr: Mapping[str, Any]) -> tuple[str, str]:
    """(state word, explanation) of a queued resource; the explanation is empty unless it says
    why the request failed or was suspended."""
    state = qr.get("state") or {}
    word = str(state.get("state") or "STATE_UNSPECIFIED")
    why = ""
    failed = state.get("failedData") or {}
    error = failed.get("error") if isinstance(failed, Mapping) else None
    if isinstance(error, Mapping) and error.get("message"):
        why = str(error["message"])
    elif state.get("stateInitiator"):
        why = f"state set by {state['stateInitiator']}"
    return word, why


def tier_of(qr: Mapping[str, Any]) -> str:
    """The module's tier word for a QueuedResource."""
    if "spot" in qr:
        return "spot"
    if "guaranteed" in qr:
        return "guaranteed"
    for spec in (qr.get("tpu") or {}).get("nodeSpec") or []:
        scheduling = (spec.get("node") or {}).get("schedulingConfig") or {}
        if scheduling.get("provisioningModel") == "FLEX_START":
            return "flex_start"
    if "runDuration" in qr:
        return "flex_start"
    return "on_demand"


def differences(params: Mapping[str, Any], qr: Mapping[str, Any]) -> list[str]:
    """What differs between the task and an existing queued resource, as text."""
    found = []
    if tier_of(qr) != params["tier"]:
        found.append(f"tier: {tier_of(qr)!r} -> {params['tier']!r}")
    wanted_ids = multislice_node_ids(
        params["name"], params.get("node_id"), params["node_count"], params.get("node_prefix")
    )
    current_ids = queued_resource_node_ids(qr)
    if current_ids != wanted_ids:
        found.append(f"nodes: {current_ids} -> {wanted_ids}")
    specs = (qr.get("tpu") or {}).get("nodeSpec") or [{}]
    node = specs[0].get("node") or {}
    for field, key in (
        ("accelerator_type", "acceleratorType"),
        ("runtime_version", "runtimeVersion"),
    ):
        want = params.get(field)
        if want is not None and str(node.get(key, "")).lower() != str(want).lower():
            found.append(f"{field}: {node.get(key, '')!r} -> {want!r}")
    return found


def recreate_body(qr: Mapping[str, Any]) -> dict[str, Any]:
    """The body that creates ``qr`` again: the request as the API reports it, without the
    output-only fields (name, createTime, state)."""
    return {key: qr[key] for key in REQUEST_FIELDS if key in qr}


class Progress:
    """States a request went through, and one entry per attempt (create or re-queue)."""

    def __init__(self) -> None:
        self.states: list[str] = []
        self.attempts: list[dict[str, Any]] = []

    def saw(self, word: str) -> None:
        if not self.states or self.states[-1] != word:
            self.states.append(word)

    def attempt(self, why: str) -> None:
        self.attempts.append(
            {"attempt": len(self.attempts) + 1, "why": why, "state": "", "reason": ""}
        )

    def ended(self, word: str, reason: str = "") -> None:
        if self.attempts:
            self.attempts[-1].update(state=word, reason=reason)


PROVISION_METHODS = ("auto", "node", "queued_resource")


def provision_plan(method: Any, tier: Any, reservation: Any = "") -> dict[str, str]:
    """How provision.yml asks for capacity: ``{method, why, problem}``.

    ``auto`` takes a queued resource where the capacity calls for one (spot, guaranteed,
    flex-start or a reservation: the service queues such requests and fulfils them when capacity
    is free) and a plain node for on-demand capacity (created at once or refused). ``problem``
    is one sentence when the inputs cannot work together, else ''.
    """
    method = str(method or "auto").strip().lower()
    tier = str(tier or "on_demand").strip().lower()
    reservation = str(reservation or "").strip()
    plan = {"method": method, "why": "", "problem": ""}
    if method not in PROVISION_METHODS:
        plan["problem"] = (
            f"tpu_provision_method is {method!r}; allowed: {', '.join(PROVISION_METHODS)}."
        )
        return plan
    if tier not in TIERS:
        plan["problem"] = f"tpu_provision_tier is {tier!r}; allowed: {', '.join(TIERS)}."
        return plan
    queued_for = tier if tier != "on_demand" else ("reservation" if reservation else "")
    if method == "auto":
        plan["method"] = "queued_resource" if queued_for else "node"
        plan["why"] = (
            f"{queued_for} capacity is requested through a queued resource"
            if queued_for
            else "on-demand capacity is created as plain nodes"
        )
    else:
        how = "a queued resource" if method == "queued_resource" else "plain nodes"
        plan["why"] = (
            f"{tier} capacity is requested through {how}: tpu_provision_method is {method}"
        )
    if plan["method"] == "node" and (tier in ("guaranteed", "flex_start") or reservation):
        plan["problem"] = (
            f"tpu_provision_tier {tier}{' with a reservation' if reservation else ''} needs a "
            "queued resource; set tpu_provision_method to auto or queued_resource."
        )
    return plan
