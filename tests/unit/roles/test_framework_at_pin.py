"""Whether the framework role asks the package index at all: roles/framework/files/
framework_present.py (what the venv holds) and the framework_at_pin filter
(module_utils/tpu_framework_install.py), with specs()'s pin_only."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter.framework_at_pin import FilterModule
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_framework_install import (
    installer,
    specs,
)

SCRIPT = Path(__file__).resolve().parents[3] / "roles/framework/files/framework_present.py"
VENV = "/home/tpu/.venv310"

at_pin = FilterModule().filters()["framework_at_pin"]


def present(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT.read_text(), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def result(stdout: str, rc: int = 0) -> dict:
    """A registered command result (Ansible strips the last newline)."""
    text = stdout.rstrip("\n")
    return {"rc": rc, "stdout": text, "stdout_lines": text.splitlines()}


def test_the_script_prints_the_version_and_no_missing_tool() -> None:
    done = present("pytest", "PyTest")
    assert done.returncode == 0
    assert done.stdout == f"{importlib.metadata.version('pytest')}\n\n"


def test_the_script_names_the_missing_tools() -> None:
    done = present("pytest", "no-such-tool-cloudtpu", "pytest", "other_missing")
    assert done.stdout.splitlines()[1] == "no-such-tool-cloudtpu other_missing"


def test_the_script_fails_without_the_framework() -> None:
    done = present("no-such-framework-cloudtpu")
    assert done.returncode == 1 and done.stdout == ""


def test_at_the_pin_with_every_tool() -> None:
    assert at_pin(result("0.4.30\n\n"), True, "0.4.30") is True
    assert at_pin(result(" 0.4.30 \n"), True, "0.4.30") is True


@pytest.mark.parametrize(
    ("found", "pin_only", "pin"),
    [
        (result("0.4.31\n\n"), True, "0.4.30"),  # another release
        (result("0.4.30\ntpu-info\n"), True, "0.4.30"),  # a tool is missing
        (result("", rc=1), True, "0.4.30"),  # no framework
        (result("0.4.30\n\n"), False, "0.4.30"),  # more to install than the pin
        ({"skipped": True, "changed": False}, False, ""),  # framework 'none'
        (result(""), True, "0.4.30"),  # nothing printed
    ],
)
def test_not_at_the_pin(found, pin_only, pin) -> None:
    assert at_pin(found, pin_only, pin) is False


def test_a_bad_result_is_a_filter_error() -> None:
    with pytest.raises(AnsibleFilterError, match="framework_at_pin"):
        at_pin(None, True, "0.4.30")


def pin_only(name="jax", version="0.4.30", **options) -> bool:
    how = installer("uv", VENV, "jax", "/opt/cloudtpu/uv/bin/uv")
    return specs(how, name, version, venv=VENV, **options)["pin_only"]


def test_pin_only_when_the_pin_and_its_tools_are_all_there_is() -> None:
    assert pin_only() is True
    assert pin_only(tpu_info=False) is True


@pytest.mark.parametrize(
    ("name", "version", "options"),
    [
        ("none", "0.4.30", {}),
        ("jax", "latest", {"newest": "jax (0.4.30)"}),
        ("jax", "0.4.30", {"extra": ["flax"]}),
        ("jax", "0.4.30", {"requirements_file": "/tmp/req.txt"}),
        ("torch_xla", "2.5.0", {}),  # torch and torch_xla: two pins
    ],
)
def test_not_pin_only(name, version, options) -> None:
    assert pin_only(name, version, **options) is False
