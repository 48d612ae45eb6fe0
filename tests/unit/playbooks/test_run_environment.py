"""A run's environment, its one home module_utils/tpu_run_environment (here its multislice,
MEGASCALE_*, part), and the run_environment filter over it."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter import run_environment as filter_plugin
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_environment import (
    RunEnvironmentError,
    run_environment,
)


def pod(slice_id: Any = 0, num_slices: Any = 1, ip: str = "10.0.0.2") -> dict[str, Any]:
    return {
        "node": f"ms-{slice_id}",
        "slice_id": slice_id,
        "num_slices": num_slices,
        "job_coordinator": "ms-0-w0",
        "job_coordinator_ip": ip,
    }


@pytest.mark.parametrize(
    ("the_pod", "port", "expected"),
    [
        # A single slice (or no pod at all): nothing; JAX finds its own pod.
        (pod(), None, {}),
        (None, None, {}),
        ({}, "9000", {}),
        (
            pod(1, 2),
            None,
            {
                "MEGASCALE_COORDINATOR_ADDRESS": "10.0.0.2:8080",
                "MEGASCALE_NUM_SLICES": "2",
                "MEGASCALE_SLICE_ID": "1",
                "MEGASCALE_PORT": "8080",
                "JAX_COORDINATOR_ADDRESS": "10.0.0.2:8476",
            },
        ),
        (
            pod("0", "4"),
            "9000",
            {
                "MEGASCALE_COORDINATOR_ADDRESS": "10.0.0.2:9000",
                "MEGASCALE_NUM_SLICES": "4",
                "MEGASCALE_SLICE_ID": "0",
                "MEGASCALE_PORT": "9000",
                "JAX_COORDINATOR_ADDRESS": "10.0.0.2:8476",
            },
        ),
        (
            pod(3, 4, ip="fd00::2"),
            8081,
            {
                "MEGASCALE_COORDINATOR_ADDRESS": "[fd00::2]:8081",
                "MEGASCALE_NUM_SLICES": "4",
                "MEGASCALE_SLICE_ID": "3",
                "MEGASCALE_PORT": "8081",
                "JAX_COORDINATOR_ADDRESS": "[fd00::2]:8476",
            },
        ),
    ],
)
def test_pod_variables(the_pod: Any, port: Any, expected: dict[str, str]) -> None:
    assert run_environment({}, the_pod, port) == expected
    assert filter_plugin.run_environment({}, the_pod, port) == expected


def test_the_users_variables_come_first_and_stay() -> None:
    env = run_environment({"XLA_FLAGS": "--x", "DEBUG": True}, pod(1, 2))
    assert list(env)[:2] == ["XLA_FLAGS", "DEBUG"] and env["DEBUG"] == "true"
    assert env["MEGASCALE_SLICE_ID"] == "1"


@pytest.mark.parametrize(
    ("extra", "the_pod", "port", "message"),
    [
        ({}, pod(), "http", 'tpu_run_megascale_port is "http": not a whole number'),
        (
            {},
            pod(),
            "0",
            'tpu_run_megascale_port is "0": out of range; allowed: a whole number from 1 to 65535',
        ),
        ({}, pod(1, 2), 70000, "tpu_run_megascale_port is 70000: out of range"),
        ({}, pod(1, 2), "8476", "8476 is the JAX coordinator's port"),
        ({}, pod(1, 2), True, "tpu_run_megascale_port"),
        ({"MEGASCALE_PORT": "1"}, pod(1, 2), None, r"tpu_run_env sets \['MEGASCALE_PORT'\]"),
        ({}, pod(1, 2, ip=""), None, "slice 1 of 2 but its multislice job has no coordinator"),
        ({}, pod(2, 2), None, "no such slice"),
        ({}, pod("x", 2), None, "must be whole numbers"),
    ],
)
def test_refusals_name_the_variable(extra: dict, the_pod: Any, port: Any, message: str) -> None:
    with pytest.raises(RunEnvironmentError, match=message) as refused:
        run_environment(extra, the_pod, port)
    # the filter fails a task with the very same message
    with pytest.raises(AnsibleFilterError) as failed:
        filter_plugin.run_environment(extra, the_pod, port)
    assert failed.value.message == str(refused.value)


def test_a_user_may_set_megascale_variables_on_a_single_slice() -> None:
    # Nothing is computed there, so nothing can disagree.
    assert run_environment({"MEGASCALE_PORT": 1}, pod()) == {"MEGASCALE_PORT": "1"}


def test_the_filter_plugin_names_its_filter() -> None:
    assert filter_plugin.FilterModule().filters() == {
        "run_environment": filter_plugin.run_environment
    }
