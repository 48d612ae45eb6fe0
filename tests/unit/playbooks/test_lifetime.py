"""A node's lifetime: provision.yml's label and check, expire.yml's plan
(module_utils/tpu_lifetime.py, the node_lifetime and expiry_plan filters)."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.expiry_plan import FilterModule as Plan
from ansible_collections.cloudtpu.pod.plugins.filter.node_lifetime import FilterModule as Life
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_lifetime

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
node_lifetime = Life().filters()["node_lifetime"]
expiry_plan = Plan().filters()["expiry_plan"]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("90s", 90), ("90m", 5400), ("8h", 28800), ("2d", 172800), ("366d", 366 * 86400)],
)
def test_a_lifetime_is_a_number_and_a_unit(value: str, seconds: int) -> None:
    assert tpu_lifetime.lifetime_seconds(value) == seconds
    assert node_lifetime(value) == {"problem": "", "labels": {"cloudtpu-lifetime": value}}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0h", '"0h"'),
        ("8 h", '"8 h"'),
        ("8H", '"8H"'),
        ("367d", '"367d"'),
        ("8", '"8"'),
        (8, "8"),
        ("08h", '"08h"'),
        (["8h"], '["8h"]'),
        ("1w", '"1w"'),
    ],
)
def test_anything_else_is_refused_naming_the_variable_and_the_value(value, shown) -> None:
    found = node_lifetime(value)
    assert found["labels"] == {}
    assert found["problem"].startswith(f"tpu_provision_lifetime is {shown}: not a lifetime"), found
    assert "s, m, h or d" in found["problem"] and "366 days" in found["problem"]


@pytest.mark.parametrize("value", [None, ""])
def test_no_lifetime_is_no_label(value) -> None:
    assert node_lifetime(value) == {"problem": "", "labels": {}}


def _node(name: str, created: str, lifetime: str | None, zone: str = "us-central2-b") -> dict:
    labels = {"team": "vision"} | ({"cloudtpu-lifetime": lifetime} if lifetime else {})
    return {"name": name, "project": "p", "zone": zone, "labels": labels, "create_time": created}


def test_the_plan_deletes_only_the_nodes_past_their_lifetime() -> None:
    nodes = [
        _node("old", "2027-01-15T06:59:58.500000000Z", "1h"),  # 1.5 s ago, nanoseconds
        _node("young", "2027-01-15T07:30:00Z", "1h"),  # expires in 30 min
        _node("other-zone", "2027-01-14T08:00:00+01:00", "1d", zone="us-east5-a"),  # 1 h ago
        _node("forever", "2020-01-01T00:00:00Z", None),  # no label: never looked at
        _node("odd", "2020-01-01T00:00:00Z", "soon"),  # a label not understood: kept
        _node("undated", "", "1h"),  # no creation time: kept
    ]
    plan = expiry_plan(nodes, NOW)
    assert plan["expired"] == {"p": {"old": "us-central2-b", "other-zone": "us-east5-a"}}
    assert plan["count"] == 2
    lines = "\n".join(plan["lines"])
    assert "old (p/us-central2-b): expired 1 s ago (lifetime 1h from 2027-01-15T06:59:58Z)" in lines
    assert "young (p/us-central2-b): expires in 30 min, 2027-01-15T08:30:00Z" in lines
    assert "other-zone (p/us-east5-a): expired 60 min ago" in lines
    assert 'odd (p/us-central2-b): kept, label cloudtpu-lifetime is "soon"' in lines
    assert "undated (p/us-central2-b): kept, no creation time" in lines
    assert "forever" not in lines


def test_a_node_at_its_end_is_expired_and_one_a_second_before_is_not() -> None:
    at_end = expiry_plan([_node("a", "2027-01-15T07:00:00Z", "1h")], NOW)
    before = expiry_plan([_node("a", "2027-01-15T07:00:01Z", "1h")], NOW)
    assert at_end["count"] == 1 and before["count"] == 0
