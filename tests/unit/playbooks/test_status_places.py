"""Where status.yml asks the TPU API (plugins/filter/status_places.py): the request, the
inventory's hosts, its tpu_vm source files (read even when they list no host) and the
environment."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible_collections.cloudtpu.pod.plugins.filter.status_places import (
    FilterModule,
    as_list,
    source_files,
    status_places,
)
from ansible_collections.cloudtpu.pod.plugins.filter.status_table import status_table

REPO = Path(__file__).resolve().parents[3]


def source(folder: Path, name: str = "tpu_vm.yml", **options) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"plugin": "cloudtpu.pod.tpu_vm", **options}))
    return path


def test_projects_of_a_source_file_without_hosts_or_environment(tmp_path: Path):
    folder = tmp_path / "inv"
    folder.mkdir()
    source(folder, projects=["p"], zones=["us-central2-b"])
    (folder / "group_vars").mkdir()
    places = status_places([str(folder)])
    assert places["projects"] == ["p"]
    assert places["zones"] == ["us-central2-b"]
    assert "tpu_vm sources (tpu_vm.yml)" in places["searched"]


def test_a_source_without_projects_reads_the_environment_as_the_plugin_does(tmp_path: Path):
    path = source(tmp_path, "gcp.tpu_vm.yaml", states=["READY"])
    assert status_places([str(path)], env={"GCP_PROJECT": "g"})["projects"] == ["g"]
    both = {"CLOUDTPU_PROJECT": "a, b", "GCP_PROJECT": "g"}
    assert status_places([str(path)], env=both)["projects"] == ["a", "b"]
    # no zones in the file: every zone, unless CLOUDTPU_ZONES names some
    assert status_places([str(path)])["zones"] == []
    assert status_places([str(path)], env={"CLOUDTPU_ZONES": "z1,z2"})["zones"] == ["z1", "z2"]


def test_hosts_sources_and_environment_together_without_repeats(tmp_path: Path):
    path = source(tmp_path, projects="p, q", zones=["z"])
    places = status_places([str(path)], ["q", "r"], ["z"], {"CLOUDTPU_PROJECT": "s"})
    assert places["projects"] == ["q", "r", "p", "s"]
    assert places["zones"] == ["z"]


def test_one_source_without_zones_means_every_zone(tmp_path: Path):
    a = source(tmp_path, "a.tpu_vm.yml", projects=["p"], zones=["z"])
    b = source(tmp_path, "b.tpu_vm.yml", projects=["q"])
    assert status_places([str(a), str(b)])["zones"] == []
    assert status_places([str(a)])["zones"] == ["z"]


def test_static_inventory_uses_the_hosts_values(tmp_path: Path):
    static = tmp_path / "hosts.yml"
    static.write_text("all:\n  hosts:\n    w0: {tpu_project: p, tpu_zone: z}\n")
    places = status_places([str(static)], ["p", "p"], ["z"])
    assert places == {"projects": ["p"], "zones": ["z"], "searched": places["searched"]}
    assert "no tpu_vm source" in places["searched"]


def test_the_request_wins(tmp_path: Path):
    path = source(tmp_path, projects=["p"], zones=["z"])
    places = status_places([str(path)], ["h"], ["hz"], {"CLOUDTPU_ZONES": "e"}, "x,y", [])
    assert places["projects"] == ["x", "y"] and places["zones"] == []
    assert places["searched"] == "tpu_status_projects"


def test_files_that_are_not_tpu_vm_sources_are_ignored(tmp_path: Path):
    (tmp_path / "other.tpu_vm.yml").write_text("plugin: google.cloud.gcp_compute\nprojects: [n]\n")
    (tmp_path / "broken.tpu_vm.yml").write_text("plugin: [unclosed\n")
    (tmp_path / "hosts.yml").write_text("plugin: cloudtpu.pod.tpu_vm\nprojects: [n]\n")
    source(tmp_path, "t.tpu_vm.yml", projects=["{{ lookup('env', 'X') }}", "p"])
    assert status_places([str(tmp_path), str(tmp_path / "missing")])["projects"] == ["p"]
    assert source_files([str(tmp_path / "missing.tpu_vm.yml")]) == []


def test_the_repositorys_inventories():
    demo = status_places([str(REPO / "inventories" / "demo")])
    assert demo["projects"] == ["demo-project"]
    gcp = status_places([str(REPO / "inventories" / "gcp")], env={"CLOUDTPU_PROJECT": "mine"})
    assert gcp["projects"] == ["mine"] and gcp["zones"] == []


def test_as_list():
    assert as_list(None) == [] and as_list("") == [] and as_list(" a ,b,") == ["a", "b"]
    assert as_list(["a", None, " "]) == ["a"]


def test_no_project_says_where_it_looked(tmp_path: Path):
    places = status_places([str(tmp_path / "hosts.yml")])
    line = status_table([], [], [], places["searched"])[-1]
    assert line == (
        "No TPU node and no worker in the inventory. Looked in: no project in the tpu_project "
        "of the inventory's hosts, no tpu_vm source, CLOUDTPU_PROJECT (set CLOUDTPU_PROJECT, "
        "or name projects in a tpu_vm inventory source)."
    ), line


def test_filter_is_registered():
    assert FilterModule().filters()["status_places"] is status_places
