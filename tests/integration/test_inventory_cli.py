"""`ansible-inventory -i x.tpu_vm.yml --list` against the TPU API emulator (a subprocess).

Two projects, three zones, pages of two nodes, one node without external IPs, one PREEMPTED
node, and the four host layouts that matter (v4-32, v5litepod-16, v6e-8, v5p-16).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Emulator, ansible_inventory, start_emulator
from tools.tpu_emulator.testing import node

PROJECT_A = "research-a"
PROJECT_B = "research-b"
PAGE_SIZE = 2

STATE: dict[str, Any] = {
    "projects": {
        PROJECT_A: {
            "zones": {
                "us-central2-b": {
                    "nodes": [
                        node("v4-pod", "v4-32", labels={"team": "vision"}),
                        node("v4-private", "v4-8", external_ips=False),
                        node("v4-gone", "v4-8", state="PREEMPTED", spot=True),
                    ]
                },
                "us-east1-d": {
                    "nodes": [node("trillium", "v6e-8", spot=True), node("trillium-2", "v6e-8")]
                },
            }
        },
        PROJECT_B: {
            "zones": {
                "us-west4-a": {"nodes": [node("lite", "v5litepod-16", labels={"team": "speech"})]},
                "us-east1-d": {"nodes": [node("viper", "v5p-16")]},
            }
        },
        "locked-project": {"api_enabled": False, "zones": {"us-east1-d": {}}},
        "no-viewer": {"denied_permissions": ["tpu.nodes.list"], "zones": {"us-east1-d": {}}},
    }
}
READY_HOSTS = sorted(
    [f"v4-pod-w{i}" for i in range(4)]
    + ["v4-private-w0", "trillium-w0", "trillium-2-w0"]
    + [f"lite-w{i}" for i in range(4)]
    + ["viper-w0", "viper-w1"]
)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    yield from start_emulator(STATE, tmp_path_factory.mktemp("emulator"))


@pytest.fixture(autouse=True)
def _reset(emulator: Emulator) -> None:
    emulator.admin("POST", "reset")


def two_projects(emulator: Emulator, tmp_path: Path, **options: Any) -> Path:
    return emulator.source(
        tmp_path, projects=[PROJECT_A, PROJECT_B], page_size=PAGE_SIZE, **options
    )


def test_list_two_projects_three_zones_in_pages(emulator: Emulator, tmp_path: Path) -> None:
    run = ansible_inventory(two_projects(emulator, tmp_path), "--list")
    assert run.returncode == 0, run.stderr
    assert run.hosts() == READY_HOSTS
    assert run.hosts("tpu") == READY_HOSTS

    # one request per page: all nodes of a project (PREEMPTED included) in pages of two
    stats = emulator.admin("GET", "stats")
    pages = math.ceil(5 / PAGE_SIZE) + math.ceil(2 / PAGE_SIZE)
    assert stats["by_route"] == {"GET nodes.list": pages}
    assert stats["requests"] == pages

    assert run.hosts("tpu_coordinator") == [
        "lite-w0",
        "trillium-2-w0",
        "trillium-w0",
        "v4-pod-w0",
        "v4-private-w0",
        "viper-w0",
    ]
    assert run.hosts("tpu_zone_us_east1_d") == [
        "trillium-2-w0",
        "trillium-w0",
        "viper-w0",
        "viper-w1",
    ]
    assert run.hosts("tpu_gen_v5e") == [f"lite-w{i}" for i in range(4)]
    assert run.hosts("tpu_type_v5p_16") == ["viper-w0", "viper-w1"]
    assert run.hosts("tpu_node_v4_pod") == [f"v4-pod-w{i}" for i in range(4)]


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (
            "v4-pod-w3",
            {
                "tpu_project": PROJECT_A,
                "tpu_zone": "us-central2-b",
                "tpu_node": "v4-pod",
                "tpu_worker_id": 3,
                "tpu_worker_count": 4,
                "tpu_accelerator_type": "v4-32",
                "tpu_generation": "v4",
                "tpu_chips_per_host": 4,
                "tpu_device_glob": "/dev/accel*",
                "tpu_state": "READY",
                "tpu_health": "HEALTHY",
                "tpu_labels": {"team": "vision"},
                "tpu_spot": False,
            },
        ),
        (
            "lite-w2",
            {
                "tpu_project": PROJECT_B,
                "tpu_zone": "us-west4-a",
                "tpu_worker_count": 4,
                "tpu_generation": "v5e",
                "tpu_chips_per_host": 4,
                "tpu_device_glob": "/dev/vfio/[0-9]*",
            },
        ),
        (
            "trillium-w0",
            {
                "tpu_worker_count": 1,
                "tpu_generation": "v6e",
                "tpu_chips_per_host": 8,
                "tpu_spot": True,
            },
        ),
        (
            "viper-w1",
            {
                "tpu_project": PROJECT_B,
                "tpu_worker_id": 1,
                "tpu_worker_count": 2,
                "tpu_generation": "v5p",
                "tpu_chips_per_host": 4,
                "tpu_device_glob": "/dev/vfio/[0-9]*",
            },
        ),
    ],
)
def test_hostvars(emulator: Emulator, tmp_path: Path, host: str, expected: dict[str, Any]) -> None:
    run = ansible_inventory(two_projects(emulator, tmp_path), "--list")
    hostvars = run.hostvars(host)
    assert {key: hostvars[key] for key in expected} == expected
    assert hostvars["tpu_internal_ip"].startswith("10.")
    assert hostvars["tpu_external_ip"].startswith("198.18.")
    assert hostvars["ansible_host"] == hostvars["tpu_external_ip"]


def test_strings_from_the_api_are_unsafe_in_the_output(emulator: Emulator, tmp_path: Path) -> None:
    run = ansible_inventory(two_projects(emulator, tmp_path), "--list")
    raw = json.loads(run.stdout)["_meta"]["hostvars"]["v4-pod-w0"]
    assert raw["tpu_node"] == {"__ansible_unsafe": "v4-pod"}
    assert raw["tpu_labels"] == {"team": {"__ansible_unsafe": "vision"}}
    assert raw["tpu_worker_id"] == 0


def test_node_without_external_ips(emulator: Emulator, tmp_path: Path) -> None:
    hostvars = ansible_inventory(two_projects(emulator, tmp_path), "--list").hostvars(
        "v4-private-w0"
    )
    assert hostvars["tpu_external_ip"] is None
    assert hostvars["ansible_host"] == hostvars["tpu_internal_ip"]


def test_preempted_node_excluded_by_default_included_on_request(
    emulator: Emulator, tmp_path: Path
) -> None:
    default = ansible_inventory(two_projects(emulator, tmp_path), "--list")
    assert "v4-gone-w0" not in default.hosts()
    asked = ansible_inventory(
        two_projects(emulator, tmp_path, states=["READY", "PREEMPTED"]), "--list"
    )
    assert asked.hosts() == sorted([*READY_HOSTS, "v4-gone-w0"])
    gone = asked.hostvars("v4-gone-w0")
    assert gone["tpu_state"] == "PREEMPTED"
    assert gone["tpu_spot"] is True


def test_node_preempted_after_start_drops_out(emulator: Emulator, tmp_path: Path) -> None:
    emulator.admin("POST", f"projects/{PROJECT_B}/locations/us-west4-a/nodes/lite:preempt")
    run = ansible_inventory(two_projects(emulator, tmp_path), "--list")
    assert not [h for h in run.hosts() if h.startswith("lite-")]


def test_503_twice_then_success(emulator: Emulator, tmp_path: Path) -> None:
    emulator.admin(
        "POST",
        "faults",
        {"rules": [{"path": f"projects/{PROJECT_A}/locations/-/nodes", "statuses": [503, 503]}]},
    )
    run = ansible_inventory(two_projects(emulator, tmp_path), "--list")
    assert run.returncode == 0, run.stderr
    assert run.hosts() == READY_HOSTS
    assert emulator.admin("GET", "stats")["by_status"]["503"] == 2


def test_service_disabled_fails_with_the_fix(emulator: Emulator, tmp_path: Path) -> None:
    source = emulator.source(tmp_path, projects=["locked-project"])
    run = ansible_inventory(source, "--list", ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    assert run.returncode != 0
    assert "gcloud services enable tpu.googleapis.com --project locked-project" in run.stderr


def test_missing_permission_fails_naming_it(emulator: Emulator, tmp_path: Path) -> None:
    source = emulator.source(tmp_path, projects=["no-viewer"])
    run = ansible_inventory(source, "--list", ANSIBLE_INVENTORY_UNPARSED_FAILED="true")
    assert run.returncode != 0
    assert "the caller lacks permission tpu.nodes.list" in run.stderr
    assert "roles/tpu.viewer" in run.stderr


def test_unreachable_zone_is_a_warning(emulator: Emulator, tmp_path: Path) -> None:
    emulator.admin("POST", "faults", {"unreachable": {PROJECT_A: ["us-east1-d"]}})
    run = ansible_inventory(two_projects(emulator, tmp_path), "--list")
    assert run.returncode == 0, run.stderr
    assert "[WARNING]" in run.stderr
    assert "location us-east1-d of project research-a was unreachable" in run.stderr
    assert "trillium-w0" not in run.hosts()
    assert "viper-w0" in run.hosts()  # same zone, other project: still there


def test_cache_hit_makes_zero_requests(emulator: Emulator, tmp_path: Path) -> None:
    options = {
        "cache": True,
        "cache_plugin": "ansible.builtin.jsonfile",
        "cache_connection": str(tmp_path / "cache"),
        "cache_timeout": 600,
    }
    source = two_projects(emulator, tmp_path, **options)
    cold = ansible_inventory(source, "--list")
    assert cold.returncode == 0, cold.stderr
    assert emulator.requests() > 0

    emulator.admin("POST", "stats/reset")
    warm = ansible_inventory(source, "--list")
    assert warm.returncode == 0, warm.stderr
    assert emulator.requests() == 0
    assert warm.data == cold.data

    flushed = ansible_inventory(source, "--list", "--flush-cache")
    assert flushed.returncode == 0, flushed.stderr
    assert emulator.requests() > 0


def test_compose_and_keyed_groups_from_the_command_line(emulator: Emulator, tmp_path: Path) -> None:
    source = two_projects(
        emulator,
        tmp_path,
        compose={"ansible_user": "'researcher'"},
        keyed_groups=[{"key": "tpu_labels.team | default('none')", "prefix": "team"}],
        groups={"multi_host": "tpu_worker_count > 1"},
    )
    run = ansible_inventory(source, "--list")
    assert run.hosts("team_speech") == [f"lite-w{i}" for i in range(4)]
    assert run.hosts("team_vision") == [f"v4-pod-w{i}" for i in range(4)]
    assert "multi_host" in run.data
    assert "trillium-w0" not in run.hosts("multi_host")
    assert run.hostvars("viper-w0")["ansible_user"] == "researcher"
