"""The status table (plugins/filter/status_table.py) and the probe that status.yml runs on each
worker (playbooks/templates/status_probe.py.j2), the probe against folders made here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter import status_api_errors as errors_plugin
from ansible_collections.cloudtpu.pod.plugins.filter.status_api_errors import status_api_errors
from ansible_collections.cloudtpu.pod.plugins.filter.status_table import (
    FilterModule,
    describe_locks,
    describe_tpu_info,
    format_uptime,
    parse_probe,
    status_table,
)

REPO = Path(__file__).resolve().parents[3]


def api_node(name="pod", state="READY", health="HEALTHY", workers=2):
    return {
        "name": name,
        "project": "p",
        "zone": "us-central2-b",
        "state": state,
        "health": health,
        "accelerator_type": "v4-16",
        "workers": [
            {"worker_id": i, "internal_ip": f"10.0.0.{i + 2}", "external_ip": None}
            for i in range(workers)
        ],
    }


def probe(**extra):
    data = {
        "uptime": 93784.2,
        "devices": [],
        "locks": {"holders": [], "removed": [], "exit_code": 0},
        "runs": [],
        "tpu_info": {"shown": False, "reason": "tpu-info is not installed in /home/u/.venv310"},
    }
    data.update(extra)
    return json.dumps(data)


def report(host, worker_id, node="pod", **extra):
    base = {"host": host, "node": node, "worker_id": worker_id, "unreachable": False}
    base.update(extra)
    return base


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0d 00h 00m"), (93784.2, "1d 02h 03m"), ("59", "0d 00h 00m"), (None, "?"), (-1, "?")],
)
def test_format_uptime(seconds, text):
    assert format_uptime(seconds) == text


@pytest.mark.parametrize(
    ("locks", "text"),
    [
        ({"holders": [], "removed": [], "exit_code": 0}, "free"),
        (
            {"holders": [{"pid": 42, "user": "ana", "command": "python train.py"}], "exit_code": 3},
            "42/ana/python train.py",
        ),
        ({"holders": [], "exit_code": 4, "unreadable": [7]}, "not inspectable (needs root)"),
        (
            {"holders": [], "removed": ["/tmp/libtpu_lockfile"]},
            "free, stale lock files: /tmp/libtpu_lockfile",
        ),
        (
            {"error": "/usr/local/bin/tpu-unlock is not installed"},
            "/usr/local/bin/tpu-unlock is not installed",
        ),
        (None, "?"),
    ],
)
def test_describe_locks(locks, text):
    assert describe_locks(locks) == text


def test_parse_probe_takes_the_last_json_line():
    assert parse_probe('warning: x\n{"uptime": 1}\n') == {"uptime": 1}
    assert parse_probe("") is None
    assert parse_probe("{not json") is None
    assert parse_probe(None) is None


def test_ready_node_with_runs_and_tpu_info():
    runs = [
        {
            "run_id": "20261123T143000Z-ab12",
            "cmd": "python train.py",
            "pid": 77,
            "state": "running",
            "rc": None,
        },
        {
            "run_id": "20261122T100000Z-cd34",
            "cmd": "script: eval.sh",
            "pid": 5,
            "state": "exited",
            "rc": 3,
        },
        {
            "run_id": "20261121T100000Z-ef56",
            "cmd": "sleep 1",
            "pid": 9,
            "state": "gone",
            "rc": None,
        },
    ]
    info = {"shown": True, "output": "chip 0  HBM 1.0 GiB\nchip 1  HBM 0.5 GiB"}
    lines = status_table(
        [api_node()],
        [
            report("pod-w0", 0, probe=probe(runs=runs, tpu_info=info)),
            report("pod-w1", "1", probe=probe()),
        ],
    )
    text = "\n".join(lines)
    assert lines[0].startswith(
        "node pod  type v4-16  p/us-central2-b  state READY  health HEALTHY  2 workers"
    ), text
    w0 = next(line for line in lines if line.strip().startswith("pod-w0"))
    assert "10.0.0.2" in w0 and "1d 02h 03m" in w0 and w0.endswith("free"), text
    assert "run 20261123T143000Z-ab12: running (pid 77): python train.py" in text
    assert "run 20261122T100000Z-cd34: exited rc 3: script: eval.sh" in text
    assert "run 20261121T100000Z-ef56: ended without an exit code (pid 9 is gone): sleep 1" in text
    assert "        chip 1  HBM 0.5 GiB" in lines, text
    assert "tpu-info: not shown, tpu-info is not installed in /home/u/.venv310" in text
    assert text.count("pod-w1") == 1, text


@pytest.mark.parametrize(
    ("info", "line"),
    [
        (
            {"shown": False, "no_device": True, "reason": "tpu-info: No TPU chips found."},
            "      tpu-info: no TPU device (tpu-info: No TPU chips found.)",
        ),
        (
            {"shown": False, "reason": "tpu-info failed (rc 1): x"},
            "      tpu-info: not shown, tpu-info failed (rc 1): x",
        ),
        (None, "      tpu-info: not shown, no answer"),
        ("garbage", "      tpu-info: not shown, no answer"),
    ],
)
def test_tpu_info_line(info, line):
    assert describe_tpu_info(info) == [line]


def test_preempted_node_shows_its_workers_from_the_api():
    lines = status_table([api_node(state="PREEMPTED", health="")], [])
    text = "\n".join(lines)
    assert "state PREEMPTED  health -" in lines[0], text
    assert "pod worker 0" in text and "pod worker 1" in text, text
    assert text.count("not in the inventory (node PREEMPTED)") == 2, text


def test_unreachable_worker_is_shown_as_such():
    reports = [
        report("pod-w0", 0, probe=probe()),
        report(
            "pod-w1", 1, unreachable=True, error="Failed to connect to the host via ssh: timeout"
        ),
    ]
    lines = status_table([api_node()], reports)
    w1 = next(line for line in lines if line.strip().startswith("pod-w1"))
    assert "unreachable: Failed to connect to the host via ssh: timeout" in w1, lines
    assert "10.0.0.3" in w1, lines


def test_failed_probe_says_why():
    lines = status_table(
        [api_node(workers=1)], [report("pod-w0", 0, probe="", error="sudo: a password is required")]
    )
    assert any("probe failed: sudo: a password is required" in line for line in lines), lines


def test_static_inventory_hosts_without_api_node():
    lines = status_table([], [report("box", 0, node="", probe=probe(), state="")])
    assert lines[0].startswith("node static"), lines
    assert "the API did not list it" in lines[0], lines
    assert any(line.strip().startswith("box") for line in lines), lines


def test_empty_inventory_names_where_it_looked():
    lines = status_table(
        [],
        [],
        [{"item": "demo-project", "zones": ["europe-west4-a"]}, {"project": "q", "zones": []}],
    )
    assert lines == [
        "No TPU node and no worker in the inventory. Looked in: project demo-project, zones "
        "europe-west4-a; project q, every zone."
    ]
    assert "no project (set CLOUDTPU_PROJECT" in status_table([], [], [])[0]


def test_api_errors_are_shown_and_the_rest_still_is():
    looked = [{"item": "p", "zones": [], "failed": True, "msg": "403: TPU API disabled"}]
    lines = status_table([], [report("pod-w0", 0, probe=probe())], looked)
    assert lines[0] == "TPU API error for project p: 403: TPU API disabled", lines
    assert any(line.strip().startswith("pod-w0") for line in lines), lines


# What status.yml really registers: a loop of tpu_node_info under failed_when: false. A call
# that the API refused keeps the module's msg, but Ansible sets failed to false.
REFUSED = {
    "item": "p",
    "changed": False,
    "failed": False,
    "failed_when_result": False,
    "msg": "The TPU API rejected the credentials (401 UNAUTHENTICATED): Request had invalid "
    "authentication credentials. Check auth_kind and its credential.",
    "reason": "UNAUTHENTICATED",
    "status": 401,
    "ansible_loop_var": "item",
    "zones": [],
}
ANSWERED = {"item": "q", "changed": False, "failed": False, "nodes": [], "zones": []}


def test_api_errors_of_a_loop_under_failed_when_false():
    assert status_api_errors([ANSWERED]) == []
    assert status_api_errors([REFUSED, ANSWERED]) == [
        "TPU API error for project p: " + REFUSED["msg"]
    ]
    # failed absent, as a module result without it
    assert len(status_api_errors([{k: v for k, v in REFUSED.items() if k != "failed"}])) == 1
    assert errors_plugin.FilterModule().filters() == {"status_api_errors": status_api_errors}


def test_refused_api_with_workers_shows_the_error_and_the_workers():
    lines = status_table([], [report("pod-w0", 0, probe=probe())], [REFUSED])
    assert lines[0].startswith("TPU API error for project p: The TPU API rejected"), lines
    assert any(line.strip().startswith("pod-w0") for line in lines), lines


def test_refused_api_and_no_worker_does_not_say_nothing_is_there():
    lines = status_table([], [], [REFUSED, ANSWERED])
    assert lines[0].startswith("TPU API error for project p: The TPU API rejected"), lines
    assert lines[-1] == (
        "No TPU node and no worker in the inventory. Looked in: project p, every zone "
        "(the API did not answer: see the error above); project q, every zone."
    ), lines


def test_filter_is_registered():
    assert FilterModule().filters() == {"status_table": status_table}
