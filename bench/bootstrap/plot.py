#!/usr/bin/env python3
"""Figures of bench/bootstrap/run.py's results: time against workers, both approaches.

    .cache/bench-venv/bin/python bench/bootstrap/plot.py bench/results/bootstrap.json

Writes bench/figures/bootstrap-cold.png, bootstrap-rerun.png, bootstrap-bytes.png and
bootstrap-cpu.png (controller CPU per worker of the re-runs; left out for results without it):
medians with min-max bars, or into the folder given second. run.py calls it with matplotlib from a
venv of the benchmark's own.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

SIDES = {"baseline": "shell script over parallel ssh", "ansible": "site.yml"}


def series(rows: list[dict[str, Any]], kind: str, pick: str) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for row in rows:
        if row["kind"] != kind:
            continue
        for run in row["runs"]:
            cold = run["label"] == "cold"
            if pick == "cold" and cold:
                out.setdefault(row["workers"], []).append(run["seconds"])
            elif pick == "rerun" and not cold:
                out.setdefault(row["workers"], []).append(run["seconds"])
            elif pick == "bytes" and cold:
                out.setdefault(row["workers"], []).append(run["from_indexes"] / 1e6)
            elif pick == "cpu" and not cold and "cpu" in run:
                out.setdefault(row["workers"], []).append(run["cpu"] / row["workers"])
    return out


def figure(
    rows: list[dict[str, Any]],
    pick: str,
    ylabel: str,
    title: str,
    path: Path,
    goal: float | None = None,
) -> None:
    if not any(series(rows, kind, pick) for kind in SIDES):
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for kind, label in SIDES.items():
        data = series(rows, kind, pick)
        if not data:
            continue
        xs = sorted(data)
        med = [statistics.median(data[x]) for x in xs]
        low = [m - min(data[x]) for m, x in zip(med, xs, strict=True)]
        high = [max(data[x]) - m for m, x in zip(med, xs, strict=True)]
        ax.errorbar(xs, med, yerr=[low, high], marker="o", capsize=4, label=label)
    if goal is not None:
        ax.axhline(
            goal, color="grey", linestyle="--", linewidth=1, label=f"goal, site.yml: {goal:g} s"
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({row["workers"] for row in rows}))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("workers in the pod")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(path)


def main() -> int:
    results = Path(sys.argv[1])
    rows = json.loads(results.read_text(encoding="utf-8"))["rows"]
    out = (
        Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parents[1] / "figures"
    )
    out.mkdir(parents=True, exist_ok=True)
    figure(rows, "cold", "seconds", "Cold bootstrap (fresh pod)", out / "bootstrap-cold.png")
    figure(rows, "rerun", "seconds", "Re-run (nothing to do)", out / "bootstrap-rerun.png")
    figure(rows, "bytes", "MB", "Bytes from the package indexes, cold", out / "bootstrap-bytes.png")
    figure(
        rows,
        "cpu",
        "CPU seconds per worker (user + sys)",
        "Controller CPU per worker, re-run (nothing to do)",
        out / "bootstrap-cpu.png",
        goal=1.5,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
