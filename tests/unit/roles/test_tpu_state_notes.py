"""The notes of a tpu_state record: what a role worked out during its tasks (what the kernel can
do, a user's uid), kept with the record and handed back only by a check that finds the worker
converged, so a role that skips its tasks still knows them (the nfs role's reports)."""

from __future__ import annotations

from typing import Any

import pytest
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_state

from tests.module_harness import run_module

NOTES = {"kernel": {"client": False, "server": False}, "owner_uid": "1000"}
SPEC = {"paths": ["/etc/fstab"], "digest": "d1", "role": "nfs"}
SEEN = {
    "paths": {"/etc/fstab": {"kind": "file", "sha256": "a"}},
    "packages": {},
    "units": {},
    "commands": [],
}


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """One record in memory, and the worker as `seen` says it is."""
    box: dict[str, Any] = {"record": None, "seen": SEEN}
    monkeypatch.setattr(tpu_state, "read_record", lambda role: box["record"])
    monkeypatch.setattr(tpu_state, "observe", lambda spec, run=None: box["seen"])
    monkeypatch.setattr(tpu_state, "dpkg_problems", lambda run: [])

    def write(role: str, record: dict) -> None:
        box["record"] = dict(record, version=tpu_state.RECORD_VERSION)

    monkeypatch.setattr(tpu_state, "write_record", write)
    return box


def test_notes_are_kept_and_handed_back_when_converged(worker) -> None:
    recorded = run_module("tpu_state", dict(SPEC, state="record", notes=NOTES))
    assert not recorded.failed and recorded.result["notes"] == {}
    assert worker["record"]["notes"] == NOTES
    checked = run_module("tpu_state", SPEC)
    assert checked.result["converged"] is True
    assert checked.result["notes"] == NOTES


def test_no_notes_when_anything_differs(worker) -> None:
    run_module("tpu_state", dict(SPEC, state="record", notes=NOTES))
    worker["seen"] = dict(SEEN, paths={"/etc/fstab": {"kind": "absent"}})
    drifted = run_module("tpu_state", SPEC)
    assert drifted.result["converged"] is False and drifted.result["notes"] == {}
    other_inputs = run_module("tpu_state", dict(SPEC, digest="d2"))
    assert other_inputs.result["converged"] is False and other_inputs.result["notes"] == {}


def test_a_record_without_notes_stays_as_it_was(worker) -> None:
    run_module("tpu_state", dict(SPEC, state="record"))
    assert "notes" not in worker["record"]
    checked = run_module("tpu_state", SPEC)
    assert checked.result["converged"] is True and checked.result["notes"] == {}


def test_nothing_is_recorded_in_check_mode(worker) -> None:
    outcome = run_module("tpu_state", dict(SPEC, state="record", notes=NOTES), check=True)
    assert worker["record"] is None and outcome.result["notes"] == {}
    assert run_module("tpu_state", SPEC).result["notes"] == {}
