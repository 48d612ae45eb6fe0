"""The push-against-pull section of bench/pull/RESULTS.md from bench/pull/run.py's raw rows: one
line per worker count (wall time and controller CPU of each side, and their ratios), the growth
from the fewest workers to the most, and the figure (bench/pull/plot.py draws it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.scale.report import replace_section

MARKS = ("<!-- bench-pull:start -->", "<!-- bench-pull:end -->")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def markdown(data: dict[str, Any]) -> str:
    rows = {(r["kind"], r["workers"]): r for r in data["rows"]}
    counts = sorted({r["workers"] for r in data["rows"]})
    lines = [
        data["header"],
        "",
        "| workers | push wall | pull wall | pull/push | push controller CPU "
        "| pull controller CPU | pull/push | pull without waiting: controller CPU "
        "| on the slowest worker: Ansible install, whole pull |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in counts:
        push, pull = rows.get(("push", n)), rows.get(("pull", n))
        if not push or not pull:
            continue
        worker = pull.get("worker_seconds") or []
        inside = "-"
        if worker:
            install = max(w["install"] for w in worker)
            inside = f"{install:.0f} s, {max(w['total'] for w in worker):.0f} s"
        nowait = rows.get(("nowait", n))
        alone = f"{nowait['cpu']:.1f} s" if nowait else "-"
        lines.append(
            f"| {n} | {push['wall']:.1f} s | {pull['wall']:.1f} s "
            f"| {ratio(pull['wall'], push['wall'])} | {push['cpu']:.1f} s | {pull['cpu']:.1f} s "
            f"| {ratio(pull['cpu'], push['cpu'])} | {alone} | {inside} |"
        )
    first, last = counts[0], counts[-1]
    if first != last:
        lines.append("")
        for kind in ("push", "pull", "nowait"):
            a, b = rows.get((kind, last)), rows.get((kind, first))
            if a and b:
                lines.append(
                    f"Growth {first} → {last} workers, {kind}: wall {ratio(a['wall'], b['wall'])}, "
                    f"controller CPU {ratio(a['cpu'], b['cpu'])}."
                )
    lines += ["", "![push against pull](../figures/pull-push.png)"]
    return "\n".join(lines)


def write_markdown(path: Path, text: str) -> None:
    """Put the section between its marker lines in path (appended with them when missing)."""
    replace_section(path, text, MARKS)
