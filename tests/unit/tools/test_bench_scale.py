"""bench/scale/report.py: cells, medians, growth ratios, the table, the chart, the section."""

from __future__ import annotations

from pathlib import Path

from bench.scale import report

BASE = {"forks": 64, "persist": True, "pipelining": True, "strategy": "linear"}


def row(kind: str, hosts: int, wall: float, cpu: float, rc: int = 0, **settings) -> dict:
    return {
        **BASE,
        **settings,
        "kind": kind,
        "hosts": hosts,
        "wall": wall,
        "cpu": cpu,
        "tree_rss_mb": hosts * 2.0,
        "max_rss_mb": 60.0,
        "rc": rc,
    }


def test_summarize_takes_medians_of_good_runs_per_cell():
    rows = [
        row("noop", 8, 10.0, 5.0),
        row("noop", 8, 14.0, 7.0),
        row("noop", 8, 11.0, 6.0),
        row("noop", 8, 99.0, 99.0, rc=1),
        row("noop", 8, 3.0, 1.0, forks=5),
    ]
    cells = {(c["forks"], c["hosts"]): c for c in report.summarize(rows)}
    assert cells[(64, 8)]["wall"] == 11.0
    assert cells[(64, 8)]["cpu"] == 6.0
    assert cells[(64, 8)]["runs"] == 4
    assert cells[(64, 8)]["failed_runs"] == 1
    assert cells[(5, 8)]["wall"] == 3.0


def test_summarize_keeps_a_cell_whose_runs_all_failed_without_figures():
    (cell,) = report.summarize([row("adhoc", 64, 5.0, 2.0, rc=4)])
    assert cell["wall"] is None
    assert cell["failed_runs"] == 1


def test_growth_is_relative_to_the_fewest_hosts_of_the_same_settings():
    cells = report.summarize(
        [
            row("noop", 8, 10.0, 4.0),
            row("noop", 64, 30.0, 24.0),
            row("noop", 256, 100.0, 96.0),
            row("noop", 64, 50.0, 20.0, persist=False),
        ]
    )
    ratios = report.growth(cells, "wall")
    key = ("noop", 64, True, True, "linear")
    assert ratios[key] == {8: 1.0, 64: 3.0, 256: 10.0}
    assert report.growth(cells, "cpu")[key][256] == 24.0
    # one host count only: no ratio
    assert ("noop", 64, False, True, "linear") not in ratios


def test_markdown_lists_cells_failures_and_growth():
    rows = [row("noop", 8, 10.0, 4.0), row("noop", 64, 30.0, 32.0), row("adhoc", 8, 2, 1, rc=2)]
    result = {
        "containers": 3,
        "repeat": 1,
        "machine": "x86_64, 2 CPUs",
        "load_before": 1.0,
        "load_after": 2.0,
        "cells": report.summarize(rows),
    }
    text = report.markdown(result)
    assert "| converged no-op playbook | 64 | forks 64, ControlPersist on, pipelining on, " in text
    assert "| 30.0 s | 32.0 s | 0.50 s | 128 MB | 60 MB |" in text
    assert "one-off command (1 of 1 failed) | 8 |" in text
    assert "8: 1.00x -> 64: 3.00x" in text
    assert "8: 1.00x -> 64: 8.00x" in text


def test_svg_chart_draws_one_line_per_settings_with_several_host_counts():
    cells = report.summarize(
        [
            row("noop", 8, 10.0, 4.0),
            row("noop", 256, 100.0, 96.0),
            row("noop", 8, 12.0, 4.0, strategy="mitogen_linear"),
            row("noop", 256, 80.0, 60.0, strategy="mitogen_linear"),
            row("noop", 64, 40.0, 9.0, forks=5),
            row("adhoc", 8, 2.0, 1.0),
        ]
    )
    svg = report.svg_chart(cells, "noop")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert svg.count("<polyline") == 2
    assert "mitogen_linear" in svg
    assert "forks 5" not in svg


def test_replace_section_replaces_between_marks_or_appends(tmp_path: Path):
    marks = ("<!-- a:start -->", "<!-- a:end -->")
    doc = tmp_path / "B.md"
    doc.write_text("# B\n\nintro\n", encoding="utf-8")
    report.replace_section(doc, "one", marks)
    assert (
        doc.read_text(encoding="utf-8") == "# B\n\nintro\n\n<!-- a:start -->\none\n<!-- a:end -->\n"
    )
    doc.write_text(doc.read_text(encoding="utf-8") + "\nafter\n", encoding="utf-8")
    report.replace_section(doc, "two", marks)
    text = doc.read_text(encoding="utf-8")
    assert "one" not in text and "<!-- a:start -->\ntwo\n<!-- a:end -->" in text
    assert text.endswith("\nafter\n")


def test_a_cell_stopped_by_the_time_budget_says_so():
    stopped = {**row("noop", 256, 900.0, 400.0, rc=-15), "timed_out": True}
    result = {
        "containers": 3,
        "repeat": 1,
        "machine": "m",
        "load_before": 1,
        "load_after": 1,
        "cells": report.summarize([stopped]),
        "skipped": [row("adhoc", 256, 0, 0)],
    }
    text = report.markdown(result)
    assert "converged no-op playbook (stopped: the time budget ran out) | 256 |" in text
    assert "| over 900 s | - s | - s |" in text
    assert "Not run (the time budget was spent): one-off command, 256 hosts, forks 64" in text


def test_plan_changes_one_setting_at_a_time_and_skips_forks_at_or_above_the_hosts():
    from bench.scale.run import plan

    cells = plan([8, 64], mitogen=True)
    assert [c["hosts"] for c in cells] == sorted(c["hosts"] for c in cells)
    assert cells[0] == {**BASE, "kind": "adhoc", "hosts": 8}
    eight = [c for c in cells if c["hosts"] == 8]
    assert {c["forks"] for c in eight} == {64, 5}
    for cell in cells:
        changed = [k for k in BASE if cell[k] != BASE[k]]
        assert len(changed) <= 1
    assert {c["forks"] for c in cells if c["hosts"] == 64} == {64, 5, 25}
    assert not [c for c in plan([8], mitogen=False) if c["strategy"] != "linear"]


def test_plan_project_only_keeps_the_projects_settings_at_every_count():
    from bench.scale.run import plan

    cells = plan([8, 64, 256], mitogen=True, project_only=True)
    assert [(c["kind"], c["hosts"]) for c in cells] == [
        (kind, hosts) for hosts in (8, 64, 256) for kind in ("adhoc", "noop")
    ]
    assert all({k: c[k] for k in BASE} == BASE for c in cells)
