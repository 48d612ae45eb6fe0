"""The framework_versions filter: the framework role's one-line version report and its warning
when 'latest' is held back by the venv's Python (jax on Python 3.10 stops at 0.6.x)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.framework_versions import (
    FilterModule,
    framework_versions,
)


def probe(python: str, **versions: str | None) -> str:
    names = ("jax", "jaxlib", "libtpu", "torch", "torch_xla")
    return "noise from libtpu\n" + json.dumps(
        {"python": python, "versions": {n: versions.get(n) for n in names}}
    )


def test_the_report_names_python_and_every_installed_distribution():
    got = framework_versions(
        probe("3.11.2", jax="0.10.2", jaxlib="0.10.2", libtpu="0.0.42.1"), "jax", "latest"
    )
    assert got["message"] == "Python 3.11.2: jax 0.10.2, jaxlib 0.10.2, libtpu 0.0.42.1"
    assert got["versions"] == {
        "python": "3.11.2",
        "jax": "0.10.2",
        "jaxlib": "0.10.2",
        "libtpu": "0.0.42.1",
    }
    assert got["warning"] == ""


@pytest.mark.parametrize(
    ("python", "jax", "requested", "warned"),
    [
        ("3.10.13", "0.6.2", "latest", True),  # capped by Python 3.10
        ("3.10.13", "0.6.1", "latest", True),
        ("3.9.18", "0.4.30", "latest", True),
        ("3.10.13", "0.6.2", "0.6.2", False),  # a pin is the user's choice
        ("3.11.7", "0.10.2", "latest", False),  # not capped
        ("3.12.1", "0.6.2", "latest", False),  # an old jax on a new Python is not a cap
    ],
)
def test_latest_held_back_by_python_warns(python, jax, requested, warned):
    got = framework_versions(probe(python, jax=jax, jaxlib=jax), "jax", requested)
    assert bool(got["warning"]) is warned, got
    if warned:
        minor = ".".join(python.split(".")[:2])
        assert f"Python {minor}" in got["warning"] and f"installed {jax}" in got["warning"]
        assert "tpu_python_version" in got["warning"], got


def test_the_warning_for_3_10_names_the_06_line_and_311():
    warning = framework_versions(probe("3.10.13", jax="0.6.2"), "jax")["warning"]
    assert "the 0.6 line" in warning and "Python 3.11 or later" in warning, warning


def test_missing_distributions_are_named():
    got = framework_versions(probe("3.11.7", torch="2.8.0", torch_xla="2.8.0"), "torch_xla")
    assert got["message"] == "Python 3.11.7: torch 2.8.0, torch_xla 2.8.0 (not installed: libtpu)"
    assert got["warning"] == ""


@pytest.mark.parametrize("output", ["", "Traceback ...\nNo such file", "{not json", None])
def test_no_report_is_an_empty_report(output):
    assert framework_versions(output, "jax") == {"versions": {}, "message": "", "warning": ""}


def test_a_dict_is_read_as_the_probe():
    got = framework_versions({"python": "3.10.13", "versions": {"jax": "0.6.2"}}, "jax")
    assert got["message"].startswith("Python 3.10.13: jax 0.6.2"), got
    assert got["warning"], got


def test_the_filter_is_registered():
    assert FilterModule().filters()["framework_versions"] is framework_versions
