"""The filters behind playbooks/run.yml and logs.yml: run_options (the request, typed and
checked), run_environment (the exported variables), run_report (the table) and run_pick (which
run logs.yml fetches). Pure functions; the playbooks themselves run against a pod in
tests/integration/test_run_playbook.py."""

from __future__ import annotations

import json
import re

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter.logs_options import logs_options
from ansible_collections.cloudtpu.pod.plugins.filter.run_attempts import run_attempts
from ansible_collections.cloudtpu.pod.plugins.filter.run_environment import run_environment
from ansible_collections.cloudtpu.pod.plugins.filter.run_options import run_options
from ansible_collections.cloudtpu.pod.plugins.filter.run_pick import run_pick
from ansible_collections.cloudtpu.pod.plugins.filter.run_report import run_report
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_run_data import RUN_ID_RE

HOME = "/home/tpu"


def test_defaults_and_run_id():
    got = run_options({"cmd": "python train.py"})
    assert got["ok"], got
    assert (got["detach"], got["unlock"], got["sync"]) == (False, True, False)
    assert (got["timeout"], got["tail"], got["start_delay"]) == (3600, 20, 5)
    assert got["label"] == "python train.py" and got["script"] == ""
    assert RUN_ID_RE.match(got["run_id"]), got["run_id"]
    assert re.match(r"^\d{8}T\d{6}Z-[0-9a-f]{4}$", got["run_id"])


@pytest.mark.parametrize(
    ("raw", "field", "expected"),
    [
        # what -e key=value gives: strings
        ({"detach": "true"}, "detach", True),
        ({"detach": "yes"}, "detach", True),
        ({"detach": "1"}, "detach", True),
        ({"detach": "False"}, "detach", False),
        ({"detach": "off"}, "detach", False),
        ({"detach": True}, "detach", True),
        ({"unlock": "no"}, "unlock", False),
        ({"sync": "on"}, "sync", True),
        ({"timeout": "600"}, "timeout", 600),
        ({"timeout": 600}, "timeout", 600),
        ({"tail": "0"}, "tail", 0),
        ({"start_delay": " 10 "}, "start_delay", 10),
    ],
)
def test_strings_from_the_command_line_are_typed(raw, field, expected):
    got = run_options({"cmd": "hostname", **raw})
    assert got["ok"], got
    assert got[field] == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"detach": "maybe"}, 'tpu_run_detach is "maybe"'),
        ({"timeout": "soon"}, "tpu_run_timeout is"),
        ({"timeout": "0"}, "tpu_run_timeout is"),
        ({"timeout": True}, "tpu_run_timeout is true: not a whole number"),
        ({"tail": "-1"}, "tpu_run_tail is"),
        ({"start_delay": "1.5"}, "tpu_run_start_delay is"),
        ({"workdir": "../etc"}, "tpu_run_workdir is '../etc'"),
        ({"workdir": "~/x"}, "tpu_run_workdir is '~/x'"),
        ({"env": {"1BAD": "x"}}, "not shell variable names"),
        ({"env": "A=1"}, "tpu_run_env must be a mapping"),
    ],
)
def test_bad_values_name_the_variable(raw, message):
    got = run_options({"cmd": "hostname", **raw})
    assert not got["ok"]
    assert message in got["message"], got["message"]


def test_every_problem_is_reported_at_once():
    got = run_options({"cmd": "x", "detach": "maybe", "timeout": "soon"})
    assert len(got["errors"]) == 2, got


def test_the_key_value_truncation_is_refused_with_the_working_forms():
    # ansible-playbook -e cmd='python train.py --steps 10' (the shell removed the quotes)
    got = run_options({"cmd": "python", "raw_params": "train.py --steps 10"})
    assert not got["ok"]
    assert "kept 'python' and dropped 'train.py --steps 10'" in got["message"]
    assert """-e "cmd='python train.py --steps 10'\"""" in got["message"]
    assert """-e '{"cmd": "python train.py --steps 10"}'""" in got["message"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "nothing to run"),
        ({"cmd": ""}, "nothing to run"),
        ({"cmd": "   "}, "non-empty command"),
        ({"cmd": "x", "script": "/etc/hostname"}, "not both"),
        ({"script": "/no/such/script.sh"}, "no such file on this machine"),
    ],
)
def test_exactly_one_of_cmd_and_script(raw, message):
    got = run_options(raw)
    assert not got["ok"]
    assert message in got["message"], got["message"]


def test_a_relative_script_is_taken_from_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "train.sh").write_text("echo hi\n")
    monkeypatch.chdir(tmp_path)
    got = run_options({"script": "train.sh"})
    assert got["ok"], got
    assert got["script"] == str(tmp_path / "train.sh")
    assert got["script_name"] == "train.sh" and got["label"] == "script: train.sh"
    assert got["cmd"] == ""


@pytest.mark.parametrize(
    ("raw", "workdir"),
    [
        ({}, HOME),
        ({"workdir": "proj"}, f"{HOME}/proj"),
        ({"workdir": "proj/"}, f"{HOME}/proj"),
        ({"workdir": "/opt/proj"}, "/opt/proj"),
        ({"workdir": HOME}, HOME),
        ({"sync_dest": f"{HOME}/myproject"}, f"{HOME}/myproject"),
        ({"workdir": "other", "sync_dest": f"{HOME}/myproject"}, f"{HOME}/other"),
    ],
)
def test_the_working_folder_of_a_host(raw, workdir):
    got = run_options({"cmd": "pwd", **raw}, HOME)
    assert got["ok"], got
    assert got["workdir"] == workdir


@pytest.mark.parametrize("workdir", ["/etc", "/tmp/x", "/home/other/x", "/opt"])
def test_a_working_folder_outside_the_allowed_places_is_refused(workdir):
    got = run_options({"cmd": "pwd", "workdir": workdir}, HOME)
    assert not got["ok"]
    assert "tpu_run_workdir" in got["message"], got["message"]


def test_log_copies_are_off_by_default_and_go_to_a_folder_that_outlives_the_worker():
    got = run_options({"cmd": "pwd"}, HOME)
    assert got["log_copy"] == "" and got["log_copy_every"] == 60
    got = run_options({"cmd": "pwd", "log_copy": "/mnt/ckpt/runs", "log_copy_every": "2"}, HOME)
    assert got["ok"] and (got["log_copy"], got["log_copy_every"]) == ("/mnt/ckpt/runs", 2)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"log_copy": "runs"}, 'tpu_run_log_copy is "runs"'),
        ({"log_copy": "/home/tpu/runs"}, 'tpu_run_log_copy is "/home/tpu/runs"'),
        ({"log_copy": "/mnt/ckpt/runs/"}, "tpu_run_log_copy"),
        ({"log_copy": "/mnt/../etc"}, "tpu_run_log_copy"),
        ({"log_copy": "/mnt/x\n"}, "tpu_run_log_copy"),
        ({"log_copy_every": "0"}, "tpu_run_log_copy_every"),
    ],
)
def test_a_log_copy_folder_or_interval_that_is_not_allowed_is_refused(raw, words):
    got = run_options({"cmd": "pwd", **raw}, HOME)
    assert not got["ok"] and words in got["message"], got["message"]
    assert "allowed" in got["message"]


def test_environment_values_become_strings():
    assert run_environment({"A": 1, "B": True, "C": "x y", "D": None}) == {
        "A": "1",
        "B": "true",
        "C": "x y",
    }
    assert run_environment(None) == {}
    with pytest.raises(AnsibleFilterError, match="not shell variable names"):
        run_environment({"A-B": "1"})
    with pytest.raises(AnsibleFilterError, match="strings, numbers or booleans"):
        run_environment({"A": ["x"]})


HOSTS = ["w0", "w1", "w2"]


def test_report_attached_exit_codes_and_tails():
    reports = [
        {"started": True, "finished": True, "rc": 0, "tail": ["a", "b", "c"]},
        {"started": True, "finished": True, "rc": 7, "tail": ["boom"]},
        None,  # unreachable before the start
    ]
    got = run_report(reports, HOSTS, False, 2, "20261123T143000Z-ab12", "/home/tpu/cloudtpu-runs")
    assert [r["rc"] for r in got["rows"]] == [0, 7, "-"]
    assert got["rows"][0]["tail"] == ["b", "c"]
    assert got["failed"] == [{"host": "w1", "rc": 7}, {"host": "w2", "rc": "-"}]
    assert not got["ok"]
    assert got["lines"][0].split() == ["worker", "rc", "output", "(last", "2", "lines)"]
    assert got["lines"][2] == "w0      0         b"
    assert got["lines"][3] == "                  c"
    assert got["summary"].startswith("1 of 3 workers succeeded; run 20261123T143000Z-ab12")
    assert "/home/tpu/cloudtpu-runs/20261123T143000Z-ab12/<worker>.log" in got["summary"]
    assert got["summary"].endswith("failed: w1 (rc 7), w2 (rc -)")


def test_report_timeout_and_detached_runs():
    waiting = {"started": True, "finished": False, "rc": None, "tail": ["step 9"], "reason": "late"}
    got = run_report([waiting], ["w0"], False, 20)
    assert got["rows"][0] == {"host": "w0", "ok": False, "rc": "?", "tail": ["step 9", "late"]}
    detached = {"started": True, "pid": 41, "log": "/home/tpu/cloudtpu-runs/r/w0.log"}
    got = run_report([detached, {}], ["w0", "w1"], True, 20)
    assert got["rows"][0]["rc"] == "started" and got["rows"][0]["ok"]
    assert got["rows"][0]["tail"] == ["pid 41, log /home/tpu/cloudtpu-runs/r/w0.log"]
    assert got["failed"] == [{"host": "w1", "rc": "-"}]
    assert "1 of 2 workers started" in got["summary"]


def test_report_of_no_worker_is_not_a_success():
    assert not run_report([], [])["ok"]


RUNS = [["20261123T143000Z-ab12", "20261122T100000Z-0001", "notes"], ["20261123T143000Z-ab12"]]


def test_pick_the_newest_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    got = run_pick(RUNS)
    assert got["ok"], got
    assert got["run_id"] == "20261123T143000Z-ab12"
    assert got["dest"] == str(tmp_path / ".cache" / "runs" / "20261123T143000Z-ab12")
    assert got["runs"] == ["20261123T143000Z-ab12", "20261122T100000Z-0001"]


def test_pick_a_named_run_into_a_named_folder():
    got = run_pick(RUNS, "20261122T100000Z-0001", "/data/runs")
    assert got["ok"] and got["dest"] == "/data/runs/20261122T100000Z-0001", got


@pytest.mark.parametrize(
    ("found", "requested", "message"),
    [
        ([[], []], "", "no run found on the workers"),
        ([["notes"]], "", "no run found on the workers"),
        (RUNS, "../../etc", 'tpu_logs_run is "../../etc": not a run id'),
        (RUNS, "20261124T000000Z-ffff", "is not on any of these workers"),
    ],
)
def test_pick_refusals(found, requested, message):
    got = run_pick(found, requested)
    assert not got["ok"]
    assert message in got["message"], got["message"]


def record(run_id: str, continues: str = "") -> str:
    return json.dumps({"run_id": run_id, "host": "pod-a-w0", "continues": continues})


A, B, C = "20261123T140000Z-aaaa", "20261123T150000Z-bbbb", "20261123T160000Z-cccc"


def test_the_attempts_a_run_continues_oldest_first():
    lines = [record(B, A), "not json", record(A), record(C, B), "[1]"]
    assert run_attempts(lines, C) == [A, B]
    assert run_attempts(lines, B) == [A]
    assert run_attempts(lines, A) == []


def test_a_missing_record_or_a_loop_ends_the_chain():
    # B's record was never copied: C continues B, and what was before B is not known
    assert run_attempts([record(C, B), record(A)], C) == [B]
    assert run_attempts([record(A, B), record(B, A)], A) == [B]
    assert run_attempts([record(C, "../../etc")], C) == []
    assert run_attempts("not a list", C) == []


def test_logs_take_the_copy_folder_as_runs_give_it():
    assert logs_options({"copy": "/mnt/ckpt/runs"})["copy"] == "/mnt/ckpt/runs"
    assert logs_options({})["copy"] == ""
    got = logs_options({"copy": "/etc/runs"})
    assert not got["ok"] and 'tpu_logs_copy is "/etc/runs"' in got["message"], got["message"]
