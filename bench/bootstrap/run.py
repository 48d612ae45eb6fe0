#!/usr/bin/env python3
"""Bootstrap of a pod: the guide's shell script over parallel ssh against site.yml.

For every worker count, in one run and on the same machine: provision a fresh pod through the
TPU API emulator (Docker backend: one container per worker), bootstrap it cold, then run the
same bootstrap again ``--reruns`` times (nothing left to do). Once with ``baseline.sh`` piped
into one ssh per worker, all at once (what ``gcloud ... ssh --worker=all --command`` does), and
once with ``ansible-playbook site.yml`` limited to the roles that do what the script does. Each
side gets its own fresh pod, so both cold runs start from the same image. The order of the two
sides alternates between worker counts and rounds.

Bytes: every worker container's eth0 receive and send counters, read before and after each run
(``docker exec``, so the reading itself is not counted). With the pod cache, the other workers
fetch the wheels from the coordinator over the pod network: bytes from the package indexes are
then the pod's received bytes minus what the coordinator sent to its peers.

    bench/bootstrap/run.py --workers 1 2 4 8 --reruns 3 --cold 1 --markdown BENCHMARKS.md

Raw rows: bench/results/bootstrap.json (with every run's log under .cache/bench/logs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / ".cache" / "bench"
RESULTS = REPO / "bench" / "results" / "bootstrap.json"
BASELINE = REPO / "bench" / "bootstrap" / "baseline.sh"
PROJECT = "demo-project"
ZONE = "us-central2-b"
# Accelerator types of the emulator and their worker counts (v4: 4 chips, 8 cores per host).
TYPES = {1: "v4-8", 2: "v4-16", 4: "v4-32", 8: "v4-64", 16: "v4-128"}
# What the Ansible side runs: the roles that do what baseline.sh does, and the same choices.
ANSIBLE_TAGS = "base,python,framework,remote_shell"
MARK_START = "<!-- bench-bootstrap:start -->"
MARK_END = "<!-- bench-bootstrap:end -->"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def environment(port: int) -> dict[str, str]:
    """The environment ansible-playbook needs against this benchmark's emulator."""
    env = dict(os.environ)
    env.update(
        {
            "PATH": f"{REPO / '.venv' / 'bin'}:{env.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "CLOUDTPU_API_ENDPOINT": f"http://127.0.0.1:{port}/v2",
            "CLOUDTPU_PROJECT": PROJECT,
            "CLOUDTPU_ZONES": ZONE,
            "GCP_AUTH_KIND": "accesstoken",
            "GCP_ACCESS_TOKEN": "bench-token",
            "ANSIBLE_REMOTE_USER": "tpu",
            "ANSIBLE_PRIVATE_KEY_FILE": str(BENCH / "id_ed25519"),
            "ANSIBLE_SSH_COMMON_ARGS": f"-o UserKnownHostsFile={BENCH / 'known_hosts'}",
            # A fact cache of the benchmark's own: pod names are new in every round anyway.
            "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(BENCH / "facts"),
            "ANSIBLE_NOCOLOR": "true",
            "ANSIBLE_FORCE_COLOR": "false",
        }
    )
    return env


def run(argv: list[str], env: dict[str, str], logfile: Path) -> tuple[float, int, str]:
    """Run a command, write its output to logfile; return wall seconds, rc and output."""
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seconds = time.monotonic() - start
    logfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.write_text(done.stdout, encoding="utf-8")
    return seconds, done.returncode, done.stdout


def playbook(args: list[str], env: dict[str, str], logfile: Path) -> tuple[float, str]:
    seconds, rc, out = run(["ansible-playbook", "-i", "inventories/demo", *args], env, logfile)
    if rc != 0:
        tail = "\n".join(out.splitlines()[-30:])
        raise RuntimeError(f"ansible-playbook {' '.join(args)} failed (rc {rc}):\n{tail}")
    return seconds, out


def plain(value: Any) -> Any:
    """Values of ansible-inventory --list may come as {"__ansible_unsafe": ...}."""
    if isinstance(value, dict) and "__ansible_unsafe" in value:
        return value["__ansible_unsafe"]
    return value


def pod_hosts(name: str, env: dict[str, str]) -> list[dict[str, Any]]:
    """The pod's workers from the tpu_vm inventory, worker 0 first."""
    out = subprocess.run(
        ["ansible-inventory", "-i", "inventories/demo", "--list"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    hostvars = json.loads(out)["_meta"]["hostvars"]
    hosts = [
        {
            "host": host,
            "ip": plain(hv["ansible_host"]),
            "worker": int(plain(hv["tpu_worker_id"])),
        }
        for host, hv in hostvars.items()
        if plain(hv.get("tpu_node")) == name
    ]
    return sorted(hosts, key=lambda h: h["worker"])


def containers(name: str) -> list[str]:
    """The pod's worker containers, worker 0 first (names end in -w<id>)."""
    out = subprocess.run(
        ["docker", "ps", "--format", "{{.Names}}", "--filter", f"name=-{name}-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return sorted(out, key=lambda c: int(c.rsplit("-w", 1)[1]))


def counters(names: list[str]) -> list[tuple[int, int]]:
    """(rx_bytes, tx_bytes) of eth0 in each container."""
    result = []
    for name in names:
        out = subprocess.run(
            [
                "docker",
                "exec",
                name,
                "cat",
                "/sys/class/net/eth0/statistics/rx_bytes",
                "/sys/class/net/eth0/statistics/tx_bytes",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        result.append((int(out[0]), int(out[1])))
    return result


def apt_debs(names: list[str]) -> list[int]:
    """Bytes of the .deb files apt downloaded into its archive folder, per container."""
    result = []
    for name in names:
        out = subprocess.run(
            ["docker", "exec", name, "du", "-sb", "/var/cache/apt/archives"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        result.append(int(out[0]) if out else 0)
    return result


def traffic(before: list[tuple[int, int]], after: list[tuple[int, int]]) -> dict[str, Any]:
    rx = [a[0] - b[0] for a, b in zip(after, before, strict=True)]
    tx = [a[1] - b[1] for a, b in zip(after, before, strict=True)]
    # What the coordinator sent is the cache traffic to its peers (plus the small ssh replies).
    served = tx[0] if len(tx) > 1 else 0
    return {"rx": rx, "tx": tx, "pod_rx": sum(rx), "from_indexes": sum(rx) - served}


def ssh_all(hosts: list[dict[str, Any]], env: dict[str, str], logdir: Path) -> tuple[float, bool]:
    """baseline.sh on every worker at once: one ssh per worker, as gcloud --worker=all does."""
    script = BASELINE.read_bytes()
    results: dict[str, int] = {}

    def one(host: dict[str, Any]) -> None:
        argv = [
            "ssh",
            "-i",
            str(BENCH / "id_ed25519"),
            "-o",
            f"UserKnownHostsFile={BENCH / 'known_hosts'}",
            "-o",
            "StrictHostKeyChecking=accept-new",
            "-o",
            "BatchMode=yes",
            f"tpu@{host['ip']}",
            f"BENCH_JAX_VERSION={env['BENCH_JAX_VERSION']} bash -s",
        ]
        done = subprocess.run(argv, input=script, capture_output=True, check=False)
        (logdir / f"{host['host']}.log").write_bytes(done.stdout + done.stderr)
        results[host["host"]] = done.returncode

    logdir.mkdir(parents=True, exist_ok=True)
    threads = [threading.Thread(target=one, args=(h,)) for h in hosts]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - start
    failed = {h: rc for h, rc in results.items() if rc != 0}
    if failed:
        raise RuntimeError(f"baseline.sh failed on {failed}; logs in {logdir}")
    return seconds, True


def recap(out: str) -> dict[str, int]:
    totals = {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0}
    for match in re.finditer(
        r"^\S+\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", out, re.M
    ):
        totals["ok"] += int(match[1])
        totals["changed"] += int(match[2])
        totals["unreachable"] += int(match[3])
        totals["failed"] += int(match[4])
    return totals


def slowest(out: str, count: int = 8) -> list[str]:
    """The slowest tasks from the profile_tasks summary at the end of a run."""
    lines = [ln for ln in out.splitlines() if re.search(r" -+ \d+\.\d+s$", ln)]
    return lines[:count]


class Bench:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.env = environment(opts.port)
        self.env["BENCH_JAX_VERSION"] = opts.jax
        self.stamp = time.strftime("%m%d%H%M")
        self.logs = BENCH / "logs" / self.stamp

    def start(self) -> None:
        BENCH.mkdir(parents=True, exist_ok=True)
        key = BENCH / "id_ed25519"
        if not key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tpu@bench", "-f", str(key)],
                check=True,
            )
        (BENCH / "known_hosts").touch()
        subprocess.run(
            [
                str(REPO / "tools" / "emulator.sh"),
                "start",
                str(BENCH / f"emulator-{self.opts.port}"),
                str(self.opts.port),
            ],
            check=True,
            env=self.env,
        )

    def stop(self) -> None:
        subprocess.run(
            [
                str(REPO / "tools" / "emulator.sh"),
                "stop",
                str(BENCH / f"emulator-{self.opts.port}"),
            ],
            check=False,
        )

    def provision(self, name: str, workers: int) -> None:
        playbook(
            [
                "playbooks/provision.yml",
                "-e", f"tpu_provision_name={name}",
                "-e", f"tpu_provision_zone={ZONE}",
                "-e", f"tpu_provision_project={PROJECT}",
                "-e", f"tpu_provision_accelerator_type={TYPES[workers]}",
                "-e", "tpu_provision_ssh_user=tpu",
                "-e", f"tpu_provision_ssh_public_key_file={BENCH / 'id_ed25519.pub'}",
                "-e", f"tpu_provision_known_hosts={BENCH / 'known_hosts'}",
                "-e", "tpu_provision_poll_interval=1",
            ],
            self.env,
            self.logs / f"{name}-provision.log",
        )  # fmt: skip

    def teardown(self, name: str) -> None:
        playbook(
            [
                "playbooks/teardown.yml",
                "-e", "tpu_teardown_confirm=true",
                "-e", f"tpu_provision_name={name}",
                "-e", f"tpu_provision_zone={ZONE}",
                "-e", f"tpu_provision_project={PROJECT}",
                "-e", "tpu_teardown_poll_interval=1",
            ],
            self.env,
            self.logs / f"{name}-teardown.log",
        )  # fmt: skip

    def ansible_args(self, name: str) -> list[str]:
        extra = {
            # The same choices as baseline.sh: its packages, login shell, time zone, jax release.
            "tpu_base_packages_extra": ["golang", "neofetch", "zsh", "aria2"],
            "tpu_base_user_shell": "/usr/bin/zsh",
            "tpu_base_timezone": "Asia/Hong_Kong",
            "tpu_framework_version": self.opts.jax,
        }
        if self.opts.pod_cache is not None:
            extra["tpu_framework_pod_cache"] = self.opts.pod_cache == "on"
        return [
            "site.yml",
            "--limit",
            f"{name}-w*",
            "--tags",
            self.opts.tags,
            "-e",
            json.dumps(extra),
        ]

    def side(self, kind: str, workers: int, round_: int) -> dict[str, Any]:
        name = f"bench-{kind[:4]}-{workers}-{self.stamp}-{round_}"
        log(f"{kind}, {workers} worker(s), round {round_}: provision {name}")
        self.provision(name, workers)
        try:
            hosts = pod_hosts(name, self.env)
            boxes = containers(name)
            if len(hosts) != workers or len(boxes) != workers:
                raise RuntimeError(
                    f"{name}: {len(hosts)} hosts and {len(boxes)} containers, wanted {workers}"
                )
            row: dict[str, Any] = {"kind": kind, "workers": workers, "round": round_, "pod": name}
            runs = []
            for attempt in range(1 + self.opts.reruns):
                label = "cold" if attempt == 0 else f"rerun{attempt}"
                before = counters(boxes)
                if kind == "baseline":
                    seconds, _ = ssh_all(hosts, self.env, self.logs / f"{name}-{label}")
                    info: dict[str, Any] = {}
                else:
                    seconds, out = playbook(
                        self.ansible_args(name), self.env, self.logs / f"{name}-{label}.log"
                    )
                    info = {"recap": recap(out), "slowest": slowest(out)}
                after = counters(boxes)
                if attempt == 0:
                    info["apt_debs"] = apt_debs(boxes)
                runs.append(
                    {"label": label, "seconds": round(seconds, 2), **traffic(before, after), **info}
                )
                log(
                    f"  {label}: {seconds:.1f} s, pod received {sum(runs[-1]['rx']) / 1e6:.1f} MB"
                    + (f", changed={info['recap']['changed']}" if "recap" in info else "")
                )
            row["runs"] = runs
            return row
        finally:
            if not self.opts.keep:
                self.teardown(name)


def median_range(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} s ({min(values):.1f}-{max(values):.1f})"


def summarize(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    table: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        cell = table.setdefault(
            (row["kind"], row["workers"]), {"cold": [], "rerun": [], "bytes": [], "changed": []}
        )
        for run_ in row["runs"]:
            if run_["label"] == "cold":
                cell["cold"].append(run_["seconds"])
                cell["bytes"].append(run_["from_indexes"])
            else:
                cell["rerun"].append(run_["seconds"])
                if "recap" in run_:
                    cell["changed"].append(run_["recap"]["changed"])
    return table


def megabytes(values: list[float]) -> str:
    return f"{statistics.median(values) / 1e6:.0f}" if values else "-"


def markdown(data: dict[str, Any]) -> str:
    table = summarize(data["rows"])
    counts = sorted({w for _, w in table})
    lines = [
        data["header"],
        "",
        "| workers | shell script, cold | site.yml, cold | shell script, re-run "
        "| site.yml, re-run (changed) | MB from indexes, script | MB from indexes, site.yml |",
        "|---|---|---|---|---|---|---|",
    ]
    empty: dict[str, list[float]] = {"cold": [], "rerun": [], "bytes": [], "changed": []}
    for workers in counts:
        base = table.get(("baseline", workers), empty)
        ans = table.get(("ansible", workers), empty)
        changed = ",".join(str(c) for c in sorted(set(ans["changed"]))) or "-"
        lines.append(
            f"| {workers} | {median_range(base['cold'])} | {median_range(ans['cold'])} "
            f"| {median_range(base['rerun'])} | {median_range(ans['rerun'])} ({changed}) "
            f"| {megabytes(base['bytes'])} | {megabytes(ans['bytes'])} |"
        )
    lines.append("")
    ratios = []

    def med(kind: str, workers: int, key: str) -> float | None:
        values = table.get((kind, workers), {}).get(key, [])
        return statistics.median(values) if values else None

    for workers in counts:
        parts = []
        for key, label in (("cold", "cold"), ("rerun", "re-run")):
            a, b = med("ansible", workers, key), med("baseline", workers, key)
            if a and b:
                parts.append(f"{label} {a / b:.2f}x")
        if parts:
            ratios.append(f"{workers} worker(s): " + ", ".join(parts))
    if ratios:
        lines.append("site.yml / shell script, medians: " + "; ".join(ratios) + ".")
    first, last = (counts[0], counts[-1]) if counts else (None, None)
    for kind, label in (("ansible", "site.yml"), ("baseline", "shell script")):
        a, b = med(kind, last, "rerun"), med(kind, first, "rerun")
        if a and b and first != last:
            lines.append(f"Re-run growth from {first} to {last} workers, {label}: {a / b:.2f}x.")
    for kind, label in (("ansible", "site.yml"), ("baseline", "shell script")):
        a, b = med(kind, last, "bytes"), med(kind, first, "bytes")
        if a and b and first != last:
            lines.append(
                f"Bytes from the indexes, {last} against {first} worker(s), {label}: {a / b:.2f}x."
            )
    return "\n".join(lines)


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


def plot(results: Path) -> None:
    """Draw the figures with matplotlib from a venv of the benchmark's own (not the project's)."""
    venv = REPO / ".cache" / "bench-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = subprocess.run(
        [str(python), "-c", "import matplotlib"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "matplotlib==3.10.7"], check=True
        )
    subprocess.run(
        [str(python), str(REPO / "bench" / "bootstrap" / "plot.py"), str(results)], check=True
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2, 4, 8], choices=sorted(TYPES)
    )
    parser.add_argument(
        "--cold", type=int, default=1, help="fresh pods (cold runs) per side and worker count"
    )
    parser.add_argument("--reruns", type=int, default=3, help="re-runs after each cold run")
    parser.add_argument(
        "--sides", nargs="+", default=["baseline", "ansible"], choices=["baseline", "ansible"]
    )
    parser.add_argument("--jax", default="0.10.2", help="jax release for both sides")
    parser.add_argument("--tags", default=ANSIBLE_TAGS, help="site.yml tags for the Ansible side")
    parser.add_argument(
        "--pod-cache", choices=["on", "off"], help="tpu_framework_pod_cache (default: the role's)"
    )
    parser.add_argument("--port", type=int, default=8490, help="the benchmark emulator's port")
    parser.add_argument("--keep", action="store_true", help="keep the pods (no teardown)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--markdown", type=Path, help="update the bootstrap section of this file")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--render-only", action="store_true", help="redo table and plots from --results"
    )
    opts = parser.parse_args()

    if opts.render_only:
        data = json.loads(opts.results.read_text(encoding="utf-8"))
    else:
        if shutil.which("docker") is None:
            print("docker is missing: run `make image` first", file=sys.stderr)
            return 1
        bench = Bench(opts)
        bench.start()
        rows: list[dict[str, Any]] = []
        try:
            flip = False
            for workers in opts.workers:
                for round_ in range(1, opts.cold + 1):
                    order = list(opts.sides)
                    if flip:
                        order.reverse()
                    flip = not flip
                    for kind in order:
                        rows.append(bench.side(kind, workers, round_))
        finally:
            bench.stop()
        load = os.getloadavg()[0]
        header = (
            f"jax[tpu]=={opts.jax}; workers {' '.join(map(str, opts.workers))}; "
            f"{opts.cold} cold run(s) per side and worker count (a fresh pod each), "
            f"{opts.reruns} re-runs after each; median (min-max); site.yml with --tags "
            f"{opts.tags}, pod cache {opts.pod_cache or 'as the role defaults'}; "
            f"{platform.machine()}, {os.cpu_count()} CPUs; load average {load:.1f} at the end."
        )
        data = {
            "header": header,
            "options": {k: str(v) for k, v in vars(opts).items()},
            "rows": rows,
        }
        opts.results.parent.mkdir(parents=True, exist_ok=True)
        opts.results.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    text = markdown(data)
    print(text)
    if opts.markdown:
        write_markdown(opts.markdown, text)
    if not opts.no_plot:
        plot(opts.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
