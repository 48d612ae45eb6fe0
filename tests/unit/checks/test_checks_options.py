"""Numeric options of the TPU modules and the tpu_vm inventory's configuration are refused
before any API call (module_utils/tpu_checks: OPTION_LIMITS; module_utils/tpu_inventory_checks:
states_problem, hostname_problem, config_problems).

The review found: timeout -5 created a node then failed; poll interval 'abc' (0.0 after a
playbook's ``| float``) polled 100 times a second; retries -3 silently became 1; ``states:
[RUNNING]`` gave zero hosts; unknown keys were ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleParserError
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_checks import (
    NODE_STATES,
    config_problems,
    hostname_problem,
    states_problem,
)

from tests.module_harness import ZONE, Api, parse_source, run_module, serve

MODULE_CASES = [
    ("tpu_node", {"timeout": -5}, "timeout", "a whole number from 1 to 604800"),
    ("tpu_node", {"poll_interval": 0.0}, "poll_interval", "a number from 0.05 to 3600"),
    ("tpu_node", {"retries": -3}, "retries", "a whole number from 1 to 100"),
    ("tpu_node", {"request_timeout": 0.0}, "request_timeout", "from 1 to 3600"),
    ("tpu_queued_resource", {"timeout": -5}, "timeout", "from 1 to 604800"),
    ("tpu_queued_resource", {"poll_interval": -1.0}, "poll_interval", "from 0.05"),
    ("tpu_queued_resource", {"retries": 0}, "retries", "from 1 to 100"),
    ("tpu_node_info", {"retries": -3}, "retries", "from 1 to 100"),
    ("tpu_node_info", {"page_size": 0}, "page_size", "from 1 to 1000"),
    ("tpu_node_info", {"retry_max_sleep": -2.0}, "retry_max_sleep", "from 0 to 600"),
]

BASE = {
    "tpu_node": {
        "name": "pod-a",
        "zone": ZONE,
        "accelerator_type": "v4-8",
        "runtime_version": "tpu-ubuntu2204-base",
    },
    "tpu_queued_resource": {
        "name": "qr-a",
        "zone": ZONE,
        "accelerator_type": "v4-8",
        "runtime_version": "tpu-ubuntu2204-base",
    },
    "tpu_node_info": {"zones": [ZONE]},
}


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    with serve() as emulator:
        yield emulator


def refusal(api: Api, module: str, bad: dict[str, Any]) -> str:
    """The message of ``module``'s failure on its BASE arguments with ``bad`` over them, which
    made no API call."""
    api.reset_calls()
    outcome = run_module(module, api.auth(**BASE[module], **bad))
    assert outcome.failed, outcome.result
    assert api.calls() == {}, f"API called before the options were checked: {api.calls()}"
    return outcome.msg


@pytest.mark.parametrize(
    ("module", "bad", "option", "allowed"),
    MODULE_CASES,
    ids=[f"{m}-{json.dumps(b)}" for m, b, _, _ in MODULE_CASES],
)
def test_module_refuses_before_any_api_call(
    api: Api, module: str, bad: dict[str, Any], option: str, allowed: str
) -> None:
    msg = refusal(api, module, bad)
    value = json.dumps(bad[option])
    assert msg.startswith(f"{option} is {value}: out of range; allowed: "), msg
    assert allowed in msg, msg
    assert api.node("pod-a") is None, "a node was created with a refused option"


def test_module_with_good_options_still_works(api: Api) -> None:
    outcome = run_module("tpu_node_info", api.auth(**BASE["tpu_node_info"], retries="3"))
    assert not outcome.failed, outcome.msg


STATES_REFUSED = [
    (["RUNNING"], '["RUNNING"] not API node states (a running node is READY)'),
    (["READY", "ACTIVE"], '["ACTIVE"] not API node states'),
    ("READY", "not a list"),
    ([1], "[1] not API node states"),
]


@pytest.mark.parametrize(
    ("value", "reason"), STATES_REFUSED, ids=[json.dumps(v) for v, _ in STATES_REFUSED]
)
def test_states_refused(value: Any, reason: str) -> None:
    message = states_problem(value, "states")
    assert message.startswith(f"states is {json.dumps(value)}: {reason}; allowed: "), message
    assert all(state in message for state in NODE_STATES), message


@pytest.mark.parametrize("value", [[], ["READY"], ["ready", "Preempted"], list(NODE_STATES)])
def test_states_accepted(value: list[str]) -> None:
    assert states_problem(value) == ""


HOSTNAMES_REFUSED = [
    ("{node} w{worker_id}", 'it gives "my-node w0", not a valid host name'),
    ("{node}:{worker_id}", 'it gives "my-node:0", not a valid host name'),
    ("{node}[{worker_id}]", 'it gives "my-node[0]", not a valid host name'),
    ("{node},{worker_id}", 'it gives "my-node,0", not a valid host name'),
    ("-{node}-{worker_id}", 'it gives "-my-node-0", not a valid host name'),
    ("{node}-w{worker_id}\n", 'it gives "my-node-w0\\n", not a valid host name'),
    ("{node}-{index}", "it uses {index}, no such field"),
    ("{node}-{worker_id", "not a format string"),
    ("{node}", "it must contain {worker_id}"),
    ("", "not a template"),
    (None, "not a template"),
]


@pytest.mark.parametrize(
    ("value", "reason"), HOSTNAMES_REFUSED, ids=[str(v) for v, _ in HOSTNAMES_REFUSED]
)
def test_hostname_refused(value: Any, reason: str) -> None:
    message = hostname_problem(value)
    assert message.startswith(f"hostname is {json.dumps(value)}: {reason}"), message
    assert "allowed: a format string over {node}, {worker_id}" in message, message


@pytest.mark.parametrize(
    "value", ["{node}-w{worker_id}", "{zone}.{node}.{worker_id}", "{project}_{node}_{worker_id}"]
)
def test_hostname_accepted(value: str) -> None:
    assert hostname_problem(value) == ""


KNOWN = ["projects", "states", "hostname", "retries", "page_size", "cache"]


def test_config_unknown_keys_list_the_allowed_ones() -> None:
    problems = config_problems({"plugin": "x", "project": "p", "zone": "z"}, KNOWN)
    allowed = "allowed: cache, hostname, page_size, plugin, projects, retries, states."
    assert problems == [f"unknown options project, zone; {allowed}"], problems


def test_config_collects_every_problem() -> None:
    config = {"plugin": "x", "states": ["RUNNING"], "hostname": "{node} {worker_id}", "retries": -3}
    problems = config_problems(config, KNOWN)
    assert [p.split(" ", 1)[0] for p in problems] == ["states", "hostname", "retries"], problems


def test_config_good() -> None:
    assert config_problems({"plugin": "x", "projects": ["p"], "states": ["READY"]}, KNOWN) == []


# -- the same through Ansible's inventory loader: the source is refused before any API call ------


INVENTORY_CASES = [
    ({"states": ["RUNNING"]}, r'states is \["RUNNING"\]: \["RUNNING"\] not API node states'),
    ({"zone": "us-central2-b"}, r"unknown option zone; allowed: .*projects"),
    ({"hostname": "{node} w{worker_id}"}, r'hostname is "\{node\} w\{worker_id\}": it gives'),
    ({"retries": -3}, r"retries is -3: out of range; allowed: a whole number from 1 to 100"),
    ({"page_size": 0}, r"page_size is 0: out of range"),
    ({"retry_backoff": -1.0}, r"retry_backoff is -1.0: out of range"),
]


@pytest.mark.parametrize(
    ("options", "pattern"), INVENTORY_CASES, ids=[json.dumps(o) for o, _ in INVENTORY_CASES]
)
def test_inventory_source_refused(
    tmp_path: Path, api: Api, options: dict[str, Any], pattern: str
) -> None:
    api.reset_calls()
    with pytest.raises(AnsibleParserError, match=pattern):
        parse_source(tmp_path, api, **options)
    assert api.calls() == {}, f"API called before the source was checked: {api.calls()}"


# "nan" and "inf" become floats through the modules' float options: refused, not compared.
NOT_FINITE = [
    ("tpu_node", {"poll_interval": "nan"}, "poll_interval", "NaN"),
    ("tpu_queued_resource", {"poll_interval": "inf"}, "poll_interval", "Infinity"),
    ("tpu_node_info", {"retry_max_sleep": "-inf"}, "retry_max_sleep", "-Infinity"),
]


@pytest.mark.parametrize(
    ("module", "bad", "option", "shown"),
    NOT_FINITE,
    ids=[f"{m}-{json.dumps(b)}" for m, b, _, _ in NOT_FINITE],
)
def test_module_refuses_nan_and_infinity(
    api: Api, module: str, bad: dict[str, Any], option: str, shown: str
) -> None:
    msg = refusal(api, module, bad)
    assert msg.startswith(f"{option} is {shown}: not a finite number; allowed: "), msg
