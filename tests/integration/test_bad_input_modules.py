"""The bad-input table of the TPU modules and the tpu_vm inventory source, in process.

The modules run in process through tests/module_harness.py (their real argument spec and
option checks, the same code Ansible runs), in check mode and not, against an emulator served
on a local port; the inventory sources are parsed by the plugin through Ansible's inventory
loader. In process, because the code path is the same and a playbook run per case would cost
seconds each. Every case must be refused before any API call, with a message that names the
option and shows the value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleError

from tests.module_harness import ZONE, Api, parse_source, run_module, serve

BASE = {
    "tpu_node": {
        "name": "pod-bad",
        "zone": ZONE,
        "accelerator_type": "v4-8",
        "runtime_version": "tpu-ubuntu2204-base",
    },
    "tpu_queued_resource": {
        "name": "qr-bad",
        "zone": ZONE,
        "accelerator_type": "v4-8",
        "runtime_version": "tpu-ubuntu2204-base",
    },
    "tpu_node_info": {"zones": [ZONE]},
}
# option: bad values (as a playbook would pass them: numbers and strings)
BAD = {
    "timeout": [0, -5, "abc", 700000],
    "poll_interval": [0, -1, "abc", 0.01],
    "retries": [0, -1, "abc", 101],
    "request_timeout": [0, "abc"],
    "retry_max_sleep": [-1, "abc"],
}
FLOATS = ("poll_interval", "request_timeout", "retry_max_sleep")
MODULE_CASES = (
    [
        (module, option, value)
        for module in ("tpu_node", "tpu_queued_resource")
        for option, values in BAD.items()
        for value in values
    ]
    + [("tpu_node_info", "page_size", value) for value in (0, 1001, "abc")]
    + [("tpu_node_info", "retries", value) for value in (0, "abc")]
)


@pytest.fixture(scope="module")
def api() -> Iterator[Api]:
    with serve() as emulator:
        yield emulator


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
@pytest.mark.parametrize(
    ("module", "option", "value"),
    MODULE_CASES,
    ids=[f"{m}-{o}={json.dumps(v)}" for m, o, v in MODULE_CASES],
)
def test_module_refuses_before_any_api_call(
    api: Api, module: str, option: str, value: Any, check: bool
) -> None:
    api.reset_calls()
    outcome = run_module(module, api.auth(**BASE[module], **{option: value}), check=check)
    assert outcome.failed, outcome.result
    assert option in outcome.msg, outcome.msg
    # ansible-core's own message for a float option given a word names the type, not the value
    float_word = option in FLOATS and isinstance(value, str)
    assert (str(value) if not float_word else "of type str") in outcome.msg, outcome.msg
    assert "allowed" in outcome.msg or "convert to" in outcome.msg, outcome.msg
    assert api.calls() == {}, f"API called before the options were checked: {api.calls()}"
    assert api.node("pod-bad") is None, "a node was created with a refused option"


INVENTORY_CASES = [
    ({"zone": "us-central2-b"}, "unknown option zone", "allowed"),
    ({"project": "proj-a"}, "unknown option project", "allowed"),
    ({"hostnames": ["name"]}, "unknown option hostnames", "allowed"),
    ({"states": ["RUNNING"]}, 'states is ["RUNNING"]', "a running node is READY"),
    ({"states": ["READY", "bogus"]}, '["bogus"] not API node states', "allowed"),
    ({"states": "READY"}, 'states is "READY": not a list', "allowed"),
    ({"hostname": "{node} w{worker_id}"}, 'hostname is "{node} w{worker_id}"', "allowed"),
    ({"hostname": "{node}"}, "it must contain {worker_id}", "allowed"),
    ({"hostname": "{nodes}-{worker_id}"}, "it uses {nodes}, no such field", "allowed"),
    ({"hostname": "w {worker_id}"}, 'hostname is "w {worker_id}"', "allowed"),
    ({"retries": -3}, "retries is -3", "allowed"),
    # a word for a number: Ansible's own option check, before the plugin's
    ({"retries": "abc"}, "Config 'retries'", "Invalid value provided for 'int': 'abc'"),
    ({"page_size": 0}, "page_size is 0", "allowed"),
    ({"request_timeout": 0}, "request_timeout is 0", "allowed"),
    ({"retry_backoff": -1.0}, "retry_backoff is -1.0", "allowed"),
    ({"retry_max_sleep": "abc"}, "Config 'retry_max_sleep'", "for 'float': 'abc'"),
]


@pytest.mark.parametrize(
    ("options", "named", "allowed"),
    INVENTORY_CASES,
    ids=[json.dumps(o) for o, _, _ in INVENTORY_CASES],
)
def test_inventory_source_refused_before_any_api_call(
    tmp_path: Path, api: Api, options: dict[str, Any], named: str, allowed: str
) -> None:
    api.reset_calls()
    with pytest.raises(AnsibleError) as refused:
        parse_source(tmp_path, api, **options)
    message = str(refused.value)
    assert named in message, message
    assert allowed in message, message
    assert api.calls() == {}, f"API called before the source was checked: {api.calls()}"
