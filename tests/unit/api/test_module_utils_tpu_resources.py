"""Pure functions of plugins/module_utils/tpu_resources.py: specs, differences, filters."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from tests.module_harness import REPO

# tests.module_harness installs the collection loader that makes ansible_collections importable.
r = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources")
assert REPO.joinpath("plugins", "module_utils", "tpu_resources.py").samefile(r.__file__)

NODE: dict[str, Any] = {
    "name": "projects/p/locations/us-central2-b/nodes/pod-a",
    "acceleratorType": "v4-16",
    "runtimeVersion": "tpu-ubuntu2204-base",
    "networkConfig": {
        "network": "projects/p/global/networks/default",
        "subnetwork": "projects/p/regions/us-central2/subnetworks/default",
        "enableExternalIps": True,
    },
    "schedulingConfig": {"spot": True},
    "serviceAccount": {"email": "sa@p.iam.gserviceaccount.com", "scope": ["a", "b"]},
    "labels": {"team": "vision"},
    "metadata": {"ssh-keys": "tpu:ssh-ed25519 AAAA k"},
    "tags": ["tpu", "ssh"],
    "networkEndpoints": [
        {"ipAddress": "10.0.0.2", "accessConfig": {"externalIp": "203.0.113.2"}},
        {"ipAddress": "10.0.0.3"},
    ],
    "state": "READY",
}

SAME = [
    {},
    {"accelerator_type": "V4-16"},
    {"network": "default", "subnetwork": "default"},
    {"network": "projects/p/global/networks/default"},
    {"tags": ["ssh", "tpu"]},
    {"spot": True, "preemptible": False, "reserved": False, "enable_external_ips": True},
    {"service_account": {"email": None, "scopes": ["b", "a"]}},
    {"labels": {"team": "vision"}, "metadata": {"ssh-keys": "tpu:ssh-ed25519 AAAA k"}},
]


@pytest.mark.parametrize("wanted", SAME, ids=[str(w) for w in SAME])
def test_equivalent_specs_have_no_difference(wanted: dict[str, Any]) -> None:
    assert r.spec_differences(wanted, NODE) == []


DIFFERENT = [
    ({"accelerator_type": "v4-8"}, "accelerator_type", "v4-16", "v4-8", False),
    ({"runtime_version": "v2-alpha"}, "runtime_version", "tpu-ubuntu2204-base", "v2-alpha", False),
    ({"network": "other"}, "network", "projects/p/global/networks/default", "other", False),
    ({"enable_external_ips": False}, "enable_external_ips", True, False, False),
    ({"spot": False}, "spot", True, False, False),
    ({"reserved": True}, "reserved", False, True, False),
    (
        {"service_account": {"email": "x@y"}},
        "service_account.email",
        "sa@p.iam.gserviceaccount.com",
        "x@y",
        False,
    ),
    ({"labels": {}}, "labels", {"team": "vision"}, {}, True),
    ({"labels": {"team": 7}}, "labels", {"team": "vision"}, {"team": "7"}, True),
    (
        {"metadata": {"startup-script": "x"}},
        "metadata",
        NODE["metadata"],
        {"startup-script": "x"},
        True,
    ),
    ({"tags": ["tpu"]}, "tags", ["tpu", "ssh"], ["tpu"], True),
    ({"description": "pod"}, "description", "", "pod", True),
]


@pytest.mark.parametrize(
    ("wanted", "field", "current", "want", "mutable"), DIFFERENT, ids=[d[1] for d in DIFFERENT]
)
def test_each_difference_is_named_with_both_values(
    wanted: dict[str, Any], field: str, current: Any, want: Any, mutable: bool
) -> None:
    assert r.spec_differences(wanted, NODE) == [
        {"field": field, "current": current, "wanted": want, "mutable": mutable}
    ]


def test_body_and_spec_round_trip() -> None:
    spec = r.node_spec(NODE)
    body = r.node_body(spec)
    assert body["acceleratorType"] == "v4-16"
    assert body["networkConfig"]["enableExternalIps"] is True
    assert body["schedulingConfig"] == {"spot": True}
    assert body["serviceAccount"] == {"email": "sa@p.iam.gserviceaccount.com", "scope": ["a", "b"]}
    assert r.spec_differences(spec, NODE) == []


def test_body_leaves_out_unset_options() -> None:
    assert r.node_body({"accelerator_type": "v4-8", "spot": False, "labels": None}) == {
        "acceleratorType": "v4-8"
    }


def test_workers_have_both_addresses_or_none() -> None:
    assert r.node_workers(NODE) == [
        {"worker_id": 0, "internal_ip": "10.0.0.2", "external_ip": "203.0.113.2"},
        {"worker_id": 1, "internal_ip": "10.0.0.3", "external_ip": None},
    ]


def test_describe_differences_lists_fields_and_values() -> None:
    text = r.describe_differences(r.spec_differences({"accelerator_type": "v4-8"}, NODE))
    assert text == "accelerator_type: 'v4-16' -> 'v4-8'"


@pytest.mark.parametrize(
    ("current", "wanted", "merged"),
    [
        ("", "tpu:k1 tpu", "tpu:k1 tpu"),
        ("alice:a1 alice", "tpu:k1 tpu", "alice:a1 alice\ntpu:k1 tpu"),
        ("tpu:old tpu\nalice:a1 alice", "tpu:k1 tpu", "tpu:k1 tpu\nalice:a1 alice"),
        ("tpu:old\nalice:a1\ntpu:older", "tpu:k1\ntpu:k2", "tpu:k1\ntpu:k2\nalice:a1"),
        ("alice:a1\n\n bob:b1 ", "", "alice:a1\nbob:b1"),
        ("alice:a1\ntpu:k1", "tpu:k1", "alice:a1\ntpu:k1"),
    ],
)
def test_merge_ssh_keys_replaces_only_the_named_users(current, wanted, merged) -> None:
    assert r.merge_ssh_keys(current, wanted) == merged
    # Merging again changes nothing (a re-run of provision is a no-op).
    assert r.merge_ssh_keys(merged, wanted) == merged


def test_merge_metadata_keeps_keys_the_task_does_not_name() -> None:
    current = {"ssh-keys": "alice:a1", "startup-script": "echo old", "team": "x"}
    got = r.merge_metadata(current, {"ssh-keys": "tpu:k1", "startup-script": "echo new"})
    assert got == {"ssh-keys": "alice:a1\ntpu:k1", "startup-script": "echo new", "team": "x"}


def test_worker_addresses_of_workers_nodes_and_module_results_each_once() -> None:
    w0 = {"worker_id": 0, "internal_ip": "10.0.0.2", "external_ip": "34.1.1.1"}
    w1 = {"worker_id": 1, "internal_ip": "10.0.0.3", "external_ip": None}
    node_result = {"changed": True, "updated_fields": [], "workers": [w0, w1]}
    queued_result = {"changed": True, "nodes": [{"name": "pod-b", "workers": [
        {"worker_id": 0, "internal_ip": "10.0.1.2", "external_ip": ""}]}]}  # fmt: skip
    skipped = {"skipped": True, "changed": False, "item": {"node": {"workers": [w0]}}}
    found = [[w1], [node_result, skipped], [queued_result], "not a worker", None]
    assert r.worker_addresses(found) == ["10.0.0.3", "10.0.0.2", "34.1.1.1", "10.0.1.2"]
    assert r.worker_addresses([]) == [] and r.worker_addresses(None) == []


def test_the_worker_addresses_filter_is_the_function() -> None:
    plugin = importlib.import_module(
        "ansible_collections.cloudtpu.pod.plugins.filter.worker_addresses"
    )
    assert plugin.FilterModule().filters() == {"worker_addresses": r.worker_addresses}


def test_node_metadata_adds_the_users_key_once_and_the_startup_script() -> None:
    mine = {"ssh-keys": " bob:ssh-ed25519 AAAA bob \n\ntpu:ssh-ed25519 BBBB me", "x": "1"}
    got = r.node_metadata(mine, "tpu", "ssh-ed25519 BBBB me")
    assert got == {"ssh-keys": "bob:ssh-ed25519 AAAA bob\ntpu:ssh-ed25519 BBBB me", "x": "1"}
    assert mine["ssh-keys"].startswith(" bob")  # the user's own mapping is left as it was
    assert r.node_metadata({}, "tpu", "ssh-rsa CCCC") == {"ssh-keys": "tpu:ssh-rsa CCCC"}
    assert r.node_metadata(mine, "tpu", "") == mine  # no key: ssh-keys as given
    with_script = r.node_metadata({}, "tpu", "", "#!/bin/bash\n")
    assert with_script == {"startup-script": "#!/bin/bash\n"}


def test_the_node_metadata_filter_is_the_function() -> None:
    plugin = importlib.import_module(
        "ansible_collections.cloudtpu.pod.plugins.filter.node_metadata"
    )
    assert plugin.FilterModule().filters() == {"node_metadata": r.node_metadata}
