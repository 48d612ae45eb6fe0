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

Controller CPU: user + sys of ansible-playbook and every process it waited for, or of the
script side's ssh clients, per run (bench/bootstrap/measure.py); site.yml's SSH ControlPersist
masters, which leave that process tree, are read apart from /proc in a control folder of the
benchmark's own. Tasks: ok + skipped of each worker in the PLAY RECAP. The section of
bench/bootstrap/RESULTS.md (bench/bootstrap/report.py) ends with the goals, each met or missed.

    bench/bootstrap/run.py --workers 1 2 4 8 --reruns 3 --cold 1 \
        --markdown bench/bootstrap/RESULTS.md
    bench/bootstrap/run.py --render-only --markdown bench/bootstrap/RESULTS.md  # table, figures

Raw rows: bench/results/bootstrap.json (with every run's log under .cache/bench/logs).
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.bootstrap.measure import (
    apt_debs,
    cgroup_cpu_files,
    container_cpu,
    containers,
    counters,
    cpu_delta,
    mux_cpu,
    mux_delta,
    playbook,
    pod_hosts,
    recap,
    slowest,
    ssh_all,
    ssh_connections,
    ssh_delta,
    tasks,
    traffic,
)
from bench.bootstrap.report import markdown, write_markdown
from bench.pod_bench import BENCH, PROJECT, ZONE, ansible_env, draw, log, ssh_key

RESULTS = REPO / "bench" / "results" / "bootstrap.json"
FIGURES = REPO / "bench" / "figures"
# Accelerator types of the emulator and their worker counts (v4: 4 chips, 8 cores per host).
TYPES = {1: "v4-8", 2: "v4-16", 4: "v4-32", 8: "v4-64", 16: "v4-128"}
# What the Ansible side runs: the roles that do what baseline.sh does, and the same choices.
ANSIBLE_TAGS = "base,python,framework,remote_shell"


def profile_env(boxes: list[str], out: Path) -> dict[str, str]:
    """What makes ansible-playbook write its CPU per task to ``out``: the benchmark's callback
    (bench/bootstrap/callback/bench_cpu.py) next to the ones ansible.cfg enables, reading the
    pod's containers' cgroups. Empty when one of them is not readable here."""
    files = cgroup_cpu_files(boxes)
    if None in files:
        return {}
    config = configparser.ConfigParser()
    config.read(REPO / "ansible.cfg")
    enabled = [
        n.strip() for n in config.get("defaults", "callbacks_enabled", fallback="").split(",")
    ]
    return {
        "ANSIBLE_CALLBACK_PLUGINS": str(REPO / "bench" / "bootstrap" / "callback"),
        "ANSIBLE_CALLBACKS_ENABLED": ",".join([n for n in enabled if n] + ["bench_cpu"]),
        "BENCH_CPU_FILES": os.pathsep.join(str(f) for f in files),
        "BENCH_CPU_OUT": str(out),
    }


class Bench:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.env = ansible_env(opts.port)
        self.env["BENCH_JAX_VERSION"] = opts.jax
        self.env["BENCH_PYTHON"] = f"python{opts.python}"
        self.stamp = time.strftime("%m%d%H%M")
        self.logs = BENCH / "logs" / self.stamp
        # SSH control sockets of the benchmark's own, one folder per pod (short: sockets have a
        # path limit), so that its ControlPersist masters can be told apart and measured.
        self.control = Path(tempfile.mkdtemp(prefix="bench-cp-"))

    def start(self) -> None:
        ssh_key()
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
        for folder in self.control.iterdir():
            self.close_masters(folder)
        shutil.rmtree(self.control, ignore_errors=True)
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
            self.pod_env(name),
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
            self.pod_env(name),
            self.logs / f"{name}-teardown.log",
        )  # fmt: skip

    def ansible_args(self, name: str) -> list[str]:
        extra = {
            # The same choices as baseline.sh: its packages, login shell, time zone, jax release.
            "tpu_base_packages_extra": ["golang", "neofetch", "zsh", "aria2"],
            "tpu_base_user_shell": "/usr/bin/zsh",
            "tpu_base_timezone": "Asia/Hong_Kong",
            "tpu_framework_version": self.opts.jax,
            # The script's Python (the demo inventory's default is 3.10, which jax 0.10 lacks).
            "tpu_python_version": self.opts.python,
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

    def pod_env(self, name: str) -> dict[str, str]:
        """The environment of the pod's ansible runs: its own folder of SSH control sockets."""
        return {**self.env, "ANSIBLE_SSH_CONTROL_PATH_DIR": str(self.control / name)}

    def close_masters(self, folder: Path) -> None:
        """End the pod's ControlPersist masters before its workers go."""
        for socket in folder.glob("*"):
            subprocess.run(
                ["ssh", "-O", "exit", "-o", f"ControlPath={socket}", "bench"],
                capture_output=True,
                check=False,
            )

    def once(
        self, kind: str, name: str, label: str, hosts: list[dict[str, Any]]
    ) -> tuple[float, dict[str, Any]]:
        """One bootstrap of the pod; wall seconds and what else was measured."""
        folder, env = self.control / name, self.pod_env(name)
        if kind == "baseline":
            seconds, cpu = ssh_all(hosts, env, self.logs / f"{name}-{label}")
            return seconds, {"cpu": round(cpu, 2)}
        profile = self.logs / f"{name}-{label}-cpu.json"
        if label == "cold":
            env = {**env, **profile_env(containers(name), profile)}
        masters = mux_cpu(folder)
        seconds, cpu, out = playbook(
            self.ansible_args(name), env, self.logs / f"{name}-{label}.log"
        )
        by_task = json.loads(profile.read_text(encoding="utf-8")) if profile.exists() else None
        return seconds, {
            **({"cpu_by_task": by_task} if by_task else {}),
            "cpu": round(cpu, 2),
            "mux_cpu": round(mux_delta(masters, mux_cpu(folder)), 2),
            "recap": recap(out),
            "tasks": tasks(out, [h["host"] for h in hosts]),
            "slowest": slowest(out),
        }

    def side(self, kind: str, workers: int, round_: int) -> dict[str, Any]:
        name = f"bench-{kind[:4]}-{workers}-{self.stamp}-{round_}"
        log(f"{kind}, {workers} worker(s), round {round_}: provision {name}")
        (self.control / name).mkdir()
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
                before, links, used = counters(boxes), ssh_connections(), container_cpu(boxes)
                seconds, info = self.once(kind, name, label, hosts)
                after = counters(boxes)
                info["worker_cpu"] = cpu_delta(used, container_cpu(boxes))
                ssh = ssh_delta(links, ssh_connections(), [h["ip"] for h in hosts])
                if attempt == 0:
                    info["apt_debs"] = apt_debs(boxes)
                runs.append(
                    {
                        "label": label,
                        "seconds": round(seconds, 2),
                        **traffic(before, after, ssh),
                        **info,
                    }
                )
                log(
                    f"  {label}: {seconds:.1f} s, pod received {sum(runs[-1]['rx']) / 1e6:.1f} MB"
                    f", controller CPU {info['cpu'] / workers:.2f} s per worker"
                    + (f", changed={info['recap']['changed']}" if "recap" in info else "")
                    + (f", tasks {sorted(set(info['tasks'].values()))}" if "tasks" in info else "")
                )
            row["runs"] = runs
            return row
        finally:
            if not self.opts.keep:
                self.close_masters(self.control / name)
                self.teardown(name)


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
    parser.add_argument("--python", default="3.11", help="the workers' Python for both sides")
    parser.add_argument("--tags", default=ANSIBLE_TAGS, help="site.yml tags for the Ansible side")
    parser.add_argument(
        "--pod-cache", choices=["on", "off"], help="tpu_framework_pod_cache (default: the role's)"
    )
    parser.add_argument("--port", type=int, default=8490, help="the benchmark emulator's port")
    parser.add_argument("--keep", action="store_true", help="keep the pods (no teardown)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--markdown", type=Path, help="update the bootstrap section of this file")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--figures", type=Path, default=FIGURES, help="folder of the figures")
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
        rows: list[dict[str, Any]] = []
        try:
            bench.start()
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
            f"jax[tpu]=={opts.jax} on Python {opts.python}; "
            f"workers {' '.join(map(str, opts.workers))}; "
            f"{opts.cold} cold run(s) per side and worker count (a fresh pod each), "
            f"{opts.reruns} re-runs after each; median (min-max); site.yml with --tags "
            f"{opts.tags}, pod cache {opts.pod_cache or 'as the role defaults'}; "
            f"{platform.machine()}, {os.cpu_count()} CPUs; load average {load:.1f} at the end."
        )
        data = {
            "header": header,
            "cpus": os.cpu_count(),
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
        draw(REPO / "bench" / "bootstrap" / "plot.py", str(opts.results), str(opts.figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
