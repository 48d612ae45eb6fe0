"""The record of playbooks/ssh_config.yml, module_utils/tpu_ssh_config_record: ssh_config_targets
(which files a run writes, with which options) and ssh_config_record (the record after it), old
and new record shapes; and the filters of the same names over it."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter import ssh_config_record as record_plugin
from ansible_collections.cloudtpu.pod.plugins.filter import ssh_config_targets as targets_plugin
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_ssh_config_record import (
    RecordError,
    ssh_config_record,
    ssh_config_targets,
)

NAME = "inventories/gcp"
DEMO = "/srv/project/.demo/ssh_config"
HOME = "/home/me/.ssh/config"
OLD = {NAME: {"path": DEMO, "user": "", "identity_file": "/k", "proxy_jump": "", "port": ""}}
NEW = {
    NAME: {
        "files": {
            DEMO: {"path": DEMO, "user": "", "identity_file": "/k", "proxy_jump": "", "port": ""},
            HOME: {
                "path": HOME,
                "user": "bob",
                "identity_file": "",
                "proxy_jump": "j",
                "port": "22",
            },
        }
    },
    "other": {"path": "/x", "user": "", "identity_file": "", "proxy_jump": "", "port": ""},
}


def entry(path, user="", identity_file="", proxy_jump="", port="", forwards=()):
    return {
        "path": path,
        "user": user,
        "identity_file": identity_file,
        "proxy_jump": proxy_jump,
        "port": port,
        "forwards": list(forwards),
    }


def test_registered():
    assert targets_plugin.FilterModule().filters() == {
        "ssh_config_targets": targets_plugin.ssh_config_targets
    }
    assert record_plugin.FilterModule().filters() == {
        "ssh_config_record": record_plugin.ssh_config_record
    }


def test_the_filters_answer_as_the_record_does():
    explicit = {"user": "carol", "forwards": ["jupyter"]}
    args = (NEW, NAME, True, None, HOME, "", explicit)
    assert targets_plugin.ssh_config_targets(*args) == ssh_config_targets(*args)
    written = [entry("/f", port="2200")]
    assert record_plugin.ssh_config_record(OLD, NAME, written) == ssh_config_record(
        OLD, NAME, written
    )


def test_a_plain_run_writes_one_file_with_the_explicit_options_only():
    explicit = {"user": None, "identity_file": None, "proxy_jump": "jump", "port": 2200}
    got = ssh_config_targets(json.dumps(NEW), NAME, default_path=HOME, explicit=explicit)
    assert got == [entry(HOME, proxy_jump="jump", port="2200")]
    assert ssh_config_targets("", NAME, path="/tmp/c", default_path=HOME) == [entry("/tmp/c")]


def test_an_explicit_path_is_expanded_and_an_empty_one_kept_for_the_check(monkeypatch):
    monkeypatch.setenv("HOME", "/home/me")
    assert ssh_config_targets("", NAME, path="~/c")[0]["path"] == "/home/me/c"
    assert ssh_config_targets("", NAME, path="", default_path=HOME)[0]["path"] == ""


def test_refresh_reads_the_old_shape():
    got = ssh_config_targets(json.dumps(OLD), NAME, refresh=True, default_path=HOME)
    assert got == [entry(DEMO, identity_file="/k")]


def test_refresh_rewrites_every_recorded_file_with_its_own_options():
    got = ssh_config_targets(NEW, NAME, refresh=True, refresh_path="", default_path=HOME)
    assert got == [
        entry(DEMO, identity_file="/k"),
        entry(HOME, user="bob", proxy_jump="j", port="22"),
    ]


def test_refresh_of_one_path_rewrites_only_that_file():
    got = ssh_config_targets(NEW, NAME, refresh=True, refresh_path=HOME)
    assert got == [entry(HOME, user="bob", proxy_jump="j", port="22")]
    # tpu_ssh_config_path counts as the one file too; an unrecorded one gets no recorded options.
    assert ssh_config_targets(NEW, NAME, refresh=True, path="/new") == [entry("/new")]


def test_explicit_options_win_over_recorded_ones():
    explicit = {"user": "carol", "identity_file": None, "proxy_jump": "", "port": None}
    got = ssh_config_targets(NEW, NAME, refresh=True, explicit=explicit)
    assert got == [
        entry(DEMO, user="carol", identity_file="/k"),
        entry(HOME, user="carol", port="22"),
    ]


@pytest.mark.parametrize("records", ["", None, "{}", {}, {NAME: "junk"}, {NAME: {"files": []}}])
def test_refresh_without_a_record_writes_nothing(records):
    assert ssh_config_targets(records, NAME, refresh=True, default_path=HOME) == []


@pytest.mark.parametrize("records", ["{not json", "[1]"])
def test_a_broken_record_is_refused(records):
    with pytest.raises(RecordError, match="tpu_ssh_config_record") as refused:
        ssh_config_targets(records, NAME, refresh=True)
    # both filters fail a task with the very same message
    with pytest.raises(AnsibleFilterError) as failed:
        targets_plugin.ssh_config_targets(records, NAME, refresh=True)
    assert failed.value.message == str(refused.value)
    with pytest.raises(AnsibleFilterError) as failed:
        record_plugin.ssh_config_record(records, NAME, [])
    assert failed.value.message == str(refused.value)


def test_record_adds_a_file_to_an_old_shape_and_keeps_other_names():
    got = ssh_config_record(json.dumps(OLD), NAME, [entry(HOME, user="bob")])
    assert got == {
        NAME: {"files": {DEMO: entry(DEMO, identity_file="/k"), HOME: entry(HOME, "bob")}}
    }
    got = ssh_config_record(NEW, "fresh", [entry("/f")])
    assert got["fresh"] == {"files": {"/f": entry("/f")}}
    assert got["other"] == NEW["other"] and got[NAME] == NEW[NAME]


def test_record_replaces_the_entry_of_a_file_in_place():
    got = ssh_config_record(NEW, NAME, [entry(DEMO, port="2200")])
    assert list(got[NAME]["files"]) == [DEMO, HOME]
    assert got[NAME]["files"][DEMO] == entry(DEMO, port="2200")
    # A record from before the forwards reads as none.
    assert got[NAME]["files"][HOME] == {**NEW[NAME]["files"][HOME], "forwards": []}
    assert ssh_config_record("", NAME, []) == {NAME: {"files": {}}}


FORWARDS = ["jupyter", {"local": 8080, "remote": 80}]


def test_forwards_are_written_as_given_and_none_when_not_given():
    explicit = {"user": None, "forwards": FORWARDS}
    got = ssh_config_targets("", NAME, default_path=HOME, explicit=explicit)
    assert got == [entry(HOME, forwards=FORWARDS)]
    # Not given: none, whatever the record says (only a refresh reads it).
    recorded = ssh_config_record("", NAME, got)
    assert ssh_config_targets(recorded, NAME, default_path=HOME) == [entry(HOME)]
    # Kept as given, for the play's check to refuse with the value shown.
    bad = ssh_config_targets("", NAME, default_path=HOME, explicit={"forwards": "jupyter"})
    assert bad[0]["forwards"] == "jupyter"


def test_a_refresh_keeps_the_recorded_forwards_and_explicit_ones_win():
    recorded = ssh_config_record(NEW, NAME, [entry(DEMO, identity_file="/k", forwards=FORWARDS)])
    assert recorded[NAME]["files"][DEMO]["forwards"] == FORWARDS
    got = ssh_config_targets(recorded, NAME, refresh=True)
    assert got == [
        entry(DEMO, identity_file="/k", forwards=FORWARDS),
        entry(HOME, user="bob", proxy_jump="j", port="22"),
    ]
    explicit = {"forwards": ["tensorboard"]}
    got = ssh_config_targets(recorded, NAME, refresh=True, refresh_path=DEMO, explicit=explicit)
    assert got == [entry(DEMO, identity_file="/k", forwards=["tensorboard"])]
    # An empty list given removes them.
    got = ssh_config_targets(recorded, NAME, refresh=True, explicit={"forwards": []})
    assert [e["forwards"] for e in got] == [[], []]
