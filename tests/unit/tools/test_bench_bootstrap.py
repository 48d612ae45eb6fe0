"""bench/bootstrap: the recap's task counts, the cells, the goals and the section's markdown."""

from __future__ import annotations

from pathlib import Path

from bench.bootstrap import measure, report


def runs(cold: float, rerun: float, workers: int, cpu: float, tasks: int | None) -> list[dict]:
    """A cold run and two re-runs of one pod; cpu is the re-runs' controller CPU per worker."""
    hosts = [f"pod-w{i}" for i in range(workers)]
    out = [{"label": "cold", "seconds": cold, "from_indexes": 500e6 * workers, "cpu": 99.0}]
    for attempt, extra in ((1, 0.0), (2, 2.0)):
        run = {"label": f"rerun{attempt}", "seconds": rerun + extra, "from_indexes": 9e6}
        run["cpu"] = (cpu + extra / 10) * workers
        if tasks is not None:
            run["recap"] = {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0, "skipped": 0}
            run["tasks"] = {h: tasks + (2 if h.endswith("w0") else 0) for h in hosts}
            run["mux_cpu"] = 0.5 * workers
        out.append(run)
    return out


def row(kind: str, workers: int, **figures) -> dict:
    tasks = figures.pop("tasks", 118 if kind == "ansible" else None)
    return {"kind": kind, "workers": workers, "runs": runs(tasks=tasks, workers=workers, **figures)}


def results(counts: list[int]) -> dict:
    rows = []
    for workers in counts:
        rows.append(row("baseline", workers, cold=200.0, rerun=20.0, cpu=0.1))
        rows.append(
            row("ansible", workers, cold=150.0, rerun=10.0 + workers, cpu=1.2 + workers / 8)
        )
    return {"header": "fake results", "rows": rows}


def by_label(items: list[dict]) -> dict[str, dict]:
    return {item["label"].split(",")[0].split(" at ")[0]: item for item in items}


def test_tasks_are_ok_plus_skipped_of_each_worker_from_the_last_recap():
    # the recap's lines as ansible-playbook prints them (wider than the line limit)
    out = "\n".join(
        [
            "PLAY RECAP " + "*" * 69,
            "pod-w0                     : ok=100  changed=0    unreachable=0    failed=0    "
            "skipped=24   rescued=0    ignored=0",
            "pod-w1                     : ok=96   changed=1    unreachable=0    failed=0    "
            "skipped=22   rescued=0    ignored=0",
            "localhost                  : ok=3    changed=0    unreachable=0    failed=0    "
            "skipped=0    rescued=0    ignored=0",
            "",
            "Playbook run took 0 days, 0 hours, 0 minutes, 41 seconds",
        ]
    )
    assert measure.tasks(out, ["pod-w0", "pod-w1", "pod-w2"]) == {"pod-w0": 124, "pod-w1": 118}
    assert measure.recap(out) == {
        "ok": 199,
        "changed": 1,
        "failed": 0,
        "unreachable": 0,
        "skipped": 46,
    }


def test_masters_count_what_they_used_between_the_readings():
    assert measure.mux_delta({1: 2.0, 2: 5.0}, {1: 3.5, 3: 0.25}) == 1.75


def test_summarize_takes_controller_cpu_and_tasks_per_worker_of_the_reruns():
    cell = report.summarize(results([4])["rows"])[("ansible", 4)]
    assert cell["cold"] == [150.0]
    assert cell["rerun"] == [14.0, 16.0]
    assert cell["cpu"] == [1.7, 1.9]
    assert cell["mux"] == [0.5, 0.5]
    assert sorted(set(cell["tasks"])) == [118, 120]
    assert cell["changed"] == [0, 0]


def test_goals_from_a_run_of_every_count():
    table = report.summarize(results([1, 2, 4, 8])["rows"])
    goals = by_label(report.goals(table))
    rerun = goals["No-op re-run"]
    assert rerun["value"] == 15.0 / 21.0
    assert rerun["met"] is True
    assert goals["Cold run"]["value"] == 0.75
    assert goals["Cold run"]["met"] is True
    assert goals["Bytes from the indexes"]["value"] == 8.0
    assert goals["Bytes from the indexes"]["met"] is False
    assert goals["No-op re-run growth from 1 to 8 workers"]["value"] == 19.0 / 12.0
    assert goals["No-op re-run growth from 1 to 8 workers"]["met"] is False
    cpu = goals["Controller CPU per worker"]
    assert "at 8 workers" in cpu["label"]
    assert round(cpu["value"], 6) == 2.3
    assert cpu["met"] is False
    assert goals["Tasks per converged worker (ok + skipped in a re-run"]["value"] == 120


def test_tasks_goal_is_strictly_under_sixty():
    table = report.summarize([row("ansible", 1, cold=1.0, rerun=1.0, cpu=1.0, tasks=60)])
    (tasks,) = [g for g in report.goals(table) if g["label"].startswith("Tasks")]
    assert tasks["value"] == 62
    assert tasks["met"] is False
    (cpu,) = [g for g in report.goals(table) if g["label"].startswith("Controller CPU")]
    assert cpu["label"].endswith("site.yml at 1 worker")
    table = report.summarize([row("ansible", 1, cold=1.0, rerun=1.0, cpu=1.0, tasks=57)])
    (tasks,) = [g for g in report.goals(table) if g["label"].startswith("Tasks")]
    assert tasks["met"] is True


def test_goals_without_the_worker_counts_they_need_are_not_measured():
    table = report.summarize(results([1, 4])["rows"])
    goals = by_label(report.goals(table))
    assert goals["Bytes from the indexes"]["met"] is None
    assert goals["No-op re-run growth from 1 to 8 workers"]["value"] is None
    assert goals["No-op re-run"]["met"] is True
    assert "at 4 workers" in goals["Controller CPU per worker"]["label"]
    lines = [report.goal_line(g) for g in report.goals(table)]
    assert (
        "- Bytes from the indexes, 8 against 1 worker, site.yml: not measured "
        "(needs 1 and 8 workers; goal ≤ 1.2x)." in lines
    )
    assert "- Cold run at 4 workers, site.yml / shell script: 0.75x (goal ≤ 0.8x): met." in lines


def test_markdown_shows_the_table_the_ratios_and_the_goals():
    text = report.markdown(results([1, 2, 4, 8]))
    lines = text.splitlines()
    assert lines[0] == "fake results"
    header = lines[2].split(" | ")
    assert "controller CPU per worker, re-run, site.yml" in header
    assert len(lines[3].split("|")) == len(lines[2].split("|"))
    assert (
        "| 4 | 200.0 s (200.0-200.0) | 150.0 s (150.0-150.0) | 21.0 s (20.0-22.0) "
        "| 15.0 s (14.0-16.0) (0) | 2000 | 2000 | 0.20 s (0.10-0.30) | 1.80 s (1.70-1.90) "
        "| 118-120 |" in lines
    )
    assert "Re-run growth from 1 to 8 workers, site.yml: 1.58x." in lines
    assert any(line.startswith("site.yml's SSH ControlPersist masters") for line in lines)
    goals = lines[lines.index("Goals:") + 2 :]
    assert len(goals) == 6
    assert (
        goals[0]
        == "- No-op re-run at 4 workers, site.yml / shell script: 0.71x (goal ≤ 1.0x): met."
    )
    assert goals[4].endswith("at 8 workers: 2.30 s (goal ≤ 1.5 s): missed.")
    assert goals[5].endswith(": 120 (goal < 60): missed.")


def test_markdown_of_results_without_cpu_or_tasks_still_renders():
    data = results([1, 8])
    for row_ in data["rows"]:
        for run in row_["runs"]:
            for key in ("cpu", "tasks", "mux_cpu"):
                run.pop(key, None)
    text = report.markdown(data)
    assert "| - | - | - |" in text
    assert "needs a site.yml re-run with controller CPU recorded; goal ≤ 1.5 s" in text
    assert "ControlPersist" not in text


def test_write_markdown_replaces_only_the_section(tmp_path: Path):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(
        f"# Benchmarks\n\nbefore\n\n{report.MARK_START}\nold\n{report.MARK_END}\n\nafter\n",
        encoding="utf-8",
    )
    report.write_markdown(doc, "new table")
    assert doc.read_text(encoding="utf-8") == (
        f"# Benchmarks\n\nbefore\n\n{report.MARK_START}\nnew table\n{report.MARK_END}\n\nafter\n"
    )


SS_OUT = """0      0      172.22.0.1:38150 172.22.0.2:22
\t bbr wscale:10,10 rto:208 bytes_sent:183488 bytes_acked:183489 bytes_received:4233 segs_out:147
0      0      172.22.0.1:48136 172.22.0.4:22
\t bbr wscale:10,10 rto:208 bytes_sent:90 bytes_acked:91 bytes_received:7 segs_out:3
0      0      172.22.0.1:48200 10.9.9.9:22
\t bbr bytes_acked:5 bytes_received:5
"""


def test_parse_ss_reads_each_connections_peer_and_payload_counts():
    from bench.bootstrap.measure import parse_ss

    assert parse_ss(SS_OUT) == {
        "172.22.0.1:38150": ("172.22.0.2", 183489, 4233),
        "172.22.0.1:48136": ("172.22.0.4", 91, 7),
        "172.22.0.1:48200": ("10.9.9.9", 5, 5),
    }


def test_ssh_delta_counts_per_worker_only_the_growth_and_new_connections():
    from bench.bootstrap.measure import parse_ss, ssh_delta

    before = {"172.22.0.1:38150": ("172.22.0.2", 1000, 200)}
    sent, received = ssh_delta(before, parse_ss(SS_OUT), ["172.22.0.2", "172.22.0.4"])
    assert sent == [183489 - 1000, 91]  # another host's connection (10.9.9.9) is not the pod's
    assert received == [4233 - 200, 7]


def test_traffic_takes_the_caches_and_the_controllers_bytes_out_of_what_the_indexes_gave():
    from bench.bootstrap.measure import traffic

    before = [(0, 0), (0, 0)]
    # worker 0 got 700 (100 of them from the controller), sent 520 (500 to its peer, 20 of
    # replies to the controller); worker 1 got 650 (500 from worker 0, 100 from the controller)
    after = [(700, 520), (650, 30)]
    out = traffic(before, after, ([100, 100], [20, 30]))
    assert out["pod_rx"] == 1350
    assert out["from_indexes"] == 1350 - 500 - 200 == 650
    assert out["ssh_to_workers"] == [100, 100]
    assert traffic(before, after)["from_indexes"] == 1350 - 520


def test_floor_lines_spread_controller_and_worker_cpu_over_the_machines_cpus():
    data = results([1, 8])
    for row_ in data["rows"]:
        if row_["kind"] != "ansible":
            continue
        for run_ in row_["runs"]:
            if run_["label"] == "cold":
                run_["ssh_to_workers"] = [12e6] * row_["workers"]
            else:
                run_["worker_cpu"] = [0.5] * row_["workers"]
    table = report.summarize(data["rows"])
    lines = report.floor_lines(table, [1, 8], cpus=2)
    assert lines[0].endswith("12 MB at 1, 12 MB at 8.")
    assert "0.50 s at 1, 0.50 s at 8" in lines[1]
    # 8 workers: controller 1.2 + 8/8 = 2.2 s and 2.4 s in the two re-runs (median 2.3), the
    # workers 0.5 s each: (2.3 + 0.5) * 8 / 2 = 11.2 s; the 1-worker re-runs: 11 s and 13 s
    assert "11.2 s at 8 (0.93x the re-run at 1)" in lines[2]
    assert report.floor_lines(table, [1, 8], cpus=None) == lines[:2]
    assert "Least re-run time" in report.markdown({**data, "cpus": 2})


def test_cold_cpu_lines_add_the_controller_and_the_workers_of_both_sides():
    data = results([1, 4])
    for row_ in data["rows"]:
        cold = row_["runs"][0]
        # cold["cpu"] is 99.0 (runs() above): the controller's CPU of the whole cold run
        cold["worker_cpu"] = [60.0 if row_["kind"] == "ansible" else 70.0] * row_["workers"]
        if row_["kind"] == "baseline":
            cold["cpu"] = 1.0
    table = report.summarize(data["rows"])
    lines = report.cold_cpu_lines(table, [1, 4], cpus=2)
    # 4 workers: site.yml 99 + 4 * 60 = 339, the script 1 + 4 * 70 = 281: 1.21x, 170 s and 140 s
    assert "339 against 281 at 4 (1.21x; at least 170 s against 140 s on 2 CPUs)" in lines[0]
    assert "159 against 71 at 1 (2.24x" in lines[0]
    assert "CPU seconds of a cold run" in report.markdown({**data, "cpus": 2})


def test_cold_runs_without_worker_cpu_give_no_cold_cpu_line():
    table = report.summarize(results([4])["rows"])
    assert table[("ansible", 4)]["cold_cpu"] == []
    assert report.cold_cpu_lines(table, [4], cpus=2) == []


def test_cold_by_role_lines_group_the_profile_by_role_at_the_most_workers():
    small = {"cloudtpu.pod.apt : Install x": {"workers": 1.0, "controller": 1.0, "runs": 1}}
    big = {
        "cloudtpu.pod.apt : Install htop": {"workers": 60.0, "controller": 3.0, "runs": 1},
        "cloudtpu.pod.apt : Install mosh": {"workers": 2.0, "controller": 1.0, "runs": 1},
        "cloudtpu.pod.python : Create the venv": {"workers": 12.0, "controller": 1.0, "runs": 1},
        "Gathering Facts": {"workers": 1.0, "controller": 2.0, "runs": 1},
    }
    rows = [
        {"kind": "ansible", "workers": 1, "runs": [{"label": "cold", "cpu_by_task": small}]},
        {"kind": "ansible", "workers": 4, "runs": [{"label": "cold", "cpu_by_task": big}]},
        {"kind": "baseline", "workers": 8, "runs": [{"label": "cold", "cpu_by_task": big}]},
    ]
    lines = report.cold_by_role_lines(rows, heaviest=2)
    assert "at 4 worker(s)" in lines[1]
    assert lines[5:8] == [
        "| apt | 2 | 62.0 s | 4.0 s | 80% |",
        "| python | 1 | 12.0 s | 1.0 s | 16% |",
        "| site.yml's own tasks | 1 | 1.0 s | 2.0 s | 4% |",
    ]
    assert lines[-1] == (
        "Heaviest tasks: cloudtpu.pod.apt : Install htop 63.0 s; "
        "cloudtpu.pod.python : Create the venv 13.0 s."
    )


def test_cold_by_role_lines_are_empty_without_a_profile():
    rows = [{"kind": "ansible", "workers": 4, "runs": [{"label": "cold", "seconds": 1.0}]}]
    assert report.cold_by_role_lines(rows) == []


def test_read_cgroup_cpu_reads_both_cgroup_versions(tmp_path: Path):
    v2 = tmp_path / "cpu.stat"
    v2.write_text("usage_usec 2500000\nuser_usec 2000000\n")
    v1 = tmp_path / "cpuacct.usage"
    v1.write_text("1500000000\n")
    assert measure.read_cgroup_cpu(v2) == 2.5
    assert measure.read_cgroup_cpu(v1) == 1.5
    assert measure.read_cgroup_cpu(tmp_path / "gone") is None
    assert measure.read_cgroup_cpu(None) is None
