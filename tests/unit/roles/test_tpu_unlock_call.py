"""How the libtpu role calls tpu-unlock and reads its report (module_utils/tpu_unlock_call.py)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.tpu_unlock_argv import tpu_unlock_argv
from ansible_collections.cloudtpu.pod.plugins.filter.tpu_unlock_report import tpu_unlock_report
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_unlock_call import (
    unlock_argv,
    unlock_report,
)

HEAD = ["/usr/local/bin/tpu-unlock", "--json", "--device-glob", "/dev/accel*"]


def test_the_defaults() -> None:
    argv = unlock_argv("/dev/accel*", "/tmp/tpu_logs", ["/tmp/libtpu_lockfile"])
    assert argv == [*HEAD, "--log-dir", "/tmp/tpu_logs", "--lock=/tmp/libtpu_lockfile"]


def test_every_switch() -> None:
    argv = unlock_argv(
        "/dev/accel*",
        "/tmp/tpu_logs",
        ["/tmp/libtpu_lockfile", "/tmp/libtpu.so_lockfile"],
        remove_logs="no",
        kill="yes",
        kill_grace=5,
        kill_users=["tpu", 1001],
        check_mode=True,
    )
    assert argv[6:] == [
        "--lock=/tmp/libtpu_lockfile",
        "--lock=/tmp/libtpu.so_lockfile",
        "--keep-logs",
        "--kill",
        "--grace",
        "5",
        "--user=tpu",
        "--user=1001",
        "--dry-run",
    ]


def test_users_count_only_with_kill() -> None:
    argv = tpu_unlock_argv("/dev/accel*", "/tmp/l", [], kill=False, kill_users=["tpu"])
    assert not [a for a in argv if a.startswith("--user") or a == "--kill"]


def test_the_report_and_its_lines() -> None:
    report = {
        "message": "a process holds the TPU",
        "holders": [{"pid": 42, "user": "tpu", "command": "python train.py"}],
        "refused": [{"path": "/tmp/libtpu_lockfile", "reason": "a symbolic link"}, {"pid": 7}],
        "exit_code": 3,
    }
    read = unlock_report({"rc": 3, "stdout": json.dumps(report)})
    assert read["report"] == report
    assert read["lines"] == ["a process holds the TPU", "holder: pid 42 tpu python train.py"]
    assert read["refused_text"] == "/tmp/libtpu_lockfile: a symbolic link"


def test_a_skipped_run_says_nothing_was_inspected() -> None:
    read = tpu_unlock_report({"skipped": True, "changed": False})
    assert read["report"]["exit_code"] == -1
    assert read["lines"] == [read["report"]["message"]]
    assert "not installed yet" in read["report"]["message"]


def test_output_that_is_not_json_fails_with_the_filters_name() -> None:
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="tpu_unlock_report"):
        tpu_unlock_report({"rc": 1, "stdout": "Traceback"})
