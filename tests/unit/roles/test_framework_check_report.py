"""What the framework role's import check said (module_utils/tpu_framework_check_report.py)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.framework_check_report import (
    framework_check_report,
)

TPU = {
    "ok": True,
    "version": "0.6.2",
    "mode": "tpu",
    "reason": "4 TPU devices",
    "devices": ["TPU_0", "TPU_1"],
    "seconds": 3.2,
}


def result(rc: int, report: dict | None = None, out=(), err=()) -> dict:
    lines = [*out, *([json.dumps(report)] if report is not None else [])]
    return {"rc": rc, "stdout_lines": lines, "stderr_lines": list(err)}


def test_a_working_framework() -> None:
    checked = framework_check_report(result(0, TPU, out=["{not json yet"]), "jax", 300)
    assert checked["ok"] and checked["report"] == TPU
    assert checked["message"] == "jax 0.6.2: tpu; 4 TPU devices; devices: TPU_0, TPU_1 (3.2 s)"


def test_a_framework_that_fails_says_why_with_its_traceback() -> None:
    report = {"ok": False, "reason": "jax fell back to the CPU", "traceback": ["a", "b"]}
    checked = framework_check_report(result(1, report), "jax", 300)
    assert not checked["ok"]
    assert checked["message"] == "jax fell back to the CPU. Traceback: a | b"
    plain = framework_check_report(result(1, {"ok": False, "reason": "no TPU"}), "jax", 300)
    assert plain["message"] == "no TPU. "


@pytest.mark.parametrize("rc", [124, 137])
def test_a_check_that_hung(rc: int) -> None:
    err = [f"e{i}" for i in range(10)]
    checked = framework_check_report(result(rc, TPU, out=["o1"], err=err), "torch_xla", 60)
    assert not checked["ok"]
    assert checked["message"].startswith(
        "The import check of torch_xla did not finish within tpu_framework_check_timeout (60 s)"
    )
    assert checked["message"].endswith(
        "Last lines of its output: " + " | ".join([*err[-8:], "o1", json.dumps(TPU)])
    )


def test_a_check_without_a_report() -> None:
    checked = framework_check_report(result(1, None, out=["Segmentation fault"]), "jax", 300)
    assert not checked["ok"] and checked["report"] == {}
    assert checked["message"] == (
        "The import check of jax printed no report (rc 1). Last lines of its output:"
        " Segmentation fault"
    )
