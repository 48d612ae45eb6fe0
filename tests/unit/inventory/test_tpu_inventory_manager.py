"""The tpu_vm inventory plugin through Ansible's InventoryManager, against the emulator.

One test per constructed feature (compose, groups, keyed_groups, strict on and off), per filter,
and for the hostname template, addresses, caching and errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.errors import AnsibleError, AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader

from tools.tpu_emulator.testing import TOKEN, admin, node, serve

PROJECT = "proj-a"
OTHER = "proj-b"


def state() -> dict[str, Any]:
    return {
        "projects": {
            PROJECT: {
                "zones": {
                    "us-central2-b": {
                        "nodes": [
                            node(
                                "pod-a", "v4-32", labels={"team": "vision", "evil": "{{ 7 * 6 }}"}
                            ),
                            node("pod-b", "v4-8", external_ips=False, labels={"team": "speech"}),
                        ]
                    },
                    "us-east1-d": {
                        "nodes": [
                            node("trill", "v6e-8", spot=True),
                            node("gone", "v6e-8", state="PREEMPTED"),
                        ]
                    },
                }
            },
            OTHER: {"zones": {"us-east1-d": {"nodes": [node("lite", "v5litepod-16")]}}},
            "locked": {"api_enabled": False},
        }
    }


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with serve(state()) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _clean(server: Any) -> None:
    admin(server.root_url, "POST", "reset")


def write_source(
    tmp_path: Path, server: Any, name: str = "test.tpu_vm.yml", **options: Any
) -> Path:
    config: dict[str, Any] = {
        "plugin": "cloudtpu.pod.tpu_vm",
        "projects": [PROJECT],
        "base_url": server.api_url,
        "auth_kind": "accesstoken",
        "access_token": TOKEN,
        "retries": 2,
        "retry_backoff": 0.01,
    }
    config.update(options)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def manager(path: Path, cache: bool = False) -> InventoryManager:
    return InventoryManager(loader=DataLoader(), sources=[str(path)], cache=cache)


def parse_directly(path: Path) -> InventoryData:
    """Run the plugin without InventoryManager, which turns parse errors into warnings."""
    plugin = inventory_loader.get("cloudtpu.pod.tpu_vm")
    data = InventoryData()
    plugin.parse(data, DataLoader(), str(path), cache=False)
    return data


def hosts(inventory: InventoryManager, group: str = "all") -> list[str]:
    return sorted(h.name for h in inventory.get_hosts(group))


def hostvars(inventory: InventoryManager, host: str) -> dict[str, Any]:
    return inventory.get_host(host).get_vars()


def requests_made(server: Any) -> int:
    return admin(server.root_url, "GET", "stats")["requests"]


def test_default_source_lists_ready_workers_with_groups(tmp_path: Path, server: Any) -> None:
    inv = manager(write_source(tmp_path, server))
    assert hosts(inv) == [
        "pod-a-w0",
        "pod-a-w1",
        "pod-a-w2",
        "pod-a-w3",
        "pod-b-w0",
        "trill-w0",
    ]
    assert hosts(inv, "tpu_coordinator") == ["pod-a-w0", "pod-b-w0", "trill-w0"]
    assert hosts(inv, "tpu_node_pod_a") == ["pod-a-w0", "pod-a-w1", "pod-a-w2", "pod-a-w3"]
    assert hosts(inv, "tpu_type_v4_8") == ["pod-b-w0"]
    assert hosts(inv, "tpu_zone_us_east1_d") == ["trill-w0"]
    assert hosts(inv, "tpu_gen_v6e") == ["trill-w0"]
    assert hosts(inv, "tpu") == hosts(inv)
    trill = hostvars(inv, "trill-w0")
    assert trill["tpu_spot"] is True
    assert trill["tpu_chips_per_host"] == 8
    assert trill["tpu_device_glob"] == "/dev/vfio/[0-9]*"
    assert trill["ansible_host"] == trill["tpu_external_ip"]
    pod_b = hostvars(inv, "pod-b-w0")
    assert pod_b["tpu_external_ip"] is None
    assert pod_b["ansible_host"] == pod_b["tpu_internal_ip"]


def test_compose(tmp_path: Path, server: Any) -> None:
    source = write_source(
        tmp_path,
        server,
        compose={"ansible_user": "'researcher'", "slots": "tpu_worker_count * tpu_chips_per_host"},
    )
    vars_ = hostvars(manager(source), "pod-a-w1")
    assert vars_["ansible_user"] == "researcher"
    assert vars_["slots"] == 16


def test_values_from_the_api_are_never_templated(tmp_path: Path, server: Any) -> None:
    source = write_source(tmp_path, server, compose={"evil_label": "tpu_labels.evil"})
    vars_ = hostvars(manager(source), "pod-a-w0")
    assert vars_["tpu_labels"]["evil"] == "{{ 7 * 6 }}"
    assert vars_["evil_label"] == "{{ 7 * 6 }}"


def test_groups(tmp_path: Path, server: Any) -> None:
    source = write_source(
        tmp_path,
        server,
        groups={
            "multi_host": "tpu_worker_count > 1",
            "vision": "tpu_labels.team | default('') == 'vision'",
        },
    )
    inv = manager(source)
    assert hosts(inv, "multi_host") == ["pod-a-w0", "pod-a-w1", "pod-a-w2", "pod-a-w3"]
    assert hosts(inv, "vision") == ["pod-a-w0", "pod-a-w1", "pod-a-w2", "pod-a-w3"]


def test_keyed_groups(tmp_path: Path, server: Any) -> None:
    source = write_source(
        tmp_path,
        server,
        keyed_groups=[
            {"key": "tpu_labels.team | default('none')", "prefix": "team"},
            {"key": "tpu_health", "prefix": "health"},
        ],
    )
    inv = manager(source)
    assert hosts(inv, "team_speech") == ["pod-b-w0"]
    assert hosts(inv, "team_none") == ["trill-w0"]
    assert len(hosts(inv, "health_HEALTHY")) == 6


def test_strict_off_skips_a_broken_expression(tmp_path: Path, server: Any) -> None:
    source = write_source(tmp_path, server, strict=False, compose={"broken": "no_such_var + 1"})
    inv = manager(source)
    assert "broken" not in hostvars(inv, "pod-a-w0")
    assert len(hosts(inv)) == 6


def test_strict_on_fails_on_a_broken_expression(tmp_path: Path, server: Any) -> None:
    source = write_source(tmp_path, server, strict=True, compose={"broken": "no_such_var + 1"})
    with pytest.raises(AnsibleError, match="Could not set broken for host"):
        parse_directly(source)


def test_strict_on_fails_on_a_broken_keyed_group(tmp_path: Path, server: Any) -> None:
    source = write_source(tmp_path, server, strict=True, keyed_groups=[{"key": "no_such_var"}])
    with pytest.raises(AnsibleParserError, match="Could not generate group"):
        parse_directly(source)


def test_hostname_template(tmp_path: Path, server: Any) -> None:
    source = write_source(tmp_path, server, hostname="{zone}.{node}.{worker_id}")
    assert "us-central2-b.pod-a.3" in hosts(manager(source))


def test_bad_hostname_template_is_refused(tmp_path: Path, server: Any) -> None:
    source = write_source(tmp_path, server, hostname="{node}-{index}")
    with pytest.raises(AnsibleParserError, match=r"uses \{index\}"):
        parse_directly(source)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"states": ["PREEMPTED"]}, ["gone-w0"]),
        ({"states": []}, ["gone-w0", "pod-a-w0", "pod-b-w0", "trill-w0"]),
        ({"labels": {"team": "vision"}}, ["pod-a-w0"]),
        ({"labels": {"team": "*"}}, ["pod-a-w0", "pod-b-w0"]),
        ({"accelerator_types": ["v6e-*"]}, ["trill-w0"]),
        ({"names": ["pod-*"]}, ["pod-a-w0", "pod-b-w0"]),
        ({"zones": ["us-east1-d"]}, ["trill-w0"]),
        ({"projects": [OTHER]}, ["lite-w0"]),
        ({"projects": [PROJECT, OTHER], "names": ["lite", "trill"]}, ["lite-w0", "trill-w0"]),
    ],
)
def test_filters(tmp_path: Path, server: Any, options: dict[str, Any], expected: list[str]) -> None:
    inv = manager(write_source(tmp_path, server, **options))
    assert hosts(inv, "tpu_coordinator") == expected


def test_preempted_node_keeps_internal_addresses_only(tmp_path: Path, server: Any) -> None:
    inv = manager(write_source(tmp_path, server, states=["PREEMPTED"]))
    vars_ = hostvars(inv, "gone-w0")
    assert vars_["tpu_state"] == "PREEMPTED"
    assert vars_["tpu_external_ip"] is None
    assert vars_["ansible_host"] == vars_["tpu_internal_ip"]


def test_use_internal_ip(tmp_path: Path, server: Any) -> None:
    vars_ = hostvars(manager(write_source(tmp_path, server, use_internal_ip=True)), "pod-a-w0")
    assert vars_["tpu_external_ip"]
    assert vars_["ansible_host"] == vars_["tpu_internal_ip"]


def test_projects_and_zones_from_the_environment(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write_source(tmp_path, server)
    config = yaml.safe_load(source.read_text())
    del config["projects"]
    source.write_text(yaml.safe_dump(config))
    monkeypatch.setenv("CLOUDTPU_PROJECT", f"{PROJECT},{OTHER}")
    monkeypatch.setenv("CLOUDTPU_ZONES", "us-east1-d")
    assert hosts(manager(source), "tpu_coordinator") == ["lite-w0", "trill-w0"]


def test_no_project_is_a_clear_error(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLOUDTPU_PROJECT", raising=False)
    monkeypatch.delenv("GCP_PROJECT", raising=False)
    source = write_source(tmp_path, server, projects=[])
    with pytest.raises(AnsibleParserError, match="CLOUDTPU_PROJECT"):
        parse_directly(source)


def test_api_error_reaches_the_user(tmp_path: Path, server: Any) -> None:
    source = write_source(tmp_path, server, projects=["locked"])
    with pytest.raises(
        AnsibleError, match=r"gcloud services enable tpu\.googleapis\.com --project locked"
    ):
        parse_directly(source)


def test_only_files_named_tpu_vm_yml_are_claimed(tmp_path: Path, server: Any) -> None:
    plugin = inventory_loader.get("cloudtpu.pod.tpu_vm")
    assert plugin.verify_file(str(write_source(tmp_path, server, name="a.tpu_vm.yml")))
    assert plugin.verify_file(str(write_source(tmp_path, server, name="tpu_vm.yaml")))
    assert not plugin.verify_file(str(write_source(tmp_path, server, name="inventory.yml")))
    assert not plugin.verify_file(str(tmp_path / "missing.tpu_vm.yml"))


def test_cache_hit_makes_no_request(tmp_path: Path, server: Any) -> None:
    cache_dir = tmp_path / "cache"
    source = write_source(
        tmp_path,
        server,
        cache=True,
        cache_plugin="ansible.builtin.jsonfile",
        cache_connection=str(cache_dir),
        page_size=2,
    )
    cold = manager(source, cache=True)
    cold_requests = requests_made(server)
    assert cold_requests == 2  # proj-a has 4 nodes: two pages of 2
    assert any(cache_dir.iterdir()), "a miss must write the cache"

    admin(server.root_url, "POST", "stats/reset")
    warm = manager(source, cache=True)
    assert requests_made(server) == 0
    assert hosts(warm) == hosts(cold)
    assert hostvars(warm, "pod-a-w2") == hostvars(cold, "pod-a-w2")


def test_cache_is_not_read_unless_asked(tmp_path: Path, server: Any) -> None:
    cache_dir = tmp_path / "cache"
    options = {"cache_plugin": "ansible.builtin.jsonfile", "cache_connection": str(cache_dir)}
    manager(write_source(tmp_path, server, cache=True, **options), cache=True)
    admin(server.root_url, "POST", "stats/reset")
    # cache enabled but the caller asks for fresh data (ansible-inventory --flush-cache)
    manager(write_source(tmp_path, server, cache=True, **options), cache=False)
    assert requests_made(server) == 1
    admin(server.root_url, "POST", "stats/reset")
    # cache disabled in the source
    manager(write_source(tmp_path, server, cache=False, **options), cache=True)
    assert requests_made(server) == 1


def test_cache_entry_for_other_projects_is_a_miss(tmp_path: Path, server: Any) -> None:
    options = {
        "cache": True,
        "cache_plugin": "ansible.builtin.jsonfile",
        "cache_connection": str(tmp_path / "cache"),
    }
    manager(write_source(tmp_path, server, **options), cache=True)
    admin(server.root_url, "POST", "stats/reset")
    inv = manager(write_source(tmp_path, server, projects=[OTHER], **options), cache=True)
    assert requests_made(server) == 1
    assert hosts(inv) == ["lite-w0", "lite-w1", "lite-w2", "lite-w3"]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"CLOUDTPU_PROJECT": PROJECT, "GCP_PROJECT": OTHER}, [PROJECT]),
        ({"GCP_PROJECT": OTHER}, [OTHER]),
        ({"CLOUDTPU_PROJECT": f"{PROJECT},{OTHER}"}, [PROJECT, OTHER]),
    ],
)
def test_cloudtpu_project_wins_over_gcp_project(
    tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch, env: dict, expected: list
) -> None:
    """The playbooks (playbooks/vars/lifecycle.yml) take CLOUDTPU_PROJECT before GCP_PROJECT,
    which an AWX credential sets: the inventory must pick the same project."""
    monkeypatch.delenv("CLOUDTPU_PROJECT", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = write_source(tmp_path, server)
    config = yaml.safe_load(path.read_text())
    del config["projects"]
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    projects = {hostvars(manager(path), h)["tpu_project"] for h in hosts(manager(path))}
    assert sorted(projects) == sorted(expected)
