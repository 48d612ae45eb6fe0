"""babysit.yml goes on from the record it keeps on this machine: the filter babysit_pick with
kept records, and the lookup babysit_kept that reads them (only the user's own files, which no
one else may write)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ansible.errors import AnsibleLookupError
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_pick import babysit_pick
from ansible_collections.cloudtpu.pod.plugins.lookup.babysit_kept import LookupModule, kept_records

from tests.unit.playbooks.test_babysit import NEW, OLD, record

NEWER = "20261123T180000Z-dddd"


def kept(run_id: str, hosts=("w0", "w1"), over=False, origin=OLD, cmd="python train.py") -> dict:
    """A record as babysit.yml keeps it (its _tpu_babysit fact, through to_nice_json)."""
    return {
        "origin": origin,
        "run_id": run_id,
        "hosts": list(hosts),
        "cmd": cmd,
        "script": "",
        "workdir": "/home/tpu/myproject",
        "log": f"/work/.cache/babysit/{origin}.log",
        "over": over,
        "recoveries": 1,
        "events": ["2026-11-23T16:00:00Z watching run", "2026-11-23T16:01:00Z recover: lost"],
    }


def test_a_kept_run_that_no_worker_records_is_resumed():
    # the node was recreated after the recovery: its workers have no runs folder at all
    got = babysit_pick({"w0": [], "w1": ""}, "", [kept(NEW)])
    assert got["ok"] and got["resumed"], got
    assert (got["run_id"], got["hosts"], got["cmd"]) == (NEW, ["w0", "w1"], "python train.py")
    assert got["origin"] == OLD and got["log"] == f"/work/.cache/babysit/{OLD}.log"
    assert got["workdir"] == "/home/tpu/myproject"
    assert got["events"] == kept(NEW)["events"], "the log goes on with the events kept"


def test_the_newest_run_wins_between_the_workers_and_the_kept_records():
    found = {"w0": [record(NEWER, "w0")], "w1": [record(NEWER, "w1")]}
    got = babysit_pick(found, "", [kept(NEW)])
    assert got["ok"] and not got["resumed"] and got["run_id"] == NEWER, got
    older = {"w0": [record(OLD, "w0")], "w1": [record(OLD, "w1")]}
    got = babysit_pick(older, "", [kept(NEW)])
    assert got["resumed"] and got["run_id"] == NEW, got


def test_a_run_the_workers_have_keeps_the_origin_and_log_of_its_record():
    found = {"w0": [record(NEW, "w0")], "w1": [record(NEW, "w1")]}
    got = babysit_pick(found, "", [kept(NEW)])
    assert got["ok"] and not got["resumed"] and got["origin"] == OLD, got
    # the restart happened before the babysitter could note it: the new run continues the kept one
    newer = json.loads(record(NEWER, "w0"))
    newer["continues"] = NEW
    got = babysit_pick({"w0": [json.dumps(newer)], "w1": []}, "", [kept(NEW)])
    assert got["run_id"] == NEWER and not got["resumed"] and got["origin"] == OLD, got
    assert got["log"].endswith(f"{OLD}.log")


@pytest.mark.parametrize(
    "records",
    [
        [kept(NEW, over=True)],  # the watch ended: nothing to go on with
        [kept(NEW, over="true")],
        [kept(NEW, hosts=("w0", "other-w0"))],  # a worker this play does not reach
        [kept(NEW, hosts=())],
        [dict(kept(NEW), run_id="../../etc")],
        [dict(kept(NEW), over=None)],
        ["not a record", 42],
        "not a list",
    ],
)
def test_kept_records_that_are_over_elsewhere_or_unsound_are_not_resumed(records):
    got = babysit_pick({"w0": [], "w1": []}, "", records)
    assert not got["ok"] and "kept by babysit.yml" in got["message"], got


def test_a_requested_run_may_be_a_kept_one():
    got = babysit_pick({"w0": [record(NEWER, "w0")]}, NEW, [kept(NEW, hosts=["w0"])])
    assert got["ok"] and got["resumed"] and got["run_id"] == NEW, got


def write(folder: Path, name: str, content: str, mode: int = 0o600) -> Path:
    path = folder / name
    path.write_text(content)
    path.chmod(mode)
    return path


def test_the_lookup_reads_only_the_users_json_files_that_no_one_else_may_write(tmp_path: Path):
    write(tmp_path, "a.json", json.dumps(kept(NEW)))
    write(tmp_path, "a.log", "not a record\n")
    write(tmp_path, "open.json", json.dumps(kept(OLD)), mode=0o666)
    write(tmp_path, "list.json", "[1, 2]")
    write(tmp_path, "broken.json", "{")
    outside = write(tmp_path, "outside.txt", json.dumps(kept(NEWER)))
    os.symlink(outside, tmp_path / "link.json")
    records, warnings = kept_records(str(tmp_path))
    assert records == [kept(NEW)]
    said = "\n".join(warnings)
    for name in ("open.json", "list.json", "broken.json", "link.json"):
        assert name in said, said
    assert "a.log" not in said
    assert kept_records(str(tmp_path / "missing")) == ([], [])


def test_the_lookup_takes_one_absolute_folder(tmp_path: Path):
    lookup = LookupModule()
    write(tmp_path, "a.json", json.dumps(kept(NEW)))
    assert lookup.run([str(tmp_path)]) == [[kept(NEW)]]
    for terms in ([], ["relative/folder"], [str(tmp_path), str(tmp_path)], [""]):
        with pytest.raises(AnsibleLookupError):
            lookup.run(terms)
