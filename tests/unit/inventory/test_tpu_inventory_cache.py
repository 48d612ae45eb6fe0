"""What the tpu_vm inventory fetches and caches (module_utils/tpu_inventory_hosts.py): the
question a source asks, the data kept per project, its warnings and when a cache entry answers.
The plugin's use of them, through Ansible's InventoryManager, is in test_tpu_inventory_manager."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_hosts import (
    CACHE_VERSION,
    NO_PROJECT,
    api_warnings,
    cache_matches,
    fetched_data,
    slim_node,
    source_query,
)

URL = "http://127.0.0.1:8470/v2"
NODE = {
    "name": "projects/p1/locations/z/nodes/pod",
    "acceleratorType": "v4-8",
    "networkEndpoints": [{"ipAddress": "10.0.0.2", "port": 8470}],
    "createTime": "2026-01-01T00:00:00Z",
}


def test_a_source_asks_for_its_projects_and_zones_without_empty_entries() -> None:
    assert source_query(["p1", "", "p2"], ["", "z"], URL) == {
        "projects": ["p1", "p2"],
        "zones": ["z"],
        "base_url": URL,
    }
    assert source_query(["p1"], None, URL)["zones"] == []


@pytest.mark.parametrize("projects", [None, [], ["", None]])
def test_a_source_without_a_project_is_refused(projects: Any) -> None:
    with pytest.raises(ValueError) as refused:
        source_query(projects, [], URL)
    assert str(refused.value) == NO_PROJECT


def test_fetched_data_keeps_slim_nodes_and_warnings_per_project() -> None:
    asked = []

    def collect(project: str) -> tuple[list[dict[str, Any]], list[str]]:
        asked.append(project)
        return ([NODE], ["zone x refused"]) if project == "p1" else ([], [])

    data = fetched_data(["p1", "p2"], collect)
    assert asked == ["p1", "p2"]
    assert data == {
        "version": CACHE_VERSION,
        "projects": {
            "p1": {"nodes": [slim_node(NODE)], "warnings": ["zone x refused"]},
            "p2": {"nodes": [], "warnings": []},
        },
    }
    assert "createTime" not in data["projects"]["p1"]["nodes"][0]


def test_warnings_come_project_by_project_and_say_when_they_are_cached() -> None:
    data = {"projects": {"b": {"warnings": ["w2"]}, "a": {"warnings": ["w1"]}, "c": {}}}
    assert api_warnings(data) == ["w1", "w2"]
    assert api_warnings(data, cached=True) == ["(cached result) w1", "(cached result) w2"]
    assert api_warnings({}) == []


def test_a_cache_entry_answers_only_the_same_question() -> None:
    query = source_query(["p1"], [], URL)
    entry = {**fetched_data(["p1"], lambda project: ([], [])), "query": query}
    assert cache_matches(entry, query)
    assert not cache_matches(entry, source_query(["p2"], [], URL))
    assert not cache_matches(entry, source_query(["p1"], ["z"], URL))
    assert not cache_matches(entry, source_query(["p1"], [], "https://tpu.googleapis.com/v2"))
    assert not cache_matches({**entry, "version": CACHE_VERSION - 1}, query)
    assert not cache_matches(None, query)
