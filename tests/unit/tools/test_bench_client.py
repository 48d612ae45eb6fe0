"""bench/client: the requirement closure of a library, its summary, and the section's ratios."""

from __future__ import annotations

import pytest

from bench.client import deps, report

# A small made-up index: name -> Requires-Dist lines as a distribution's metadata holds them.
INDEX = {
    "client": [
        "google-api-core[grpc] >=1.34",
        "proto_plus>=1.22",
        "Protobuf!=4.21.0",
        "pytest ; extra == 'testing'",
    ],
    "google-api-core": ["requests>=2", "protobuf", "grpcio>=1.33 ; extra == 'grpc'"],
    "proto-plus": ["protobuf<8"],
    "requests": ["urllib3", "certifi"],
    "protobuf": [],
    "urllib3": [],
}


def requires_of(name: str) -> list[str]:
    return deps.requirement_names(INDEX.get(name, []))


def test_names_are_canonical_and_extras_entries_are_left_out() -> None:
    assert requires_of("client") == ["google-api-core", "proto-plus", "protobuf"]
    # an extra named on the requirement itself (google-api-core[grpc]) is not followed
    assert "grpcio" not in deps.closure(["client"], requires_of)


def test_markers_are_evaluated_for_the_given_environment() -> None:
    lines = ["tomli ; python_version < '3.11'", "colorama ; sys_platform == 'win32'", "idna"]
    env = {"python_version": "3.10", "sys_platform": "linux"}
    assert deps.requirement_names(lines, env) == ["tomli", "idna"]
    assert deps.requirement_names(lines, {"python_version": "3.12", "sys_platform": "win32"}) == [
        "colorama",
        "idna",
    ]


def test_an_unreadable_requirement_line_is_skipped() -> None:
    assert deps.requirement_names(["not a requirement !!", "six"]) == ["six"]


def test_closure_follows_requirements_once_in_the_order_reached() -> None:
    names = deps.closure(["client"], requires_of)
    assert names == [
        "client",
        "google-api-core",
        "requests",
        "urllib3",
        "certifi",
        "protobuf",
        "proto-plus",
    ]
    assert len(set(names)) == len(names)


def test_closure_keeps_an_uninstalled_name_without_requirements() -> None:
    assert deps.closure(["Missing_Dist"], requires_of) == ["missing-dist"]


def test_closure_survives_a_cycle() -> None:
    cyclic = {"a": ["b"], "b": ["a", "c"], "c": []}
    assert deps.closure(["a"], lambda n: cyclic[n]) == ["a", "b", "c"]


def test_summarize_counts_bytes_native_code_and_missing() -> None:
    info = {
        "client": {"bytes": 1_000, "compiled": False},
        "protobuf": {"bytes": 5_000, "compiled": True},
    }
    summary = deps.summarize(["client", "protobuf", "ghost"], info)
    assert summary["count"] == 3
    assert summary["bytes"] == 6_000
    assert summary["compiled"] == ["protobuf"]
    assert summary["missing"] == ["ghost"]


def test_measure_reads_this_environment() -> None:
    # the test environment has requests installed; its closure holds it and urllib3
    summary = deps.measure(["requests"])
    assert {"requests", "urllib3"} <= set(summary["names"])
    assert summary["bytes"] > 0
    assert summary["missing"] == []


@pytest.mark.parametrize(
    ("theirs", "ours", "text"), [(3.0, 1.5, "2.00x"), (1.0, 4.0, "0.25x"), (1.0, 0.0, "-")]
)
def test_ratio(theirs: float, ours: float, text: str) -> None:
    assert report.ratio(theirs, ours) == text


def test_cell_shows_median_and_range() -> None:
    assert report.cell({"median": 0.1234, "min": 0.1, "max": 0.2}) == "0.123 s (0.100-0.200)"
    assert report.cell({"median": 43.4, "min": 42.6, "max": 44.0}, "MB") == "43 MB (43-44)"
