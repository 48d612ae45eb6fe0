"""The bootstrap benchmark's section of bench/bootstrap/RESULTS.md from its raw rows: the table
of medians, the ratios of site.yml to the shell script, and the goals, each met or missed.

Rows of results written before controller CPU and task counts were recorded still render; their
cells for those figures show "-" and the goals that need them "not measured".
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

MARK_START = "<!-- bench-bootstrap:start -->"
MARK_END = "<!-- bench-bootstrap:end -->"
FIELDS = ("cold", "rerun", "bytes", "ssh", "changed", "cpu", "mux", "wcpu", "tasks", "cold_cpu")
SIDES = (("ansible", "site.yml"), ("baseline", "shell script"))


def summarize(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, list[float]]]:
    """Per (side, workers): cold and re-run seconds, bytes from the indexes (cold), changed
    counts, controller CPU and ControlPersist masters' CPU per worker of the re-runs, and the
    tasks (ok + skipped) of each worker in each re-run; and the CPU seconds of each cold run, the
    controller's and all workers' together (cold runs recorded without both have none)."""
    table: dict[tuple[str, int], dict[str, list[float]]] = {}
    for row in rows:
        workers = row["workers"]
        cell = table.setdefault((row["kind"], workers), {key: [] for key in FIELDS})
        for run_ in row["runs"]:
            if run_["label"] == "cold":
                cell["cold"].append(run_["seconds"])
                cell["bytes"].append(run_["from_indexes"])
                if "ssh_to_workers" in run_:
                    cell["ssh"].append(sum(run_["ssh_to_workers"]) / workers)
                if "cpu" in run_ and run_.get("worker_cpu"):
                    cell["cold_cpu"].append(run_["cpu"] + sum(run_["worker_cpu"]))
                continue
            cell["rerun"].append(run_["seconds"])
            if "recap" in run_:
                cell["changed"].append(run_["recap"]["changed"])
            if "cpu" in run_:
                cell["cpu"].append(run_["cpu"] / workers)
            if "mux_cpu" in run_:
                cell["mux"].append(run_["mux_cpu"] / workers)
            if run_.get("worker_cpu"):
                cell["wcpu"].append(sum(run_["worker_cpu"]) / workers)
            cell["tasks"].extend(run_.get("tasks", {}).values())
    return table


def median(table: dict, kind: str, workers: int | None, key: str) -> float | None:
    values = table.get((kind, workers), {}).get(key, [])
    return statistics.median(values) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def median_range(values: list[float], digits: int = 1) -> str:
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f} s ({low:.{digits}f}-{high:.{digits}f})"


def megabytes(values: list[float]) -> str:
    return f"{statistics.median(values) / 1e6:.0f}" if values else "-"


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{low:.0f}" if low == high else f"{low:.0f}-{high:.0f}"


def goal(
    label: str, value: float | None, limit: float, unit: str, missing: str, strict: bool = False
) -> dict[str, Any]:
    """One goal: its measured value (None when the runs it needs were not made) against limit."""
    met = None if value is None else (value < limit if strict else value <= limit)
    return {
        "label": label,
        "value": value,
        "limit": limit,
        "unit": unit,
        "strict": strict,
        "met": met,
        "missing": missing,
    }


def goals(table: dict[tuple[str, int], dict[str, list[float]]]) -> list[dict[str, Any]]:
    """The issue's goals, computed from the table."""
    ansible = sorted(w for kind, w in table if kind == "ansible")
    with_cpu = [w for w in ansible if table[("ansible", w)]["cpu"]]
    largest = with_cpu[-1] if with_cpu else None
    tasks = [t for (kind, _), cell in table.items() if kind == "ansible" for t in cell["tasks"]]
    return [
        goal(
            "No-op re-run at 4 workers, site.yml / shell script",
            ratio(median(table, "ansible", 4, "rerun"), median(table, "baseline", 4, "rerun")),
            1.0,
            "x",
            "needs 4 workers on both sides",
        ),
        goal(
            "Cold run at 4 workers, site.yml / shell script",
            ratio(median(table, "ansible", 4, "cold"), median(table, "baseline", 4, "cold")),
            0.8,
            "x",
            "needs 4 workers on both sides",
        ),
        goal(
            "Bytes from the indexes, 8 against 1 worker, site.yml",
            ratio(median(table, "ansible", 8, "bytes"), median(table, "ansible", 1, "bytes")),
            1.2,
            "x",
            "needs 1 and 8 workers",
        ),
        goal(
            "No-op re-run growth from 1 to 8 workers, site.yml",
            ratio(median(table, "ansible", 8, "rerun"), median(table, "ansible", 1, "rerun")),
            1.5,
            "x",
            "needs re-runs at 1 and 8 workers",
        ),
        goal(
            "Controller CPU per worker, no-op re-run, site.yml"
            + (f" at {largest} worker{'s' if largest > 1 else ''}" if largest else ""),
            median(table, "ansible", largest, "cpu"),
            1.5,
            " s",
            "needs a site.yml re-run with controller CPU recorded",
        ),
        goal(
            "Tasks per converged worker (ok + skipped in a re-run, the most of any worker)",
            max(tasks) if tasks else None,
            60,
            "",
            "needs a site.yml re-run",
            strict=True,
        ),
    ]


def goal_line(item: dict[str, Any]) -> str:
    sign = "<" if item["strict"] else "≤"
    unit, limit = item["unit"], item["limit"]
    target = f"goal {sign} {limit:.1f}{unit}" if unit else f"goal {sign} {limit:g}"
    value = item["value"]
    if value is None:
        return f"- {item['label']}: not measured ({item['missing']}; {target})."
    shown = {"x": f"{value:.2f}x", " s": f"{value:.2f} s"}.get(unit, f"{value:.0f}")
    return f"- {item['label']}: {shown} ({target}): {'met' if item['met'] else 'missed'}."


def markdown(data: dict[str, Any]) -> str:
    table = summarize(data["rows"])
    counts = sorted({w for _, w in table})
    lines = [
        data["header"],
        "",
        "| workers | shell script, cold | site.yml, cold | shell script, re-run "
        "| site.yml, re-run (changed) | MB from indexes, script | MB from indexes, site.yml "
        "| controller CPU per worker, re-run, script | controller CPU per worker, re-run, site.yml "
        "| tasks per worker, re-run, site.yml |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    empty: dict[str, list[float]] = {key: [] for key in FIELDS}
    for workers in counts:
        base = table.get(("baseline", workers), empty)
        ans = table.get(("ansible", workers), empty)
        changed = ",".join(str(c) for c in sorted(set(ans["changed"]))) or "-"
        lines.append(
            f"| {workers} | {median_range(base['cold'])} | {median_range(ans['cold'])} "
            f"| {median_range(base['rerun'])} | {median_range(ans['rerun'])} ({changed}) "
            f"| {megabytes(base['bytes'])} | {megabytes(ans['bytes'])} "
            f"| {median_range(base['cpu'], 2)} | {median_range(ans['cpu'], 2)} "
            f"| {spread(ans['tasks'])} |"
        )
    lines.append("")
    ratios = []
    for workers in counts:
        parts = []
        for key, label in (("cold", "cold"), ("rerun", "re-run")):
            value = ratio(
                median(table, "ansible", workers, key), median(table, "baseline", workers, key)
            )
            if value is not None:
                parts.append(f"{label} {value:.2f}x")
        if parts:
            ratios.append(f"{workers} worker(s): " + ", ".join(parts))
    if ratios:
        lines.append("site.yml / shell script, medians: " + "; ".join(ratios) + ".")
    first, last = (counts[0], counts[-1]) if counts else (None, None)
    growth = "Re-run growth from {a} to {b} workers, {side}: {r:.2f}x."
    bytes_ = "Bytes from the indexes, {b} against {a} worker(s), {side}: {r:.2f}x."
    for key, text in (("rerun", growth), ("bytes", bytes_)):
        for kind, side in SIDES:
            value = ratio(median(table, kind, last, key), median(table, kind, first, key))
            if value is not None and first != last:
                lines.append(text.format(a=first, b=last, side=side, r=value))
    muxed = [w for w in counts if table.get(("ansible", w), empty)["mux"]]
    if muxed:
        mux = median(table, "ansible", muxed[-1], "mux")
        lines.append(
            f"site.yml's SSH ControlPersist masters (daemons outside ansible-playbook's process "
            f"tree, not in the CPU columns): {mux:.2f} s per worker in a re-run at "
            f"{muxed[-1]} worker(s)."
        )
    lines += floor_lines(table, counts, data.get("cpus"))
    lines += cold_cpu_lines(table, counts, data.get("cpus"))
    lines += cold_by_role_lines(data["rows"])
    lines += ["", "Goals:", ""]
    lines += [goal_line(item) for item in goals(table)]
    return "\n".join(lines)


def floor_lines(table: dict, counts: list[int], cpus: int | None) -> list[str]:
    """What the workers' own containers used (their cgroups), the controller's SSH bytes, and
    the least time a site.yml re-run can take on this machine: the controller's and all workers'
    CPU seconds spread over its CPUs, against the re-run at the fewest workers."""
    lines = []
    ssh = [w for w in counts if table.get(("ansible", w), {}).get("ssh")]
    if ssh:
        lines.append(
            "Controller's SSH bytes per worker in a cold site.yml run (Ansible's modules, taken "
            "out of the bytes from the indexes): "
            + ", ".join(f"{megabytes(table[('ansible', w)]['ssh'])} MB at {w}" for w in ssh)
            + "."
        )
    measured = [w for w in counts if table.get(("ansible", w), {}).get("wcpu")]
    if not measured:
        return lines
    lines.append(
        "The workers' own CPU per worker in a site.yml re-run (their containers' cgroups): "
        + ", ".join(f"{median(table, 'ansible', w, 'wcpu'):.2f} s at {w}" for w in measured)
        + "."
    )
    first = median(table, "ansible", counts[0], "rerun")
    if not cpus or not first:
        return lines
    floors = []
    for workers in measured:
        controller = median(table, "ansible", workers, "cpu") or 0.0
        own = median(table, "ansible", workers, "wcpu") or 0.0
        floor = (controller + own) * workers / cpus
        floors.append(
            f"{floor:.1f} s at {workers} ({floor / first:.2f}x the re-run at {counts[0]})"
        )
    lines.append(
        f"Least re-run time on this machine's {cpus} CPUs, the controller's and the workers' CPU "
        "seconds over all its CPUs: " + ", ".join(floors) + "."
    )
    return lines


def cold_cpu_lines(table: dict, counts: list[int], cpus: int | None) -> list[str]:
    """The CPU seconds of the cold runs of both sides (the controller's and all workers', from
    their cgroups), and what they allow: where the workers share the controller's CPUs, a cold
    run takes at least those seconds over all CPUs, so the cold ratio cannot fall much below
    the ratio of the CPU seconds unless site.yml spends less CPU than the script."""
    parts = []
    for workers in counts:
        ours = median(table, "ansible", workers, "cold_cpu")
        theirs = median(table, "baseline", workers, "cold_cpu")
        if ours is None or theirs is None:
            continue
        text = f"{ours:.0f} against {theirs:.0f} at {workers} ({ours / theirs:.2f}x"
        if cpus:
            text += f"; at least {ours / cpus:.0f} s against {theirs / cpus:.0f} s on {cpus} CPUs"
        parts.append(text + ")")
    if not parts:
        return []
    return [
        "CPU seconds of a cold run, the controller's and all workers' together, site.yml "
        "against the shell script: " + ", ".join(parts) + "."
    ]


def role_of(task: str) -> str:
    """The role a task name belongs to ('cloudtpu.pod.apt : Install ...' is apt's); the play's
    own tasks are site.yml's."""
    if " : " not in task:
        return "site.yml's own tasks"
    return task.split(" : ", 1)[0].removeprefix("cloudtpu.pod.")


def cold_by_role_lines(rows: list[dict[str, Any]], heaviest: int = 5) -> list[str]:
    """Where the CPU of the cold site.yml run went, role by role, at the most workers that have
    a profile (bench/bootstrap/callback/bench_cpu.py: the seconds used while each task ran, by
    the workers' containers and by the controller), and the heaviest tasks."""
    profiled = [
        (row_["workers"], run_["cpu_by_task"])
        for row_ in rows
        if row_["kind"] == "ansible"
        for run_ in row_["runs"]
        if run_["label"] == "cold" and run_.get("cpu_by_task")
    ]
    if not profiled:
        return []
    workers, by_task = max(profiled, key=lambda item: item[0])
    roles: dict[str, list[float]] = {}
    for task, figures in by_task.items():
        cell = roles.setdefault(role_of(task), [0, 0.0, 0.0])
        cell[0] += figures["runs"]
        cell[1] += figures["workers"]
        cell[2] += figures["controller"]
    total = sum(cell[1] + cell[2] for cell in roles.values()) or 1.0
    lines = [
        "",
        f"Where the CPU of the cold site.yml run at {workers} worker(s) went, role by role (the "
        "seconds the workers' containers and the controller used while each task ran):",
        "",
        "| role | tasks run | workers' CPU | controller's CPU | share |",
        "|---|---|---|---|---|",
    ]
    for role, (runs, own, controller) in sorted(roles.items(), key=lambda kv: -sum(kv[1][1:])):
        lines.append(
            f"| {role} | {runs:.0f} | {own:.1f} s | {controller:.1f} s "
            f"| {(own + controller) / total:.0%} |"
        )
    top = sorted(by_task.items(), key=lambda kv: -(kv[1]["workers"] + kv[1]["controller"]))
    lines += [
        "",
        "Heaviest tasks: "
        + "; ".join(
            f"{task} {figures['workers'] + figures['controller']:.1f} s"
            for task, figures in top[:heaviest]
        )
        + ".",
    ]
    return lines


def write_markdown(path: Path, text: str) -> None:
    doc = path.read_text(encoding="utf-8")
    block = f"{MARK_START}\n{text}\n{MARK_END}"
    if MARK_START in doc:
        doc = re.sub(
            re.escape(MARK_START) + ".*?" + re.escape(MARK_END), lambda _m: block, doc, flags=re.S
        )
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(doc, encoding="utf-8")
