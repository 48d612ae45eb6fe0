"""The controller's recovery journal (plugins/module_utils/tpu_journal.py), the tpu_journal
module over it, and recover_plan's use of it (a node the API no longer knows is recreated from
the journal's spec)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_journal, tpu_recover
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_local_paths import (
    DEFAULT_STATE_DIR,
    state_dir,
)

from tests.module_harness import run_module

PROJECT, ZONE = "demo-project", "us-central2-b"
SPEC = {
    "accelerator_type": "v4-16",
    "runtime_version": "tpu-ubuntu2204-base",
    "labels": {"team": "vision"},
    "metadata": {"ssh-keys": "tpu:ssh-ed25519 AAAA tpu"},
}


def pod(name: str = "pod-a", **spec: Any) -> dict[str, Any]:
    return {"name": name, "spec": dict(SPEC, **spec), "state": "PREEMPTED", "workers": []}


def path_in(folder: Path) -> Path:
    return folder / f"journal-{PROJECT}-{ZONE}.json"


def test_the_state_folder_is_the_variable_else_the_users_own() -> None:
    assert state_dir({"CLOUDTPU_STATE_DIR": "/srv/state"}) == "/srv/state"
    assert state_dir({}) == DEFAULT_STATE_DIR == "~/.local/state/cloudtpu.pod"


def test_record_read_clear(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    assert tpu_journal.read(PROJECT, ZONE, str(folder)) == {}
    assert not folder.exists()  # reading makes nothing

    changed, entries = tpu_journal.record(
        PROJECT, ZONE, [pod(), pod("pod-b")], "deleting", str(folder)
    )
    assert changed and sorted(entries) == ["pod-a", "pod-b"]
    entry = tpu_journal.read(PROJECT, ZONE, str(folder))["pod-a"]
    assert entry["spec"] == SPEC and entry["step"] == "deleting"
    assert (entry["project"], entry["zone"], entry["name"]) == (PROJECT, ZONE, "pod-a")
    assert entry["time"].endswith("Z")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path_in(folder).stat().st_mode) == 0o600

    assert tpu_journal.record(PROJECT, ZONE, [pod()], "deleting", str(folder))[0] is False
    changed, entries = tpu_journal.record(PROJECT, ZONE, [pod()], "creating", str(folder))
    assert changed and entries["pod-a"]["step"] == "creating"

    changed, left = tpu_journal.clear(PROJECT, ZONE, ["pod-a", "other"], str(folder))
    assert changed and list(left) == ["pod-b"]
    assert tpu_journal.clear(PROJECT, ZONE, ["pod-a"], str(folder))[0] is False
    tpu_journal.clear(PROJECT, ZONE, ["pod-b"], str(folder))
    assert not path_in(folder).exists()  # an emptied journal is removed
    assert os.listdir(folder) == []


def test_the_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    tpu_journal.record(PROJECT, ZONE, [pod()], "deleting", str(folder))
    first = path_in(folder).stat().st_ino
    tpu_journal.record(PROJECT, ZONE, [pod("pod-b")], "deleting", str(folder))
    assert path_in(folder).stat().st_ino != first  # a new file put in place, not rewritten
    assert os.listdir(folder) == [path_in(folder).name]
    assert json.loads(path_in(folder).read_text())["version"] == tpu_journal.VERSION


def test_a_failed_write_keeps_the_old_journal(tmp_path: Path, monkeypatch: Any) -> None:
    folder = tmp_path / "state"
    tpu_journal.record(PROJECT, ZONE, [pod()], "deleting", str(folder))
    kept = path_in(folder).read_bytes()

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tpu_journal.os, "fsync", broken)
    with pytest.raises(OSError):
        tpu_journal.record(PROJECT, ZONE, [pod("pod-b")], "deleting", str(folder))
    assert path_in(folder).read_bytes() == kept
    assert os.listdir(folder) == [path_in(folder).name]


def test_check_mode_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    changed, entries = tpu_journal.record(
        PROJECT, ZONE, [pod()], "deleting", str(folder), write=False
    )
    assert changed and "pod-a" in entries and not folder.exists()
    tpu_journal.record(PROJECT, ZONE, [pod()], "deleting", str(folder))
    kept = path_in(folder).read_bytes()
    assert tpu_journal.clear(PROJECT, ZONE, ["pod-a"], str(folder), write=False)[0] is True
    assert path_in(folder).read_bytes() == kept


@pytest.mark.parametrize("content", ["{not json", "[]", '{"nodes": {"pod-a": "spec"}}'])
def test_a_corrupt_journal_is_a_clear_error(tmp_path: Path, content: str) -> None:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    path_in(folder).write_text(content)
    path_in(folder).chmod(0o600)
    with pytest.raises(tpu_journal.JournalError, match="repair or move it away") as info:
        tpu_journal.read(PROJECT, ZONE, str(folder))
    assert str(path_in(folder)) in str(info.value)
    with pytest.raises(tpu_journal.JournalError):
        tpu_journal.record(PROJECT, ZONE, [pod()], "deleting", str(folder))
    assert path_in(folder).read_text() == content


def test_a_linked_folder_or_file_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "state"
    link.symlink_to(real)
    with pytest.raises(tpu_journal.JournalError, match=f"symbolic link {link}"):
        tpu_journal.record(PROJECT, ZONE, [pod()], "deleting", str(link))
    with pytest.raises(tpu_journal.JournalError, match=f"symbolic link {link}"):
        tpu_journal.read(PROJECT, ZONE, str(link / "below"))
    assert os.listdir(real) == []

    (tmp_path / "elsewhere.json").write_text("{}")
    path_in(real).symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(tpu_journal.JournalError, match="is a symbolic link"):
        tpu_journal.read(PROJECT, ZONE, str(real))


def test_a_folder_others_may_write_to_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(tpu_journal.JournalError, match="writable by other users"):
        tpu_journal.read(PROJECT, ZONE, str(folder))


@pytest.mark.parametrize(
    ("nodes", "step", "said"),
    [
        ([pod()], "done", "step is 'done'"),
        ([{"name": "Bad_Name", "spec": SPEC}], "deleting", "node ID"),
        ([{"name": "pod-a", "spec": {}}], "deleting", "accelerator_type"),
    ],
)
def test_bad_entries_are_refused(tmp_path: Path, nodes: list, step: str, said: str) -> None:
    with pytest.raises(tpu_journal.JournalError, match=said):
        tpu_journal.record(PROJECT, ZONE, nodes, step, str(tmp_path / "state"))


def test_a_bad_project_or_zone_never_becomes_a_file_name(tmp_path: Path) -> None:
    with pytest.raises(tpu_journal.JournalError, match="project"):
        tpu_journal.read("../etc", ZONE, str(tmp_path))


def test_the_module_records_reads_and_clears(tmp_path: Path) -> None:
    folder = str(tmp_path / "state")
    base = {"project": PROJECT, "zone": ZONE, "state_dir": folder}
    checked = run_module("tpu_journal", dict(base, state="record", nodes=[pod()]), check=True)
    assert checked["changed"] is True and not os.path.exists(folder)
    recorded = run_module("tpu_journal", dict(base, state="record", nodes=[pod()]))
    assert recorded["changed"] is True and recorded["path"] == str(path_in(tmp_path / "state"))
    read = run_module("tpu_journal", dict(base))
    assert read["changed"] is False and read["entries"]["pod-a"]["spec"] == SPEC
    cleared = run_module("tpu_journal", dict(base, state="clear", names=["pod-a"]))
    assert cleared["changed"] is True and cleared["entries"] == {}


def test_the_module_takes_the_folder_from_the_environment(tmp_path: Path, monkeypatch: Any) -> None:
    link = tmp_path / "state"
    link.symlink_to(tmp_path)
    monkeypatch.setenv("CLOUDTPU_STATE_DIR", str(link))
    outcome = run_module("tpu_journal", {"project": PROJECT, "zone": ZONE})
    assert outcome.failed and f"symbolic link {link}" in outcome.msg, outcome.msg


STATES, HEALTH = ["PREEMPTED", "TERMINATED"], ["TIMEOUT"]


def test_recover_plan_recreates_a_missing_node_from_the_journal() -> None:
    live = {"name": "pod-b", "state": "PREEMPTED", "health": "", "spec": SPEC, "workers": []}
    entries = {"pod-a": {"name": "pod-a", "spec": SPEC, "step": "creating"}}
    plan = tpu_recover.recover_plan(
        [live], STATES, HEALTH, journal=entries, names=["pod-a", "pod-b", "gone"]
    )
    assert [(p["name"], p["action"], p["journal"]) for p in plan] == [
        ("pod-a", "recreate", True),
        ("pod-b", "recreate", False),
        ("gone", "", False),
    ]
    assert plan[0]["node"]["spec"] == SPEC and plan[0]["node"]["workers"] == []
    assert "journal holds no spec" in plan[2]["problem"]
    assert "no spec to recreate it from" in plan[2]["problem"]


def test_recover_plan_finishes_what_a_stopped_run_recreated() -> None:
    """The journal still holds a node that exists and is not lost: an earlier run created it
    and stopped (a timeout, Ctrl-C) before the bootstrap and the clear. It is bootstrapped
    (waited for first while it comes up), its entry cleared, never refused or recreated."""
    entries = {"pod-a": {"name": "pod-a", "spec": SPEC, "step": "creating"}}
    ready = {"name": "pod-a", "state": "READY", "health": "HEALTHY", "spec": SPEC}
    coming = dict(ready, state="CREATING", health="")
    for live, action in ((ready, "rebootstrap"), (coming, "maintenance")):
        plan = tpu_recover.recover_plan([live], STATES, HEALTH, journal=entries, names=["pod-a"])
        assert (plan[0]["action"], plan[0]["journal"], plan[0]["problem"]) == (action, True, "")
    # lost again since: recreated from its live spec, as any lost node
    lost = dict(ready, state="PREEMPTED")
    plan = tpu_recover.recover_plan([lost], STATES, HEALTH, journal=entries, names=["pod-a"])
    assert plan[0]["action"] == "recreate" and plan[0]["journal"] is False


def test_recover_plan_without_a_journal_entry_refuses_a_node_that_looks_fine() -> None:
    live = {"name": "pod-a", "state": "READY", "health": "HEALTHY", "spec": SPEC}
    for entries in ({}, {"pod-b": {"name": "pod-b", "spec": SPEC}}):
        plan = tpu_recover.recover_plan([live], STATES, HEALTH, journal=entries, names=["pod-a"])
        assert plan[0]["action"] == "" and plan[0]["journal"] is False
        assert "does not need recovering" in plan[0]["problem"]


def test_runs_at_once_keep_each_others_entries(tmp_path: Path) -> None:
    """Each writer reads, changes and writes the journal under the folder's lock."""
    from concurrent.futures import ThreadPoolExecutor

    folder = str(tmp_path / "state")
    names = [f"pod-{n}" for n in range(8)]

    def churn(name: str) -> None:
        for step in ("deleting", "creating") * 2:
            tpu_journal.record("demo-project", "us-central2-b", [pod(name)], step, folder)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(churn, names))
    entries = tpu_journal.read("demo-project", "us-central2-b", folder)
    assert sorted(entries) == names
    assert {e["step"] for e in entries.values()} == {"creating"}


def test_a_node_id_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(tpu_journal.JournalError, match="node ID"):
        tpu_journal.record(
            "demo-project", "us-central2-b", [pod("pod-a\n")], folder=str(tmp_path / "s")
        )
