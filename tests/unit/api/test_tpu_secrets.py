"""The secret values of a node (plugins/module_utils/tpu_secrets.py): which they are, their
hidden markers, and that the modules keep them out of results, messages and their log."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_secrets as s

from tests.module_harness import ZONE, Api, run_module

REPO = Path(__file__).resolve().parents[3]
CANARY = "canary-5d0e9b2a41"
PULL = (REPO / "playbooks/templates/pull_startup.sh.j2").read_text(encoding="utf-8")
SCRIPT = PULL.replace("{{ _pull.env -}}", f"export GCP_ACCESS_TOKEN={CANARY}\n")
NODE = {
    "name": "pod-s",
    "zone": ZONE,
    "accelerator_type": "v4-8",
    "runtime_version": "tpu-ubuntu2204-base",
    "metadata": {"ssh-keys": "tpu:ssh-ed25519 AAAA tpu", "startup-script": SCRIPT},
    "poll_interval": 0.05,
    "timeout": 30,
}


def shows(value: object) -> bool:
    return CANARY in json.dumps(value)


def test_the_secret_keys_are_the_scripts_and_their_marker_tells_only_key_length_and_pull() -> None:
    assert s.SECRET_KEYS == ("startup-script", "shutdown-script")
    hidden = s.marker("startup-script", SCRIPT)
    assert (
        hidden
        == f"<hidden startup-script, {len(SCRIPT)} characters, the cloudtpu.pod pull bootstrap>"
    )
    assert s.marker("shutdown-script", "echo bye") == "<hidden shutdown-script, 8 characters>"
    assert s.is_marker(hidden) and not s.is_marker(SCRIPT) and not s.is_marker(None)
    assert s.is_pull_bootstrap(SCRIPT) and s.is_pull_bootstrap(hidden)
    assert not s.is_pull_bootstrap(s.marker("startup-script", "echo hi"))
    assert not s.is_pull_bootstrap("#!/bin/bash\necho cloudtpu.pod pull bootstrap")


def test_hide_walks_mappings_and_lists_and_leaves_the_rest() -> None:
    value = {
        "metadata": {"ssh-keys": "tpu:key", "startup-script": SCRIPT, "x": "1"},
        "nodes": [{"spec": {"metadata": {"shutdown-script": "echo bye"}}}],
        "differences": [{"field": "metadata", "current": {"startup-script": "old one"}}],
        "count": 2,
    }
    hidden = s.hide(value)
    assert not shows(hidden) and "old one" not in json.dumps(hidden)
    assert hidden["metadata"]["ssh-keys"] == "tpu:key" and hidden["metadata"]["x"] == "1"
    assert s.is_marker(hidden["nodes"][0]["spec"]["metadata"]["shutdown-script"])
    assert hidden["count"] == 2
    assert s.hide(hidden) == hidden  # markers stay as they are
    assert value["metadata"]["startup-script"] == SCRIPT  # the input is not changed
    assert s.secret_values(value) == {
        SCRIPT: s.marker("startup-script", SCRIPT),
        "echo bye": s.marker("shutdown-script", "echo bye"),
        "old one": s.marker("startup-script", "old one"),
    }


def test_reveal_takes_the_value_of_the_same_key_and_length_from_the_first_source() -> None:
    wanted = {"ssh-keys": "k", "startup-script": s.marker("startup-script", SCRIPT)}
    other = {"startup-script": "echo different"}
    got, problems = s.reveal(
        wanted, [("the node", other), ("the journal", {"startup-script": SCRIPT})]
    )
    assert problems == [] and got == {"ssh-keys": "k", "startup-script": SCRIPT}
    got, problems = s.reveal(wanted, [("the node", other)])
    assert got["startup-script"] == wanted["startup-script"]
    assert len(problems) == 1 and "looked at: the node" in problems[0] and not shows(problems)
    _, problems = s.reveal({"shutdown-script": wanted["startup-script"]}, [])
    assert "hidden marker of startup-script" in problems[0]
    assert s.reveal(None, []) == (None, [])


def test_a_hiding_module_masks_its_arguments_in_messages_and_its_log() -> None:
    spec = {"metadata": {"type": "dict"}}
    logged: list[str] = []
    with (
        patch_module_args({"metadata": {"startup-script": SCRIPT}}),
        mock.patch.object(
            basic.AnsibleModule, "log", lambda self, msg, log_args=None: logged.append(msg)
        ),
    ):
        module = s.HidingModule(argument_spec=spec)
    assert logged and not any(CANARY in line for line in logged), logged
    assert SCRIPT in module.no_log_values  # Ansible masks it wherever it would still appear
    assert module.params["metadata"]["startup-script"] == SCRIPT  # the module itself has it
    assert module.scrub(f"failed: {SCRIPT}") == f"failed: {s.marker('startup-script', SCRIPT)}"


def test_tpu_node_keeps_the_script_out_of_its_result_diff_and_arguments(api: Api) -> None:
    created = run_module("tpu_node", api.auth(**NODE), diff=True)
    assert not created.failed, created.msg
    assert api.node("pod-s")["metadata"]["startup-script"] == SCRIPT  # the node has it
    assert not shows(created.result), created.result
    assert s.is_pull_bootstrap(created["node"]["metadata"]["startup-script"])
    assert s.is_marker(created["invocation"]["module_args"]["metadata"]["startup-script"])

    changed = dict(NODE, metadata={"startup-script": SCRIPT + "\necho again"})
    again = run_module("tpu_node", api.auth(**changed), diff=True)
    assert not again.failed and again["updated_fields"] == ["metadata"], again.msg
    assert not shows(again.result) and "echo again" not in json.dumps(again.result)


def test_tpu_node_info_and_tpu_queued_resource_return_markers(api: Api) -> None:
    run_module("tpu_node", api.auth(**NODE))
    info = run_module("tpu_node_info", api.auth(zones=[ZONE], name="pod-s"))
    assert not info.failed and len(info["nodes"]) == 1, info.msg
    assert not shows(info.result), info.result
    node = info["nodes"][0]
    for metadata in (node["spec"]["metadata"], node["resource"]["metadata"]):
        assert metadata["ssh-keys"] == NODE["metadata"]["ssh-keys"]
        assert metadata["startup-script"] == s.marker("startup-script", SCRIPT)

    request = {
        "name": "qr-s",
        "zone": ZONE,
        "tier": "spot",
        "accelerator_type": "v4-8",
        "metadata": {"startup-script": SCRIPT},
        "poll_interval": 0.05,
        "timeout": 30,
    }
    queued = run_module("tpu_queued_resource", api.auth(**request))
    assert not queued.failed and queued["state"] == "ACTIVE", queued.msg
    assert api.node("qr-s")["metadata"]["startup-script"] == SCRIPT
    assert not shows(queued.result), queued.result
    assert s.is_marker(queued["nodes"][0]["spec"]["metadata"]["startup-script"])
