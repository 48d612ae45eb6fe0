"""cloudtpu.pod.tpu_node with journal (recover.yml's delete and create): the spec, secret
values included, is kept in the controller's journal before the delete, and hidden markers in
the wanted metadata are taken back from the node or the journal. tpu_journal's record keeps
real values only."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_journal
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_secrets import marker

from tests.module_harness import TOKEN, ZONE, Api, run_module, serve

PROJECT = "demo-project"  # the journal's file is named after a project ID (6 characters or more)

SECRET = "#!/bin/bash\nexport GCP_ACCESS_TOKEN=canary-77c1f0e9d3\n"
HIDDEN = marker("startup-script", SECRET)
NODE = {
    "name": "pod-j",
    "zone": ZONE,
    "accelerator_type": "v4-8",
    "runtime_version": "tpu-ubuntu2204-base",
    "metadata": {"ssh-keys": "tpu:ssh-ed25519 AAAA tpu", "startup-script": SECRET},
    "poll_interval": 0.05,
    "timeout": 30,
}


@pytest.fixture
def api() -> Iterator[Api]:
    initial = {"settings": {"tokens": [TOKEN]}, "projects": {PROJECT: {"zones": {ZONE: {}}}}}
    with serve(initial) as emulator:
        yield emulator


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "state"


def node(api: Api, folder: Path, check: bool = False, **changes: Any) -> Any:
    args = dict(NODE, state_dir=str(folder), project=PROJECT)
    args.update(changes)
    return run_module("tpu_node", api.auth(**args), check=check)


def stored(api: Api) -> dict[str, Any] | None:
    with api.emulator.lock:
        found = api.emulator.projects[PROJECT].nodes[ZONE].get("pod-j")
        return json.loads(json.dumps(found)) if found is not None else None


def hidden_spec() -> dict[str, Any]:
    return dict(NODE, metadata=dict(NODE["metadata"], **{"startup-script": HIDDEN}))


def test_a_delete_with_journal_keeps_the_whole_spec_and_a_create_takes_it_back(
    api: Api, folder: Path
) -> None:
    assert not node(api, folder).failed
    deleted = node(api, folder, state="absent", journal=True)
    assert not deleted.failed and deleted["changed"], deleted.msg
    assert stored(api) is None
    assert "canary" not in json.dumps(deleted.result)
    path = folder / f"journal-{PROJECT}-{ZONE}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    entry = json.loads(path.read_text())["nodes"]["pod-j"]
    assert entry["step"] == "creating" and entry["spec"]["metadata"]["startup-script"] == SECRET

    # What recover.yml gives back: the spec tpu_node_info returned, with its marker.
    created = node(api, folder, journal=True, metadata=hidden_spec()["metadata"])
    assert not created.failed and created["changed"], created.msg
    assert stored(api)["metadata"]["startup-script"] == SECRET
    assert "canary" not in json.dumps(created.result)


def test_a_marker_for_an_existing_node_is_its_own_value_and_changes_nothing(
    api: Api, folder: Path
) -> None:
    node(api, folder)
    api.reset_calls()
    again = node(api, folder, metadata=hidden_spec()["metadata"])
    assert not again.failed and again["changed"] is False, (again.msg, again.get("differences"))
    assert api.mutating_calls() == {}
    assert not folder.exists()  # without journal, nothing is written


@pytest.mark.parametrize("journal", [False, True])
def test_a_marker_nothing_holds_is_refused_before_any_call_that_changes(
    api: Api, folder: Path, journal: bool
) -> None:
    outcome = node(api, folder, journal=journal, metadata={"startup-script": HIDDEN})
    assert outcome.failed
    assert "hidden marker" in outcome.msg and "Give the value itself" in outcome.msg
    assert ("journal: true looks" in outcome.msg) is not journal
    assert api.mutating_calls() == {}
    assert stored(api) is None


def test_a_marker_of_another_length_is_not_taken(api: Api, folder: Path) -> None:
    node(api, folder)
    other = marker("startup-script", SECRET + "more")
    outcome = node(api, folder, metadata={"startup-script": other})
    assert outcome.failed and "looked at: the node" in outcome.msg, outcome.msg
    assert stored(api)["metadata"]["startup-script"] == SECRET


def test_check_mode_writes_no_journal_and_deletes_nothing(api: Api, folder: Path) -> None:
    node(api, folder)
    api.reset_calls()
    checked = node(api, folder, check=True, state="absent", journal=True)
    assert not checked.failed and checked["changed"]
    assert api.mutating_calls() == {} and not folder.exists()


def test_a_journal_that_cannot_be_written_stops_the_delete(
    api: Api, folder: Path, tmp_path: Path
) -> None:
    node(api, folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder.symlink_to(elsewhere)
    outcome = node(api, folder, state="absent", journal=True)
    assert outcome.failed and "symbolic link" in outcome.msg, outcome.msg
    assert stored(api) is not None and "DELETE nodes.delete" not in api.mutating_calls()


def test_the_journal_records_real_values_only(folder: Path) -> None:
    def record(script: str) -> tuple[bool, dict[str, Any]]:
        spec = {"accelerator_type": "v4-8", "metadata": {"startup-script": script}}
        return tpu_journal.record(
            PROJECT, ZONE, [{"name": "pod-j", "spec": spec}], "creating", str(folder)
        )

    with pytest.raises(tpu_journal.JournalError, match="keeps the values themselves"):
        record(HIDDEN)
    assert record(SECRET)[0] is True
    # The marker of what the entry holds keeps the value; the file never holds a marker.
    assert record(HIDDEN)[0] is False
    assert tpu_journal.read(PROJECT, ZONE, str(folder))["pod-j"]["spec"]["metadata"] == {
        "startup-script": SECRET
    }
    shown = run_module("tpu_journal", {"project": PROJECT, "zone": ZONE, "state_dir": str(folder)})
    assert shown["entries"]["pod-j"]["spec"]["metadata"] == {"startup-script": HIDDEN}
