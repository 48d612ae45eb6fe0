"""The python_source filter: where a worker gets Python X.Y from.

Exercised: the decision for Ubuntu 20.04/22.04/24.04 and Debian 11/12/13 from the filter's
tables, forced sources, unknown releases and distributions, and the refusal messages. Not
exercised here: whether the archives and the deadsnakes PPA really publish those packages today
(no Ubuntu mirror is reachable from the test machines); the tables are the claim under test.
"""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.python_source import (
    FilterModule,
    python_source,
)

ACCEPTED = [
    # version, distribution, release, source
    ("3.10", "Ubuntu", "22.04", "system"),  # current TPU VM images
    ("3.11", "Ubuntu", "22.04", "system"),  # universe
    ("3.12", "Ubuntu", "22.04", "deadsnakes"),
    ("3.10", "Ubuntu", "20.04", "deadsnakes"),  # old TPU VM images
    ("3.8", "Ubuntu", "20.04", "system"),
    ("3.9", "Ubuntu", "20.04", "system"),
    ("3.10", "Ubuntu", "24.04", "deadsnakes"),
    ("3.12", "Ubuntu", "24.04", "system"),
    ("3.11", "Debian", "12", "system"),
    ("3.11", "Debian", "12.7", "system"),  # Debian's point releases count as the major
    ("3.9", "Debian", "11", "system"),
    ("3.13", "Debian", "13", "system"),
]


@pytest.mark.parametrize(("version", "dist", "release", "source"), ACCEPTED)
def test_accepted_sources(version, dist, release, source):
    got = python_source(version, dist, release)
    assert got["ok"], got
    assert got["source"] == source, got
    assert got["packages"] == [f"python{version}", f"python{version}-venv", f"python{version}-dev"]
    assert got["interpreter"] == f"/usr/bin/python{version}"
    assert f"python{version}" in got["message"]


REFUSED = [
    # version, distribution, release, prefer, words the message must contain
    ("3.10", "Debian", "12", "auto", ["'3.10'", "Debian 12 ships python3.11", "'3.11'"]),
    ("3.10", "Debian", "12.7", "auto", ["Debian 12 ships python3.11"]),
    ("3.12", "Debian", "11", "auto", ["Debian 11 ships python3.9", "'3.9'"]),
    ("3.15", "Ubuntu", "22.04", "auto", ["'3.15'", "Ubuntu 22.04 ships python3.10", "3.13"]),
    ("3.12", "Ubuntu", "24.04", "deadsnakes", None),  # accepted: forced, see below
    ("3.10", "Ubuntu", "26.04", "auto", ["does not know", "Ubuntu 26.04", "tpu_python_source"]),
    ("3.10", "CentOS", "9", "auto", ["CentOS 9", "Ubuntu", "Debian"]),
    ("3.10", "Debian", "12", "deadsnakes", ["not Ubuntu", "'3.11'"]),
    ("3.10", "Debian", "12", "system", ["tpu_python_source 'system'", "python3.11"]),
    ("3.12", "Ubuntu", "22.04", "system", ["tpu_python_source 'system'", "python3.10"]),
    ("3.1", "Ubuntu", "22.04", "auto", ["'3.1'", "unquoted 3.10"]),
    ("3.1O", "Ubuntu", "22.04", "auto", ["'3.1O'", "major.minor"]),
    ("python3.10", "Ubuntu", "22.04", "auto", ["'python3.10'", "major.minor"]),
    ("3.10", "Ubuntu", "22.04", "conda", ["tpu_python_source", "'conda'"]),
]


@pytest.mark.parametrize(
    ("version", "dist", "release", "prefer", "words"),
    [r for r in REFUSED if r[4] is not None],
)
def test_refusals_say_what_would_work(version, dist, release, prefer, words):
    got = python_source(version, dist, release, prefer)
    assert not got["ok"], got
    assert got["source"] == "" and got["packages"] == []
    for word in words:
        assert word in got["message"], f"{word!r} not in: {got['message']}"


@pytest.mark.parametrize(
    ("version", "dist", "release", "prefer", "source"),
    [
        ("3.12", "Ubuntu", "24.04", "deadsnakes", "deadsnakes"),  # forced, even if listed
        ("3.10", "Ubuntu", "26.04", "system", "system"),  # unknown release: trusted
        ("3.14", "Ubuntu", "26.04", "deadsnakes", "deadsnakes"),
        ("3.13", "Debian", "trixie/sid", "system", "system"),
    ],
)
def test_forced_sources(version, dist, release, prefer, source):
    got = python_source(version, dist, release, prefer)
    assert got["ok"] and got["source"] == source, got


def test_unknown_release_says_it_was_trusted():
    got = python_source("3.10", "Ubuntu", "26.04", "system")
    assert "not in the role's table" in got["message"], got


def test_a_number_is_read_as_its_string():
    # An unquoted 3.10 in YAML arrives as the float 3.1: refused, with the hint.
    got = python_source(3.1, "Ubuntu", "22.04")
    assert not got["ok"] and "unquoted 3.10" in got["message"], got


def test_the_filter_is_registered():
    assert FilterModule().filters()["python_source"] is python_source


POLICY_310 = """python3.10:
  Installed: (none)
  Candidate: 3.10.13-0cloudtpu1
  Version table:
     3.10.13-0cloudtpu1 500
        500 file:/srv/repo ./ Packages
"""
POLICY_NONE = "python3.10:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n"


@pytest.mark.parametrize("prefer", ["auto", "system"])
def test_the_hosts_apt_sources_serve_what_the_release_lacks(prefer):
    got = python_source("3.10", "Debian", "12", prefer, POLICY_310)
    assert got["ok"] and got["source"] == "system", got
    assert got["packages"] == ["python3.10", "python3.10-venv", "python3.10-dev"], got
    assert "3.10.13-0cloudtpu1 from the host's apt sources" in got["message"], got
    assert "Debian 12 itself ships python3.11" in got["message"], got


# apt-cache reads its argument as a pattern: python3.10 also matches other packages' names.
POLICY_OTHER = (
    "postgresql-plpython3-10:\n  Installed: (none)\n  Candidate: 10.1-1\n  Version table:\n"
)


@pytest.mark.parametrize(
    "policy", ["", POLICY_NONE, "N: Unable to locate package python3.10", POLICY_OTHER]
)
def test_no_apt_candidate_leaves_the_refusal(policy):
    got = python_source("3.10", "Debian", "12", "auto", policy)
    assert not got["ok"] and "Debian 12 ships python3.11" in got["message"], got


def test_the_release_archive_and_the_ppa_come_before_the_hosts_sources():
    assert (
        "22.04 archive" in python_source("3.10", "Ubuntu", "22.04", "auto", POLICY_310)["message"]
    )
    assert python_source("3.10", "Ubuntu", "24.04", "auto", POLICY_310)["source"] == "deadsnakes"
    refused = python_source("3.10", "Debian", "12", "deadsnakes", POLICY_310)
    assert not refused["ok"] and "not Ubuntu" in refused["message"], refused
