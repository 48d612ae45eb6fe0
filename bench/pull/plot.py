#!/usr/bin/env python3
"""Figure of bench/pull/run.py's results: wall time and controller CPU against workers.

    .cache/bench-venv/bin/python bench/pull/plot.py bench/results/pull.json

Writes bench/figures/pull-push.png (or into the folder given second). run.py calls it with
matplotlib from the benchmarks' own venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

SIDES = {
    "push": "push: site.yml from the controller",
    "pull": "pull: each worker's ansible-pull",
    "nowait": "pull, provision not waiting for it",
}
PANELS = (("wall", "wall time until every worker is done (s)"), ("cpu", "controller CPU (s)"))


def main() -> int:
    results = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parents[1] / "figures"
    rows = json.loads(results.read_text(encoding="utf-8"))["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (key, label) in zip(axes, PANELS, strict=True):
        for kind, name in SIDES.items():
            if kind == "nowait" and key == "wall":
                continue  # it returns before the workers are done
            points = sorted((r["workers"], r[key]) for r in rows if r["kind"] == kind)
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=name)
        ax.set_xlabel("workers")
        ax.set_ylabel(label)
        ax.set_xticks(sorted({r["workers"] for r in rows}))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)  # the panel with every side
    fig.suptitle("Bootstrap (python, libtpu): push against pull")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "pull-push.png", dpi=110)
    print(f"wrote {out / 'pull-push.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
