"""Benchmark: an ansible-rulebook watcher of TPU node states against babysit.yml's own check.

babysit.yml looks at its run's nodes once per interval with a short play on the control
machine (cloudtpu.pod.tpu_node_info against the TPU API). ansible-rulebook (Event-Driven
Ansible) could watch instead: an event source polls the API and a rule reacts to PREEMPTED.
Measured side by side against the emulator, in one run:

* rulebook: time from start until its first event was handled, the time from a preemption
  until its rule fired (polling every second), its resident memory and CPU while it watches;
* babysit.yml's check: one ansible-playbook run of the task babysit.yml runs per round
  (wall time, CPU, peak memory).

ansible-rulebook and its ansible-core go into a venv of the benchmark's own
(.cache/rulebook-venv); it needs a Java 17 runtime on the control machine (its rule engine).

    .venv/bin/python bench/rulebook/run.py [--repeat 3] [--markdown bench/rulebook/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.tpu_emulator.testing import TOKEN, EmulatorProcess, admin, node

VENV = REPO / ".cache" / "rulebook-venv"
PACKAGES = ["ansible-rulebook==1.3.2", "ansible-core==2.19.14"]
PROJECT, ZONE, NODE = "bench-project", "us-central2-b", "pod"
START, END = "<!-- bench-rulebook:start -->", "<!-- bench-rulebook:end -->"

SOURCE = '''"""Events of TPU node states: one event per node whose state changed."""
import asyncio
import json
import urllib.request


async def main(queue, args):
    seen = {}
    while True:
        request = urllib.request.Request(
            args["url"], headers={"Authorization": "Bearer " + args["token"]}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            nodes = json.loads(response.read()).get("nodes", [])
        for found in nodes:
            name = found["name"].rsplit("/", 1)[-1]
            if seen.get(name) != found.get("state"):
                seen[name] = found.get("state")
                await queue.put({"node": name, "state": found.get("state")})
        await asyncio.sleep(args.get("interval", 1))
'''

RULES = """---
- name: Watch TPU nodes
  hosts: localhost
  sources:
    - tpu_nodes:
        url: "{{ URL }}"
        token: "{{ TOKEN }}"
        interval: 1
  rules:
    - name: A node is watched
      condition: event.state == "READY"
      action:
        debug:
          msg: "watching {{ event.node }}"
    - name: A node is preempted
      condition: event.state == "PREEMPTED"
      action:
        debug:
          msg: "recover {{ event.node }}"
"""

CHECK = """---
- name: One babysit check of the node
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - name: Read the run's nodes from the TPU API
      cloudtpu.pod.tpu_node_info:
        project: %s
        zones: [%s]
        name: %s
"""


def ensure_venv() -> Path:
    stamp = VENV / ".stamp"
    if not stamp.exists() or stamp.read_text() != " ".join(PACKAGES):
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        pip = [str(VENV / "bin" / "pip"), "install", "--quiet", *PACKAGES]
        subprocess.run(pip, check=True)
        stamp.write_text(" ".join(PACKAGES))
    return VENV / "bin"


def tree_usage(pid: int) -> tuple[float, int]:
    """CPU seconds and resident KB of a process and its children (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu, rss = 0.0, 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if int(entry.name) != pid and int(fields[1]) != pid:
            continue
        cpu += (int(fields[11]) + int(fields[12])) / tick
        found = re.search(r"^VmRSS:\s+(\d+)", status, re.MULTILINE)
        rss += int(found.group(1)) if found else 0
    return cpu, rss


def rulebook_once(bin_dir: Path, emulator: EmulatorProcess, folder: Path) -> dict[str, float]:
    url = f"{emulator.api_url}/projects/{PROJECT}/locations/{ZONE}/nodes"
    (folder / "vars.yml").write_text(json.dumps({"URL": url, "TOKEN": TOKEN}))
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cmd = [str(bin_dir / "ansible-rulebook"), "-r", str(folder / "rules.yml"), "-S",
           str(folder / "sources"), "-i", str(folder / "inventory.yml"),
           "--vars", str(folder / "vars.yml")]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert proc.stdout is not None
    result: dict[str, float] = {}
    try:
        for line in proc.stdout:
            if "watching pod" in line and "ready_s" not in result:
                result["ready_s"] = time.monotonic() - started
                time.sleep(5)  # five seconds of watching before the preemption
                result["idle_cpu_s"], result["rss_mb"] = tree_usage(proc.pid)
                result["rss_mb"] /= 1024
                preempted = time.monotonic()
                admin(emulator.root_url, "POST",
                      f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:preempt", {})  # fmt: skip
            elif "recover pod" in line:
                result["reaction_s"] = time.monotonic() - preempted
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if "reaction_s" not in result:
        raise RuntimeError("the rulebook never reacted to the preemption")
    return result


def babysit_check_once(emulator: EmulatorProcess, folder: Path) -> dict[str, float]:
    playbook = folder / "check.yml"
    playbook.write_text(CHECK % (PROJECT, ZONE, NODE))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), GCP_AUTH_KIND="accesstoken",
               GCP_ACCESS_TOKEN=TOKEN, CLOUDTPU_API_ENDPOINT=emulator.api_url)  # fmt: skip
    env.pop("ANSIBLE_INVENTORY", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    command = [str(REPO / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", str(playbook)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the check failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": after.ru_maxrss / 1024}


def median(rows: list[dict[str, float]], key: str) -> str:
    values = [row[key] for row in rows]
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def render(rulebook: list[dict[str, float]], checks: list[dict[str, float]]) -> str:
    per_round = statistics.median(c["cpu_s"] for c in checks)
    idle = statistics.median(r["idle_cpu_s"] for r in rulebook)
    return "\n".join([
        f"median (min-max) of {len(rulebook)} runs; {os.cpu_count()} CPUs; "
        f"load average {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| figure | ansible-rulebook watcher | babysit.yml check |",
        "|---|---|---|",
        f"| start until watching (s) | {median(rulebook, 'ready_s')} | |",
        f"| preemption until reaction (s) | {median(rulebook, 'reaction_s')} (polls every 1 s) "
        "| at most one interval (30 s default) |",
        f"| one check (s wall) | | {median(checks, 'wall_s')} |",
        f"| CPU (s) | {median(rulebook, 'idle_cpu_s')} to start and watch 5 s "
        f"| {median(checks, 'cpu_s')} per check |",
        f"| memory (MB resident) | {median(rulebook, 'rss_mb')} while it watches "
        f"| {median(checks, 'peak_rss_mb')} peak of a check |",
        "",
        f"Ratio: the rulebook's start and 5 s of watching cost {idle / per_round:.1f}x the CPU "
        "of one babysit check.",
    ])  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", type=Path, help="rewrite the rulebook section of this file")
    args = parser.parse_args()
    bin_dir = ensure_venv()
    with tempfile.TemporaryDirectory(prefix="bench-rulebook-") as tmp:
        folder = Path(tmp)
        (folder / "sources").mkdir()
        (folder / "sources" / "tpu_nodes.py").write_text(SOURCE)
        (folder / "rules.yml").write_text(RULES)
        (folder / "inventory.yml").write_text("all: {hosts: {localhost: {}}}\n")
        state = folder / "state.json"
        zones = {ZONE: {"nodes": [node(NODE, "v4-8")]}}
        state.write_text(json.dumps({"projects": {PROJECT: {"number": "1", "zones": zones}}}))
        rulebook, checks = [], []
        for _ in range(args.repeat):  # a new emulator each time: its node is READY again
            with EmulatorProcess(state) as emulator:
                rulebook.append(rulebook_once(bin_dir, emulator, folder))
                checks.append(babysit_check_once(emulator, folder))
    table = render(rulebook, checks)
    print(table)
    if args.markdown:
        text = args.markdown.read_text()
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        args.markdown.write_text(f"{before}{START}\n{table}\n{END}{after}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
