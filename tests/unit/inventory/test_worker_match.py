"""The one check and message for playbooks that match no TPU worker
(plugins/filter/worker_match_problem.py); the playbooks: tests/integration/test_worker_match.py."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.cloudtpu.pod.plugins.filter.worker_match_problem import (
    FilterModule,
    worker_match_problem,
)

REPO = Path(__file__).resolve().parents[3]


def test_a_matched_worker_is_no_problem():
    assert worker_match_problem(["pod-w0"], "logs.yml", ["pod-w0", "pod-w1"], "pod-w0") == ""


def test_an_empty_inventory():
    assert worker_match_problem([], "reset.yml", [], "") == (
        "reset.yml: no TPU worker matched (group tpu has 0 hosts); check the inventory and the "
        "limit with ansible-inventory --graph tpu"
    )


def test_a_limit_that_matches_no_worker():
    problem = worker_match_problem([], "run.yml", ["pod-w0"], "pod-w9")
    assert "group tpu has 1 host, --limit pod-w9)" in problem, problem


def test_every_playbook_on_workers_uses_the_one_check():
    for name in ("run.yml", "sync.yml"):
        text = (REPO / "playbooks" / name).read_text()
        assert f"cloudtpu.pod.worker_match_problem('{name}'" in text, name
        assert "no TPU worker matched" not in text, name
    for name in ("logs.yml", "reset.yml", "verify.yml"):
        text = (REPO / "playbooks" / name).read_text()
        assert "import_playbook: shared/worker_match.yml" in text, name
        assert f"tpu_worker_match_playbook: {name}" in text, name


def test_filter_is_registered():
    assert FilterModule().filters()["worker_match_problem"] is worker_match_problem
