"""The base role's converged fast path (cloudtpu.pod.tpu_state), on the worker converge left:
a converged worker costs the role's checks and one call; drift of what the role manages (a file
edited, a package removed, the limits file gone) sends it through its tasks, which repair it;
--check on drift reports the change and changes nothing; tpu_fast_path=false runs every task.
"""

from __future__ import annotations

import json

from conftest import changed_count, changed_tasks, converge, recap, run_converge

RECORD = "/var/lib/cloudtpu/state/base.json"
ZONE = "Europe/Berlin"
LIMITS = "/etc/security/limits.d/90-cloudtpu-nofile.conf"
FAST = "Bring the worker to the role's state where it differs from the record"


def _took_fast_path(result) -> bool:
    """The include of the role's tasks was skipped: the worker was found converged."""
    lines = result.stdout.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("TASK [cloudtpu.pod.base : " + FAST):
            return any(later.startswith("skipping:") for later in lines[index + 1 : index + 4])
    raise AssertionError(f"no task {FAST!r} in:\n{result.stdout[-3000:]}")


def test_the_record_is_root_only_and_names_what_base_manages(host) -> None:
    converge("base")
    record = host.file(RECORD)
    assert record.user == "root" and record.mode == 0o600
    assert host.file("/var/lib/cloudtpu/state").mode == 0o700
    content = json.loads(host.run(f"cat {RECORD}").stdout)
    assert content["paths"]["/etc/timezone"]["kind"] == "file"
    assert content["paths"]["/etc/localtime"] == {
        "kind": "link",
        "target": f"/usr/share/zoneinfo/{ZONE}",
        "uid": 0,
    }
    assert content["packages"]["htop"].startswith("installed ")
    assert len(content["digest"]) == 64


def test_a_converged_worker_takes_the_fast_path(host) -> None:
    result = converge("base")
    assert changed_count(result) == 0, changed_tasks(result)
    assert _took_fast_path(result)
    # facts, base's argument check, its variable check and state check in one task, the skipped
    # include, and the argument checks Ansible adds to the other two roles (tagged always)
    counts = recap(result)
    assert counts["ok"] + counts["skipped"] <= 6, counts


def test_check_mode_reports_drift_and_changes_nothing(host) -> None:
    host.run_test("echo Etc/UTC > /etc/timezone")
    result = run_converge("base", "--check", "--diff")
    assert result.returncode == 0, result.stdout[-3000:]
    assert not _took_fast_path(result)
    assert "Write /etc/timezone" in "\n".join(changed_tasks(result)), changed_tasks(result)
    assert host.file("/etc/timezone").content_string.strip() == "Etc/UTC"


def test_drift_is_repaired_then_the_fast_path_returns(host) -> None:
    host.run_test(f"echo Etc/UTC > /etc/timezone && rm -f {LIMITS}")
    host.run_test("DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq htop")
    repaired = converge("base")
    assert not _took_fast_path(repaired)
    assert changed_count(repaired) >= 3, changed_tasks(repaired)
    assert host.file("/etc/timezone").content_string.strip() == ZONE
    assert host.file(LIMITS).exists
    assert host.package("htop").is_installed
    again = converge("base")
    assert changed_count(again) == 0, changed_tasks(again)
    assert _took_fast_path(again)


def test_fast_path_off_runs_every_task_and_changes_nothing(host) -> None:
    full = converge("base", tpu_fast_path="false")
    assert not _took_fast_path(full)
    assert changed_count(full) == 0, changed_tasks(full)
    assert recap(full)["ok"] + recap(full)["skipped"] > 15, recap(full)
