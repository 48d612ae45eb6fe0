"""The controller's half of cloudtpu.pod.tpu_state (plugins/action/tpu_state.py): a role's input
problems fail the task before the module is sent to the worker, and a check with the fast path
off answers without a round trip."""

from __future__ import annotations

import importlib
from unittest import mock

import pytest

action = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.action.tpu_state")


def make(args: dict) -> tuple[object, mock.MagicMock]:
    task = mock.MagicMock(args=args, async_val=0, check_mode=False, diff=False)
    plugin = action.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), None
    )
    sent = mock.MagicMock(return_value={"converged": True, "differences": [], "notes": {}})
    plugin._execute_module = sent
    return plugin, sent


@pytest.mark.parametrize(
    ("problems", "expected"),
    [
        ([], []),
        (["", None, "  "], []),
        (["a is bad.", "", "b is bad."], ["a is bad.", "b is bad."]),
        ("a is bad.", ["tpu_state: problems must be a list of strings; got str."]),
        ({"a": 1}, ["tpu_state: problems must be a list of strings; got dict."]),
        (3, ["tpu_state: problems must be a list of strings; got int."]),
    ],
)
def test_input_problems_keeps_the_messages_and_refuses_other_shapes(problems, expected) -> None:
    assert action.input_problems(problems) == expected


def test_a_problem_fails_on_the_controller_and_nothing_is_sent() -> None:
    plugin, sent = make({"role": "base", "digest": "", "problems": ["", "tpu_x is 3; allowed: 1."]})
    result = plugin.run(task_vars={})
    assert result["failed"] is True
    assert result["msg"] == "tpu_x is 3; allowed: 1."
    assert result["converged"] is False
    sent.assert_not_called()


def test_without_problems_the_module_runs_without_the_problems_option() -> None:
    plugin, sent = make({"role": "base", "digest": "d", "problems": [""], "dpkg_clean": True})
    result = plugin.run(task_vars={})
    assert result["converged"] is True and not result.get("failed")
    assert sent.call_args.kwargs["module_args"] == {
        "role": "base",
        "digest": "d",
        "dpkg_clean": True,
    }


@pytest.mark.parametrize(("enabled", "sends"), [(False, False), ("no", False), ("maybe", True)])
def test_a_check_with_the_fast_path_off_does_not_ask_the_worker(enabled, sends) -> None:
    plugin, sent = make({"role": "base", "digest": "d", "enabled": enabled})
    result = plugin.run(task_vars={})
    assert sent.called is sends  # a value that is no bool goes to the module, which refuses it
    if not sends:
        assert result["converged"] is False
        assert result["differences"] == ["the fast path is off (tpu_fast_path)"]


def test_a_record_runs_even_with_the_fast_path_off() -> None:
    plugin, sent = make({"role": "base", "digest": "d", "state": "record", "enabled": False})
    plugin.run(task_vars={})
    sent.assert_called_once()
