"""One apt transaction per run: the apt_plan and python_packages_ahead filters.

apt_plan picks the packages of the roles the run's tags select; python_packages_ahead says which
of the python role's packages are known before the role looks at the host. What the playbook
does with them (the first apt step installs them, the later steps change nothing) is exercised
on the emulated pod by the bootstrap benchmark and the journey tests, not here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.cloudtpu.pod.plugins.filter.apt_plan import FilterModule, apt_plan
from ansible_collections.cloudtpu.pod.plugins.filter.python_packages_ahead import (
    python_packages_ahead,
)
from ansible_collections.cloudtpu.pod.plugins.filter.python_source import python_source
from ansible_collections.cloudtpu.pod.plugins.filter.remote_shell_packages import (
    remote_shell_packages,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_python_source import SYSTEM

REPO = Path(__file__).resolve().parents[3]
PLANS = {
    "python": ["python3.10", "python3.10-venv", "python3.10-dev"],
    "remote_shell": ["locales", "mosh", "byobu"],
}


@pytest.mark.parametrize(
    ("run", "skip", "expected"),
    [
        (["all"], [], PLANS["python"] + PLANS["remote_shell"]),
        (None, None, PLANS["python"] + PLANS["remote_shell"]),
        (["base", "python", "framework"], [], PLANS["python"]),
        (["remote_shell"], [], PLANS["remote_shell"]),
        (["base"], [], []),
        (["all"], ["python"], PLANS["remote_shell"]),
        (["python", "remote_shell"], ["all"], []),
    ],
)
def test_the_tags_select_the_roles(run, skip, expected):
    assert apt_plan(PLANS, run, skip) == expected


def test_each_package_once_in_the_roles_order():
    plans = {"a": ["x", "y"], "b": ["y", "z", "x"], "c": []}
    assert apt_plan(plans, ["all"], []) == ["x", "y", "z"]
    assert apt_plan({"b": ["y", "z", "x"], "a": ["x", "y"]}) == ["y", "z", "x"]


def test_a_role_without_packages_ahead_adds_nothing():
    assert apt_plan({"python": [], "remote_shell": None}, ["all"], []) == []


@pytest.mark.parametrize("bad", [["python3.10"], "python3.10"])
def test_wrong_shapes_are_refused(bad):
    with pytest.raises(TypeError):
        apt_plan(bad if isinstance(bad, list) else {"python": bad})


def test_the_filter_is_registered():
    assert FilterModule().filters()["apt_plan"] is apt_plan


@pytest.mark.parametrize(
    ("dist", "release", "versions"), [(d, r, v) for (d, r), v in SYSTEM.items()]
)
def test_python_ahead_where_the_release_ships_the_version(dist, release, versions):
    for version in versions:
        got = python_packages_ahead(version, dist, release)
        assert got == python_source(version, dist, release)["packages"]
        assert got == [f"python{version}", f"python{version}-venv", f"python{version}-dev"]


@pytest.mark.parametrize(
    ("version", "dist", "release", "prefer"),
    [
        ("3.12", "Ubuntu", "22.04", "auto"),  # deadsnakes: the PPA is added by the role first
        ("3.10", "Ubuntu", "24.04", "auto"),  # deadsnakes
        ("3.10", "Ubuntu", "22.04", "deadsnakes"),  # forced PPA, though the archive has it
        ("3.12", "Debian", "12", "auto"),  # nowhere, unless the host's own sources have it
        ("3.12", "Debian", "12", "system"),  # the host's sources decide: the role asks apt
        ("3.11", "Ubuntu", "26.04", "system"),  # a release the tables do not know
        ("3.11", "Fedora", "40", "auto"),  # refused by the role with its message
        ("3.1", "Ubuntu", "22.04", "auto"),  # an unquoted 3.10
        ("3.10", "Ubuntu", "22.04", "bogus"),  # a bad tpu_python_source
    ],
)
def test_python_waits_for_its_own_step_when_the_host_decides(version, dist, release, prefer):
    assert python_packages_ahead(version, dist, release, prefer) == []


def test_python_ahead_is_registered_and_documented():
    from ansible_collections.cloudtpu.pod.plugins.filter import python_packages_ahead as module

    assert module.FilterModule().filters() == {"python_packages_ahead": python_packages_ahead}
    assert yaml.safe_load(module.DOCUMENTATION)["name"] == "python_packages_ahead"


def test_the_bootstrap_play_plans_the_roles_that_install_packages():
    """Each role of the bootstrap play whose packages are known ahead is in the plan, by its tag,
    from the same filter the role computes its own list with, on the role's options (never the
    role's internal names)."""
    plays = yaml.safe_load((REPO / "playbooks/bootstrap.yml").read_text())
    play = next(play for play in plays if "roles" in play)
    tags = {entry["role"].split(".")[-1]: entry["tags"] for entry in play["roles"]}
    plan = play["vars"]["tpu_apt_packages_ahead"]
    # the filter in the plan, and the one the role decides its own packages with
    planned = {
        "python": ("cloudtpu.pod.python_packages_ahead", "cloudtpu.pod.python_source"),
        "remote_shell": (
            "cloudtpu.pod.remote_shell_packages",
            "cloudtpu.pod.remote_shell_packages",
        ),
    }
    for role, (function, own) in planned.items():
        assert f"'{role}': tpu_{role}_" in plan
        assert function in plan
        assert tags[role] == [role], "apt_plan selects a role by its name as a tag"
        role_text = "".join(p.read_text() for p in (REPO / "roles" / role).rglob("*.yml"))
        assert own in role_text
    assert "__" not in plan
    assert "apt_plan(ansible_run_tags, ansible_skip_tags)" in plan


@pytest.mark.parametrize(
    ("mosh", "byobu", "expected"),
    [
        (True, True, ["locales", "mosh", "byobu"]),
        ("yes", "no", ["locales", "mosh"]),
        (False, "true", ["locales", "byobu"]),
        ("false", 0, ["locales"]),
    ],
)
def test_remote_shell_packages(mosh, byobu, expected):
    assert remote_shell_packages(mosh, byobu) == expected
