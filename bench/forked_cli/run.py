"""Benchmark: the tests' Ansible runs as new processes and forked from a started server.

tests/forked_cli.py forks each ansible-playbook run of a test from a server that imported
Ansible and read its configuration once. This runs one bad-input table's kind of work both ways
in one run, alternating: each playbook of PLAYBOOKS with a bad value, against two workers that
cannot be reached (the refusal comes before any connection), --check and not, and measures the
CPU seconds of everything started (the server included) and the wall time. A third side starts
new processes with tools/payload_cache.py turned off (CLOUDTPU_PAYLOAD_CACHE=0): each parses
ansible-core's routing table (runtime.yml) again, where the others read the kept copy. A
fourth side forks from servers that do not load, from their second run on, the plugins every run
loads and the collection modules their runs imported (CLOUDTPU_FORKED_CLI_WARM=0).

    .venv/bin/python bench/forked_cli/run.py [--runs 12] [--repeat 3] \
        [--markdown bench/forked_cli/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.scale.report import replace_section
from tests import forked_cli
from tests.role_runner import ansible_env

MARKS = ("<!-- bench-forked-cli:start -->", "<!-- bench-forked-cli:end -->")
# A bad value per playbook, each refused by the playbook's first checks.
PLAYBOOKS = {
    "run.yml": {"cmd": ""},
    "status.yml": {"tpu_status_runs": "-1"},
    "logs.yml": {"tpu_logs_tail": "abc"},
    "babysit.yml": {"tpu_babysit_interval": "0"},
}


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# The sides, in the order each round runs them: (name, forked, payload cache on, server warms).
SIDES = (
    ("new process, no cache", False, False, False),
    ("new process", False, True, False),
    ("forked, not warmed", True, True, False),
    ("forked", True, True, True),
)


def one_side(forked: bool, cache: bool, warm: bool, runs: int, folder: Path) -> dict[str, float]:
    os.environ["CLOUDTPU_FORKED_CLI"] = "1" if forked else "0"
    os.environ["CLOUDTPU_PAYLOAD_CACHE"] = "1" if cache else "0"
    os.environ["CLOUDTPU_FORKED_CLI_WARM"] = "1" if warm else "0"
    hosts = {
        f"w{i}": {"ansible_host": "127.0.0.1", "ansible_port": 9, "tpu_worker_id": i}
        for i in range(2)
    }
    inventory = folder / "hosts.json"
    inventory.write_text(json.dumps({"all": {"children": {"tpu": {"hosts": hosts}}}}))
    env = ansible_env(
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json",
        ANSIBLE_CACHE_PLUGIN="memory",
        ANSIBLE_LOCAL_TEMP=str(folder / "tmp"),
    )
    names = list(PLAYBOOKS)
    cpu, wall, refused = children_cpu(), time.monotonic(), 0
    for number in range(runs):
        name = names[number % len(names)]
        values = folder / f"{number}.json"
        values.write_text(json.dumps(PLAYBOOKS[name]))
        cmd = [str(forked_cli.PLAYBOOK), "-i", str(inventory), str(REPO / "playbooks" / name)]
        cmd += ["-e", f"@{values}", *(["--check"] if number % 2 else [])]
        done = forked_cli.run(cmd, cwd=folder, env=env, timeout=300)
        refused += done.returncode == 2
    forked_cli.close_all()
    if refused != runs:
        raise SystemExit(f"{runs - refused} of {runs} runs were not refused: the bench is off")
    return {"cpu": children_cpu() - cpu, "wall": time.monotonic() - wall}


def measure(runs: int, repeat: int) -> dict:
    rows: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in SIDES}
    for _ in range(repeat):
        for name, forked, cache, warm in SIDES:
            with tempfile.TemporaryDirectory() as folder:
                rows[name].append(one_side(forked, cache, warm, runs, Path(folder)))
    return {"runs": runs, "repeat": repeat, "playbooks": list(PLAYBOOKS), "rows": rows}


def markdown(result: dict) -> str:
    runs, rows = result["runs"], result["rows"]

    def per_run(side: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[side]) / runs

    lines = [
        f"{runs} ansible-playbook runs of {', '.join(result['playbooks'])} in turn, each refused "
        f"by its first checks (half with --check), median of {result['repeat']} rounds; "
        f"{platform.machine()}, {os.cpu_count()} CPUs. CPU: every process started, the "
        "server included.",
        "",
        "| runs | CPU per run | wall per run |",
        "|---|---|---|",
    ]
    for side in rows:
        lines.append(f"| {side} | {per_run(side, 'cpu'):.2f} s | {per_run(side, 'wall'):.2f} s |")
    cpu = per_run("forked", "cpu") / per_run("new process", "cpu")
    wall = per_run("forked", "wall") / per_run("new process", "wall")
    lines += ["", f"Ratios of medians, forked / new process: CPU {cpu:.2f}x, wall {wall:.2f}x."]
    if "new process, no cache" in rows:
        kept = per_run("new process", "cpu") / per_run("new process, no cache", "cpu")
        lines[-1] += f" The kept routing table, new process / no cache: CPU {kept:.2f}x."
    if "forked, not warmed" in rows:
        warmed = per_run("forked", "cpu") / per_run("forked, not warmed", "cpu")
        lines[-1] += f" Servers that load what runs load, forked / not warmed: CPU {warmed:.2f}x."
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    result = measure(args.runs, args.repeat)
    out = REPO / "bench" / "results" / "forked_cli.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    print(text)
    if args.markdown:
        replace_section(args.markdown, text, MARKS)


if __name__ == "__main__":
    main()
