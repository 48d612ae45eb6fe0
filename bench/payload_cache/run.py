"""Benchmark: a task's CPU time on a test worker, with and without the payload cache.

Every Ansible task on a worker starts a Python that compiles the module and its module_utils
from the payload zip; the worker image keeps that compiled code between tasks
(tools/payload_cache.py, turned off with CLOUDTPU_PAYLOAD_CACHE=0). This runs the same
playbook of TASKS `ansible.builtin.stat` tasks against one worker container of the image, with
the cache off and on, in one run, and reads the container's own CPU time from its cgroup:

* off: CLOUDTPU_PAYLOAD_CACHE=0, what Python does alone;
* on, cold: the first run after the cache folder was emptied (it is written then);
* on: the cache filled.

    .venv/bin/python bench/payload_cache/run.py [--tasks 40] [--repeat 3] \
        [--markdown bench/payload_cache/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.scale.report import replace_section

MARKS = ("<!-- bench-payload-cache:start -->", "<!-- bench-payload-cache:end -->")
CACHE = "/root/.cache/cloudtpu-payload-pyc"
MODULE = "/usr/lib/python3/dist-packages/cloudtpu_payload_cache.py"
PLAYBOOK = """- hosts: all
  gather_facts: false
  environment:
    CLOUDTPU_PAYLOAD_CACHE: "{switch}"
  tasks:
    - name: Look at a file
      ansible.builtin.stat:
        path: /etc/hostname
      loop: "{{{{ range({tasks}) | list }}}}"
"""


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout


def container_cpu(container_id: str) -> float:
    """The container's CPU seconds so far, from cgroup v1 (cpuacct) or v2 (cpu.stat)."""
    v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage")
    if v1.exists():
        return int(v1.read_text()) / 1e9
    for v2 in (
        Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/cpu.stat"),
        Path(f"/sys/fs/cgroup/docker/{container_id}/cpu.stat"),
    ):
        if v2.exists():
            fields = dict(line.split() for line in v2.read_text().splitlines())
            return int(fields["usage_usec"]) / 1e6
    raise SystemExit(f"no cgroup CPU account found for container {container_id}")


def one_run(container: str, container_id: str, playbook: Path) -> dict[str, float]:
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")}
    before_cpu, before_children = (
        container_cpu(container_id),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    start = time.monotonic()
    subprocess.run(
        [
            str(REPO / ".venv" / "bin" / "ansible-playbook"),
            "-i",
            f"{container},",
            "-c",
            "community.docker.docker",
            str(playbook),
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    controller = (after.ru_utime - before_children.ru_utime) + (
        after.ru_stime - before_children.ru_stime
    )
    return {
        "worker_cpu": container_cpu(container_id) - before_cpu,
        "wall": wall,
        "controller_cpu": controller,
    }


def measure(image: str, tasks: int, repeat: int) -> dict:
    name = f"cloudtpu-bench-payload-{os.getpid()}"
    container_id = docker("run", "-d", "--rm", "--name", name, image, "sleep", "infinity").strip()
    try:
        if subprocess.run(["docker", "exec", name, "test", "-f", MODULE], check=False).returncode:
            raise SystemExit(f"{image} has no payload cache ({MODULE}); run make image")
        rows: dict[str, list[dict[str, float]]] = {"off": [], "on, cold": [], "on": []}
        with tempfile.TemporaryDirectory() as folder:
            books = {}
            for switch in ("0", "1"):
                books[switch] = Path(folder) / f"cache{switch}.yml"
                books[switch].write_text(PLAYBOOK.format(switch=switch, tasks=tasks))
            for _ in range(repeat):
                rows["off"].append(one_run(name, container_id, books["0"]))
                docker("exec", name, "rm", "-rf", CACHE)
                rows["on, cold"].append(one_run(name, container_id, books["1"]))
                rows["on"].append(one_run(name, container_id, books["1"]))
    finally:
        subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True)
    return {"image": image, "tasks": tasks, "repeat": repeat, "rows": rows}


def per_task(runs: list[dict[str, float]], key: str, tasks: int) -> float:
    return statistics.median(run[key] for run in runs) / tasks * 1000


def markdown(result: dict) -> str:
    tasks, rows = result["tasks"], result["rows"]
    lines = [
        f"{tasks} `stat` tasks on one worker container (docker connection), median of "
        f"{result['repeat']} runs; {platform.machine()}, {os.cpu_count()} CPUs.",
        "",
        "| payload cache | worker CPU per task | controller CPU per task | wall per task |",
        "|---|---|---|---|",
    ]
    for mode, runs in rows.items():
        lines.append(
            f"| {mode} | {per_task(runs, 'worker_cpu', tasks):.0f} ms "
            f"| {per_task(runs, 'controller_cpu', tasks):.0f} ms "
            f"| {per_task(runs, 'wall', tasks):.0f} ms |"
        )
    off, on = per_task(rows["off"], "worker_cpu", tasks), per_task(rows["on"], "worker_cpu", tasks)
    wall_off, wall_on = per_task(rows["off"], "wall", tasks), per_task(rows["on"], "wall", tasks)
    lines += [
        "",
        f"Ratios of medians: worker CPU per task, on / off = {on / off:.2f}x; "
        f"wall per task, on / off = {wall_on / wall_off:.2f}x.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="cloudtpu-pod-worker:current")
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    result = measure(args.image, args.tasks, args.repeat)
    out = REPO / "bench" / "results" / "payload_cache.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    print(text)
    if args.markdown:
        replace_section(args.markdown, text, MARKS)


if __name__ == "__main__":
    main()
