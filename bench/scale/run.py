#!/usr/bin/env python3
"""Controller scale: one Ansible controller against 8, 64 and 256 inventory hosts.

A few worker containers (the emulator's Docker backend: systemd + sshd, the worker image) stand
for many hosts: inventory host i connects to container i mod N, with a ControlPath and SSH
options of its own, so every inventory host is its own SSH session (its own ControlPersist
master), as on a pod where every worker is a machine. The containers accept that many sessions
at once (sshd MaxStartups/MaxSessions raised). Per cell (hosts x settings), measured around one
``ansible-playbook`` or ``ansible`` process: wall time, CPU of the controller (user+sys of the
process and every child it waited for, from wait4), peak memory (largest single process, and the
sum of the resident memory of the whole process tree, sampled every 0.2 s).

Runs: bench/scale/noop.yml (the shape of a converged site.yml re-run) and a one-off command
(``ansible -m command``, what run.yml does once per host). Settings: forks, ControlPersist on or
off, pipelining on or off, and the mitogen strategy (from a venv of its own under .cache/; never
the project's default). Everything else is the project's ansible.cfg.

    .venv/bin/python bench/scale/run.py [--hosts 8 64 256] [--containers 3] [--repeat 1]
                                        [--markdown bench/scale/RESULTS.md] [--no-mitogen]

Raw rows: bench/results/scale.json; chart: bench/figures/scale-noop.svg and scale-adhoc.svg.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.bootstrap.measure import recap
from bench.pod_bench import log
from bench.scale import report
from tools.tpu_emulator.backends import NodeInfo
from tools.tpu_emulator.docker_backend import DockerBackend
from tools.tpu_emulator.docker_cleanup import cleanup

MARK = ("<!-- bench-scale:start -->", "<!-- bench-scale:end -->")
MITOGEN = "mitogen==0.3.54"
MITOGEN_VENV = REPO / ".cache" / "bench-mitogen"
RESULTS = REPO / "bench" / "results" / "scale.json"
FIGURES = REPO / "bench" / "figures"
SSHD_CONF = "MaxStartups 1000:30:2000\nMaxSessions 100\n"
PERSIST_ARGS = "-o ControlMaster=auto -o ControlPersist=300s"
OTHER_ARGS = "-o StrictHostKeyChecking=accept-new -o ServerAliveInterval=30"


def plan(hosts: list[int], mitogen: bool, project_only: bool = False) -> list[dict[str, Any]]:
    """The cells, fewest hosts first; at each count the project's settings, then (unless
    project_only) one setting changed at a time (ControlPersist, mitogen, pipelining, forks)."""
    base = {"forks": 64, "persist": True, "pipelining": True, "strategy": "linear"}
    variants: list[tuple[str, dict[str, Any]]] = [("adhoc", {}), ("noop", {})]
    if not project_only:
        variants += [("noop", {"persist": False}), ("adhoc", {"persist": False})]
    if mitogen and not project_only:
        variants += [
            ("noop", {"strategy": "mitogen_linear"}),
            ("adhoc", {"strategy": "mitogen_linear"}),
        ]
    if not project_only:
        variants += [
            ("noop", {"pipelining": False}),
            ("noop", {"forks": 5}),
            ("noop", {"forks": 25}),
        ]
    cells = []
    for count in hosts:
        for kind, change in variants:
            if change.get("forks", 0) >= count:
                continue  # as many forks as hosts or more: the same as the project's setting
            cells.append({**base, **change, "kind": kind, "hosts": count})
    return cells


def mitogen_strategies() -> Path:
    """mitogen's strategy plugins, from a venv of the benchmark's own (never the project's)."""
    python = MITOGEN_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(MITOGEN_VENV)], check=True)
    found = list(MITOGEN_VENV.glob("lib/python*/site-packages/ansible_mitogen/plugins/strategy"))
    if not found:
        subprocess.run([str(python), "-m", "pip", "install", "-q", MITOGEN], check=True)
        found = list(
            MITOGEN_VENV.glob("lib/python*/site-packages/ansible_mitogen/plugins/strategy")
        )
    return found[0]


class Workers:
    """N worker containers through the emulator's Docker backend, with a key of the bench's own."""

    def __init__(self, count: int, work: Path) -> None:
        self.work = work
        self.key = work / "id_ed25519"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True
        )
        public = (work / "id_ed25519.pub").read_text(encoding="utf-8").strip()
        self.backend = DockerBackend(emulator_id="bench-scale", keep=False)
        self.node = NodeInfo(
            "bench",
            "bench-zone",
            "scale",
            "v4-bench",
            count,
            False,
            metadata={"ssh-keys": f"tpu:{public}"},
        )
        self.ips = [a.internal_ip for a in self.backend.create(self.node)]
        for container in self.backend.container_names(self.node):
            subprocess.run(
                [
                    "docker",
                    "exec",
                    container,
                    "sh",
                    "-c",
                    f"printf '{SSHD_CONF}' > /etc/ssh/sshd_config.d/bench-scale.conf"
                    " && systemctl reload ssh",
                ],
                check=True,
            )

    def close(self) -> None:
        cleanup("bench-scale")


def inventory(ips: list[str], hosts: int, sockets: Path, path: Path) -> None:
    entries = {
        f"h{i:03d}": {
            "ansible_host": ips[i % len(ips)],
            "bench_worker": i,
            "ansible_control_path": str(sockets / f"{i:03d}"),
            # distinct options per host, so no client merges hosts of one address into a session
            "ansible_ssh_extra_args": f"-o SetEnv=BENCH_SCALE_HOST=h{i:03d}",
        }
        for i in range(hosts)
    }
    path.write_text(yaml.safe_dump({"all": {"hosts": entries}}), encoding="utf-8")


def environment(cell: dict[str, Any], work: Path, strategies: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "CLOUDTPU_"))}
    env.update(
        {
            "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_REMOTE_USER": "tpu",
            "ANSIBLE_PRIVATE_KEY_FILE": str(work / "id_ed25519"),
            "ANSIBLE_SSH_COMMON_ARGS": f"-o UserKnownHostsFile={work / 'known_hosts'}",
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(work / "facts"),
            "ANSIBLE_FORKS": str(cell["forks"]),
            "ANSIBLE_PIPELINING": str(cell["pipelining"]),
            "ANSIBLE_SSH_ARGS": f"{PERSIST_ARGS} {OTHER_ARGS}" if cell["persist"] else OTHER_ARGS,
        }
    )
    if cell["strategy"] != "linear" and strategies:
        env["ANSIBLE_STRATEGY_PLUGINS"] = str(strategies)
        env["ANSIBLE_STRATEGY"] = cell["strategy"]
    return env


def tree_rss(root: int) -> int:
    """Resident bytes of root and all its descendants, from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(stat[1])
        rss[int(entry)] = int(stat[21]) * page
    total = 0
    for pid in rss:
        walk = pid
        while walk > 1 and walk != root:
            walk = parents.get(walk, 0)
        if walk == root:
            total += rss[pid]
    return total


def measure(argv: list[str], env: dict[str, str], logfile: Path, limit: float) -> dict[str, Any]:
    """Run argv; stop its whole process group after limit seconds (then timed_out is true)."""
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with logfile.open("w", encoding="utf-8") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        peak = [0]
        done = threading.Event()
        timed_out = threading.Event()

        def sample() -> None:
            while not done.wait(0.2):
                peak[0] = max(peak[0], tree_rss(proc.pid))
                if time.perf_counter() - start > limit and not timed_out.is_set():
                    timed_out.set()
                    os.killpg(proc.pid, signal.SIGTERM)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "max_rss_mb": usage.ru_maxrss / 1024,
        "tree_rss_mb": peak[0] / 2**20,
        "rc": proc.returncode,
        "timed_out": timed_out.is_set(),
    }


def close_masters(sockets: Path) -> None:
    """Stop the ControlPersist masters a run left, so the next run starts as cold as this one."""
    names = list(sockets.iterdir()) if sockets.exists() else []

    def stop(sock: Path) -> None:
        subprocess.run(
            ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "bench"],
            capture_output=True,
            check=False,
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(stop, names))
    shutil.rmtree(sockets, ignore_errors=True)


def run_cell(
    cell: dict[str, Any],
    work: Path,
    ips: list[str],
    strategies: Path | None,
    index: int,
    limit: float = 3600,
) -> dict[str, Any]:
    # short: a ControlPath is a unix socket path, at most about 100 characters
    sockets = Path(tempfile.mkdtemp(prefix="bsc", dir="/tmp"))
    inv = work / f"inventory-{cell['hosts']}.yml"
    inventory(ips, cell["hosts"], sockets, inv)
    shutil.rmtree(work / "facts", ignore_errors=True)
    env = environment(cell, work, strategies)
    if cell["kind"] in ("noop", "record"):
        argv = ["ansible-playbook", "-i", str(inv), str(REPO / "bench" / "scale" / "noop.yml")]
        # the roles' code as the records were written: a copy, so edits to the tree do not count
        argv += ["-e", json.dumps({"bench_roles_dir": str(work / "collection" / "roles")})]
        argv += ["-e", '{"bench_record": true}'] if cell["kind"] == "record" else []
    else:
        argv = ["ansible", "all", "-i", str(inv), "-m", "ansible.builtin.command", "-a", "uname -r"]
    logfile = work / "logs" / f"{index:02d}-{cell['kind']}-{cell['hosts']}.log"
    row = {**cell, **measure(argv, env, logfile, limit)}
    close_masters(sockets)
    text = logfile.read_text(encoding="utf-8")
    if cell["kind"] in ("noop", "record"):
        row["recap"] = recap(text)
        noop_changed = cell["kind"] == "noop" and row["recap"]["changed"]
        if noop_changed or row["recap"]["failed"] or row["recap"]["unreachable"]:
            row["rc"] = row["rc"] or 1
    else:
        row["answered"] = text.count("| CHANGED |") + text.count("| SUCCESS |")
        if row["answered"] != cell["hosts"]:
            row["rc"] = row["rc"] or 1
    if row["rc"]:
        row["tail"] = text.splitlines()[-15:]
    log(
        f"{cell['kind']} {cell['hosts']} hosts, {report.setting_label(cell)}: "
        f"{row['wall']:.1f} s wall, {row['cpu']:.1f} s CPU, rc {row['rc']}"
    )
    return row


def write(
    result: dict[str, Any], rows: list[dict[str, Any]], markdown: str | None, path: Path
) -> str:
    """Results so far: JSON, charts and the section of bench/scale/RESULTS.md (after every cell)."""
    result.update(rows=rows, cells=report.summarize(rows), load_after=round(os.getloadavg()[0], 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    FIGURES.mkdir(parents=True, exist_ok=True)
    for kind in report.KINDS:
        chart = report.svg_chart(result["cells"], kind)
        (FIGURES / f"scale-{kind}.svg").write_text(chart, encoding="utf-8")
    table = report.markdown(result)
    if markdown:
        report.replace_section(Path(markdown), table, MARK)
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[8, 64, 256])
    parser.add_argument("--containers", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--budget", type=float, default=15, help="minutes; no cell starts after")
    parser.add_argument("--no-mitogen", action="store_true")
    parser.add_argument(
        "--project-only", action="store_true", help="only the project's settings at each count"
    )
    parser.add_argument("--markdown", help="replace the bench-scale section of this file")
    parser.add_argument("--json", type=Path, default=RESULTS, help="raw rows (and charts)")
    parser.add_argument("--append", action="store_true", help="add to the rows of --json")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # containers go in finally

    strategies = None if args.no_mitogen or args.project_only else mitogen_strategies()
    cells = plan(sorted(args.hosts), not args.no_mitogen, args.project_only) * args.repeat
    work = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=REPO / ".cache"))
    result: dict[str, Any] = {
        "containers": args.containers,
        "repeat": args.repeat,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}",
        "load_before": round(os.getloadavg()[0], 1),
        "skipped": [],
    }
    rows: list[dict[str, Any]] = []
    if args.append and args.json.exists():
        earlier = json.loads(args.json.read_text(encoding="utf-8"))
        rows = earlier["rows"]
        result["load_before"] = earlier["load_before"]
        result["skipped"] = earlier.get("skipped", [])
    deadline = time.monotonic() + args.budget * 60
    workers = Workers(args.containers, work)
    try:
        (work / "known_hosts").touch()
        for folder in ("roles", "plugins"):
            shutil.copytree(REPO / folder, work / "collection" / folder)
        warm = {
            "kind": "adhoc",
            "hosts": args.containers,
            "forks": 5,
            "persist": False,
            "pipelining": True,
            "strategy": "linear",
        }
        run_cell(warm, work, workers.ips, None, 0)  # accepts the host keys once
        # one record per role and container, as a converged pod's last full run leaves them
        record = run_cell({**warm, "kind": "record"}, work, workers.ips, None, 0)
        if record["rc"]:
            raise SystemExit(f"writing the records failed: {record.get('tail')}")
        for index, cell in enumerate(cells, 1):
            if time.monotonic() > deadline:
                result["skipped"] += cells[index - 1 :]
                log(f"time budget spent: {len(cells) - index + 1} cells not run")
                break
            limit = deadline - time.monotonic()
            rows.append(run_cell(cell, work, workers.ips, strategies, index, limit))
            write(result, rows, args.markdown, args.json)
    finally:
        workers.close()
    print(write(result, rows, args.markdown, args.json))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if rows and all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
