"""What the TPU API client accepts as an answer: the API's shapes (tpu_api_shapes.answer_problem,
checked once in the transport for every call). Where it sends its token is
test_tpu_api_trust.py.

Bad answers are made with the emulator (tests/module_harness.py serve, tools/tpu_emulator
serve) by rewriting what it sends; each must end in a message that names the call and the field,
never a Python traceback, in the client, the three TPU modules and the inventory plugin.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuApiError, TpuClient
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api_shapes import answer_problem

from tests.module_harness import ZONE, inventory_source, parse_inventory, run_module, serve, state
from tools.tpu_emulator.testing import node

# permission of the call, the answer, where the message says it is wrong
SHAPES_REFUSED = [
    ("tpu.nodes.list", {"nodes": ["pod-a"]}, 'nodes[0] is a string ("pod-a"), not an object'),
    ("tpu.nodes.list", {"nodes": {"name": "x"}}, "nodes is an object"),
    ("tpu.nodes.list", {"nodes": [], "nextPageToken": 7}, "nextPageToken is a number (7), not a"),
    ("tpu.nodes.list", {"unreachable": "us-east1-d"}, "unreachable is a string"),
    ("tpu.nodes.get", [{"name": "x"}], 'the answer is a list ([{"name": "x"}]), not an object'),
    ("tpu.nodes.get", "READY", 'the answer is a string ("READY")'),
    ("tpu.nodes.get", {"networkEndpoints": ["10.0.0.2"]}, "networkEndpoints[0] is a string"),
    ("tpu.nodes.get", {"networkEndpoints": [{"accessConfig": []}]}, "accessConfig is a list"),
    ("tpu.nodes.get", {"labels": {"team": ["a"]}}, "labels.team is a list"),
    ("tpu.nodes.get", {"labels": ["team"]}, "labels is a list"),
    ("tpu.nodes.get", {"schedulingConfig": {"spot": "false"}}, "spot is a string"),
    ("tpu.nodes.get", {"state": {"state": "READY"}}, "state is an object"),
    ("tpu.nodes.get", {"acceleratorConfig": "v4"}, "acceleratorConfig is a string"),
    ("tpu.nodes.get", {"networkEndpoints": [{"port": "x8470"}]}, "port is a string"),
    ("tpu.nodes.create", {"name": "op", "done": "yes"}, 'done is a string ("yes"), not a boolean'),
    ("tpu.operations.get", {"error": ["boom"]}, "error is a list"),
    ("tpu.operations.get", {"metadata": {"target": 5}}, "metadata.target is a number"),
    ("tpu.queuedResources.get", {"tpu": {"nodeSpec": ["x"]}}, "tpu.nodeSpec[0] is a string"),
    (
        "tpu.queuedResources.get",
        {"tpu": {"nodeSpec": [{"multisliceParams": {"nodeCount": "two"}}]}},
        "tpu.nodeSpec[0].multisliceParams.nodeCount is a string",
    ),
    ("tpu.queuedResources.list", {"queuedResources": [[]]}, "queuedResources[0] is a list"),
    ("tpu.locations.list", {"locations": [{"locationId": ["z"]}]}, "locationId is a list"),
    ("tpu.nodes.list", {"nodes": ["a" * 200]}, '("aaaaaaaaaaaaaaaaaaaa'),
]
SHAPES_ACCEPTED = [
    ("tpu.nodes.get", {"state": "READY", "extraField": [1, {"x": None}], "id": "123"}),
    ("tpu.nodes.get", {"networkEndpoints": None, "labels": None, "id": 4}),
    ("tpu.nodes.list", {}),
    ("tpu.operations.get", {"name": "op", "done": True, "response": {"@type": "x"}}),
    ("tpu.something.new", {"anything": ["goes"]}),
]


@pytest.mark.parametrize(
    ("permission", "data", "where"), SHAPES_REFUSED, ids=[w[:40] for _, _, w in SHAPES_REFUSED]
)
def test_answers_of_another_shape_are_named(permission: str, data: Any, where: str) -> None:
    assert where in answer_problem(data, permission)


@pytest.mark.parametrize(("permission", "data"), SHAPES_ACCEPTED)
def test_answers_of_the_api_shape_pass(permission: str, data: Any) -> None:
    assert answer_problem(data, permission) == ""


def rewrite(api: Any, path_part: str, change: Callable[[Any], Any]) -> None:
    """Have the emulator send ``change(answer)`` instead of its answer, for paths with
    ``path_part`` (what a proxy that rewrites answers, or another service, would do)."""
    real = api.emulator.dispatch

    def dispatch(method: str, path: str, *args: Any) -> tuple[int, Any]:
        status, payload = real(method, path, *args)
        if path_part in path and status == 200:
            payload = change(payload)
        return status, payload

    api.emulator.dispatch = dispatch


def _each_node(change: Callable[[dict], dict]) -> Callable[[Any], Any]:
    """Change a node answer, or every node of a list answer."""

    def apply(payload: Any) -> Any:
        if "nodes" in payload:
            return {**payload, "nodes": [change(n) for n in payload["nodes"]]}
        return change(payload) if "acceleratorType" in payload else payload

    return apply


NODE_LIST_STRING = (lambda p: {**p, "nodes": ["pod-a"]} if "nodes" in p else p, "nodes[0] is a")
ARRAY = (lambda p: [p], "the answer is a list")
ENDPOINT_STRING = (
    _each_node(lambda n: {**n, "networkEndpoints": ["10.0.0.2"]}),
    "networkEndpoints[0] is a string",
)
SCHEDULING_LIST = (_each_node(lambda n: {**n, "schedulingConfig": ["spot"]}), "is a list")
NETWORK_LIST = (_each_node(lambda n: {**n, "networkConfig": [1]}), "networkConfig is a list")
BAD_NODES = [NODE_LIST_STRING, ARRAY, ENDPOINT_STRING, SCHEDULING_LIST, NETWORK_LIST]
CREATE = {"accelerator_type": "v4-16", "runtime_version": "tpu-ubuntu2204-base"}
INFO = ("tpu_node_info", {"zones": [ZONE]}, "nodes.list")
NODE = ("tpu_node", {"name": "pod-a", "zone": ZONE, **CREATE}, "nodes.get")
GONE = ("tpu_node", {"name": "pod-a", "zone": ZONE, "state": "absent"}, "nodes.get")
MODULE_CASES = [
    (*module, *bad)
    for module in (INFO, NODE, GONE)
    for bad in BAD_NODES
    if not (module[2] == "nodes.get" and bad is NODE_LIST_STRING)
]


@pytest.mark.parametrize(
    ("module", "args", "call", "change", "where"),
    MODULE_CASES,
    ids=[f"{m}-{a.get('state', 'present')}-{w}" for m, a, _, _, w in MODULE_CASES],
)
def test_modules_fail_with_the_call_and_the_field(
    module: str, args: dict, call: str, change: Callable, where: str
) -> None:
    with serve(state((ZONE, [node("pod-a", "v4-16")]))) as api:
        rewrite(api, "/nodes", change)
        outcome = run_module(module, api.auth(**args))
        assert api.mutating_calls() == {}, "nothing is changed after a bad answer"
    assert outcome.failed and outcome["reason"] == "BAD_RESPONSE", outcome.result
    assert f"The TPU API's answer to {call} (GET http://127.0.0.1:" in outcome.msg, outcome.msg
    assert where in outcome.msg and "Check that base_url" in outcome.msg, outcome.msg


def test_a_queued_resource_of_another_shape_is_named() -> None:
    def change(payload: Any) -> Any:
        return {**payload, "state": "ACTIVE"} if "tpu" in payload else payload

    with serve(state()) as api:
        body = {"name": "qr-a", "zone": ZONE, **CREATE, "wait": False}
        assert not run_module("tpu_queued_resource", api.auth(**body)).failed
        rewrite(api, "/queuedResources/", change)
        outcome = run_module("tpu_queued_resource", api.auth(**body))
    assert outcome.failed and "answer to queuedResources.get" in outcome.msg, outcome.result
    assert 'state is a string ("ACTIVE"), not an object' in outcome.msg, outcome.msg


@pytest.mark.parametrize(("change", "where"), BAD_NODES, ids=[w for _, w in BAD_NODES])
def test_the_inventory_fails_with_the_call_and_the_field(
    tmp_path: Path, change: Callable, where: str
) -> None:
    with serve(state((ZONE, [node("pod-a", "v4-16")]))) as api:
        rewrite(api, "/nodes", change)
        with pytest.raises(AnsibleError) as caught:
            parse_inventory(inventory_source(tmp_path, api.url))
    message = str(caught.value)
    assert "The TPU API's answer to nodes.list" in message and where in message, message


class _Deep:
    """A session whose one answer is JSON nested deeper than Python's json decodes."""

    def __init__(self) -> None:
        self.status_code = 200
        self.headers: dict[str, str] = {}
        self.content = b"[" * 100000 + b"]" * 100000

    def request(self, *args: Any, **kwargs: Any) -> _Deep:
        return self

    def json(self) -> Any:
        return json.loads(self.content)


def test_an_answer_nested_too_deep_is_not_json() -> None:
    client = TpuClient(None, base_url="http://127.0.0.1:9/v2", session=_Deep())
    with pytest.raises(TpuApiError, match="not JSON") as caught:
        client.get_node("p", "z", "n")
    assert caught.value.reason == "BAD_RESPONSE"
