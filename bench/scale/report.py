"""Aggregation, tables and the chart of bench/scale/run.py (no Ansible, no Docker: unit-tested)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

# The settings a cell can change; everything else is the project's ansible.cfg.
SETTING_KEYS = ("forks", "persist", "pipelining", "strategy")
KINDS = {"noop": "converged no-op playbook", "adhoc": "one-off command"}


def cell_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["kind"], row["hosts"], *(row[k] for k in SETTING_KEYS))


def setting_label(row: dict[str, Any]) -> str:
    """forks 25, ControlPersist on, pipelining on, linear."""
    return (
        f"forks {row['forks']}, ControlPersist {'on' if row['persist'] else 'off'}, "
        f"pipelining {'on' if row['pipelining'] else 'off'}, {row['strategy']}"
    )


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per cell (kind, hosts, settings): medians of its repeats, failed runs apart."""
    cells: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        cells.setdefault(cell_key(row), []).append(row)
    out = []
    for runs in cells.values():
        good = [r for r in runs if r["rc"] == 0]
        first = runs[0]
        entry = {k: first[k] for k in ("kind", "hosts", *SETTING_KEYS)}
        entry["runs"] = len(runs)
        entry["failed_runs"] = len(runs) - len(good)
        stopped = [r["wall"] for r in runs if r.get("timed_out")]
        entry["timed_out"] = bool(stopped)
        entry["stopped_after"] = max(stopped) if stopped else None
        for metric in ("wall", "cpu", "tree_rss_mb", "max_rss_mb"):
            values = [r[metric] for r in good]
            entry[metric] = statistics.median(values) if values else None
        out.append(entry)
    return sorted(out, key=lambda e: (e["kind"], *(str(e[k]) for k in SETTING_KEYS), e["hosts"]))


def growth(cells: list[dict[str, Any]], metric: str) -> dict[tuple[Any, ...], dict[int, float]]:
    """Per (kind, settings): {hosts: metric / metric at the fewest hosts measured}."""
    series: dict[tuple[Any, ...], dict[int, float]] = {}
    for cell in cells:
        if cell[metric] is None:
            continue
        key = (cell["kind"], *(cell[k] for k in SETTING_KEYS))
        series.setdefault(key, {})[cell["hosts"]] = cell[metric]
    ratios = {}
    for key, points in series.items():
        base_hosts = min(points)
        base = points[base_hosts]
        if len(points) > 1 and base > 0:
            ratios[key] = {h: v / base for h, v in sorted(points.items())}
    return ratios


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(result: dict[str, Any]) -> str:
    cells = result["cells"]
    lines = [
        f"{result['containers']} worker containers, inventory hosts spread over them, each its "
        f"own SSH session; median of {result['repeat']} run(s) per cell; {result['machine']}; "
        f"load average {result['load_before']} before and {result['load_after']} after.",
        "",
        "| run | hosts | settings | wall | controller CPU (user+sys) | CPU per host | "
        "peak memory (all processes) | largest process |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        per_host = None if c["cpu"] is None else c["cpu"] / c["hosts"]
        failed = f" ({c['failed_runs']} of {c['runs']} failed)" if c["failed_runs"] else ""
        wall = f"{_num(c['wall'])} s"
        if c.get("timed_out"):
            failed = " (stopped: the time budget ran out)"
            wall = f"over {c['stopped_after']:.0f} s"
        lines.append(
            f"| {KINDS[c['kind']]}{failed} | {c['hosts']} | {setting_label(c)} | "
            f"{wall} | {_num(c['cpu'])} s | {_num(per_host, 2)} s | "
            f"{_num(c['tree_rss_mb'], 0)} MB | {_num(c['max_rss_mb'], 0)} MB |"
        )
    lines += ["", "Growth with the number of hosts (value at N hosts / value at the fewest):", ""]
    lines += ["| run | settings | wall | CPU | peak memory |", "|---|---|---|---|---|"]
    walls = growth(cells, "wall")
    cpus = growth(cells, "cpu")
    mems = growth(cells, "tree_rss_mb")

    def chain(ratios: dict[int, float]) -> str:
        return " -> ".join(f"{h}: {r:.2f}x" for h, r in ratios.items())

    for key, wall in walls.items():
        row = dict(zip(("kind", *SETTING_KEYS), key, strict=True))
        lines.append(
            f"| {KINDS[row['kind']]} | {setting_label(row)} | {chain(wall)} | "
            f"{chain(cpus.get(key, {}))} | {chain(mems.get(key, {}))} |"
        )
    skipped = result.get("skipped") or []
    if skipped:
        names = "; ".join(
            f"{KINDS[c['kind']]}, {c['hosts']} hosts, {setting_label(c)}" for c in skipped
        )
        lines += ["", f"Not run (the time budget was spent): {names}."]
    return "\n".join(lines)


COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def svg_chart(cells: list[dict[str, Any]], kind: str, width: int = 640, height: int = 360) -> str:
    """Wall time against hosts, one line per settings with more than one host count."""
    series: dict[str, list[tuple[int, float]]] = {}
    for cell in cells:
        if cell["kind"] == kind and cell["wall"] is not None:
            series.setdefault(setting_label(cell), []).append((cell["hosts"], cell["wall"]))
    series = {k: sorted(v) for k, v in series.items() if len(v) > 1}
    left, right, top = 60, 20, 30
    plot_w, plot_h = width - left - right, height - top - 50
    height += 16 * len(series)
    max_x = max((h for pts in series.values() for h, _ in pts), default=1)
    max_y = max((w for pts in series.values() for _, w in pts), default=1.0) * 1.1

    def xy(hosts: int, wall: float) -> tuple[float, float]:
        return left + plot_w * hosts / max_x, top + plot_h * (1 - wall / max_y)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="14">{KINDS[kind]}: wall time against hosts</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>',
        f'<text x="{left + plot_w / 2}" y="{top + plot_h + 32}" text-anchor="middle">hosts</text>',
        f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" '
        'text-anchor="middle">seconds</text>',
    ]
    for step in range(5):
        value = max_y * step / 4
        _, y = xy(0, value)
        parts.append(f'<text x="{left - 6}" y="{y + 4:.0f}" text-anchor="end">{value:.0f}</text>')
    for hosts in sorted({h for pts in series.values() for h, _ in pts}):
        x, _ = xy(hosts, 0)
        parts.append(
            f'<text x="{x:.0f}" y="{top + plot_h + 16}" text-anchor="middle">{hosts}</text>'
        )
    for index, (label, points) in enumerate(series.items()):
        color = COLORS[index % len(COLORS)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(h, w) for h, w in points))
        parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        legend_y = top + plot_h + 44 + 16 * index
        parts.append(
            f'<line x1="{left}" y1="{legend_y - 4}" x2="{left + 20}" y2="{legend_y - 4}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{left + 26}" y="{legend_y}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def replace_section(path: Path, text: str, marks: tuple[str, str]) -> None:
    """Put text between the two marker lines of path (appended with them when missing)."""
    doc = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = marks
    block = f"{start}\n{text}\n{end}"
    if start in doc and end in doc:
        head, rest = doc.split(start, 1)
        doc = head + block + rest.split(end, 1)[1]
    else:
        doc = doc.rstrip("\n") + ("\n\n" if doc else "") + block + "\n"
    path.write_text(doc, encoding="utf-8")
