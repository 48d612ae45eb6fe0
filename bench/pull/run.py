#!/usr/bin/env python3
"""Push against pull: who does the bootstrap work, the controller or every worker by itself.

For every worker count, on a fresh pod each time (the TPU API emulator with its Docker backend):
push is provision.yml, then ``ansible-playbook site.yml --tags TAGS`` from this machine over SSH;
pull is provision.yml with ``tpu_provision_bootstrap=pull`` and the same tags (each worker's
startup-script installs a pinned Ansible and runs ansible-pull of site.yml with a local
connection; provision waits until every worker has published its exit code as a guest attribute,
read through the TPU API); nowait is pull with
``tpu_provision_pull_wait=false`` (provision returns once SSH answers: the controller's own share
of a pull). Measured for each:
wall time until every worker is bootstrapped, and the controller's CPU time (user + system of
the ansible processes this script starts and waits for: resource.getrusage(RUSAGE_CHILDREN)
around them). The workers' own CPU is not the controller's and is not counted on either side.

The workers clone this repository's HEAD commit (``tpu_provision_pull_version``, which they
check) over git:// from ``git daemon`` on this machine and call the emulator's API, which
listens on every address, as host.docker.internal over plain http: not a loopback address, so
the pull runs name that host in ``tpu_provision_pull_repo_http_hosts`` and
``tpu_provision_pull_api_http_hosts`` (the token of the worker's service account, from its
metadata server, crosses the Docker network in clear). Sides alternate order between worker
counts.

    bench/pull/run.py --workers 1 2 4 --markdown bench/pull/RESULTS.md

Raw rows: bench/results/pull.json (every run's log under .cache/bench/pull-logs); figure:
bench/figures/pull-push.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.pod_bench import BENCH, PROJECT, ZONE, ansible_env, draw, log, run, ssh_key
from bench.pull.report import markdown, write_markdown

RESULTS = REPO / "bench" / "results" / "pull.json"
TYPES = {1: "v4-8", 2: "v4-16", 4: "v4-32", 8: "v4-64"}
EMULATOR_ID = "benchpull"
PLAYBOOK = ["ansible-playbook", "-i", "inventories/demo"]


def measured(argv: list[str], env: dict[str, str], logfile: Path) -> tuple[float, float]:
    """Run a command to its end; wall seconds and controller CPU seconds. Fails loudly."""
    wall, cpu, returncode, output = run(argv, env, logfile)
    if returncode != 0:
        tail = "\n".join(output.splitlines()[-30:])
        raise RuntimeError(f"{' '.join(argv[:3])} failed (rc {returncode}), {logfile}:\n{tail}")
    return wall, cpu


class Bench:
    def __init__(self, opts: argparse.Namespace) -> None:
        self.opts = opts
        self.stamp = time.strftime("%m%d%H%M")
        self.logs = BENCH / "pull-logs" / self.stamp
        self.procs: list[subprocess.Popen[str]] = []
        self.git_url = ""
        self.git_commit = ""
        self.env = ansible_env(opts.port)

    def start(self) -> None:
        ssh_key()
        served = Path(tempfile.mkdtemp(prefix="bench-pull-git-", dir=BENCH))
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(REPO), str(served / "pod.git")], check=True
        )
        self.procs.append(
            subprocess.Popen(
                [
                    "git",
                    "daemon",
                    "--export-all",
                    "--reuseaddr",
                    f"--base-path={served}",
                    "--listen=0.0.0.0",
                    f"--port={self.opts.git_port}",
                    str(served),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        self.git_url = f"git://host.docker.internal:{self.opts.git_port}/pod.git"
        self.git_commit = subprocess.run(
            ["git", "-C", str(served / "pod.git"), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        emulator_env = dict(self.env, PYTHONPATH=str(REPO), CLOUDTPU_EMULATOR_ID=EMULATOR_ID)
        if self.opts.image:
            emulator_env["CLOUDTPU_EMULATOR_IMAGE"] = self.opts.image
        emulator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tools.tpu_emulator",
                "--backend",
                "docker",
                "--host",
                "0.0.0.0",  # the workers call the API from their containers
                "--port",
                str(self.opts.port),
                "--state",
                "tools/tpu_emulator/demo-state.yml",
            ],
            cwd=REPO,
            env=emulator_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.procs.append(emulator)
        assert emulator.stdout is not None
        if not emulator.stdout.readline().startswith("http"):
            raise RuntimeError("the emulator did not start")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            proc.wait(timeout=180)

    def provision_args(self, name: str, workers: int) -> list[str]:
        values = {
            "tpu_provision_name": name,
            "tpu_provision_zone": ZONE,
            "tpu_provision_project": PROJECT,
            "tpu_provision_accelerator_type": TYPES[workers],
            "tpu_provision_ssh_user": "tpu",
            "tpu_provision_ssh_public_key_file": str(BENCH / "id_ed25519.pub"),
            "tpu_provision_known_hosts": str(BENCH / "known_hosts"),
            "tpu_provision_poll_interval": 1,
        }
        return [*PLAYBOOK, "playbooks/provision.yml", "-e", json.dumps(values)]

    def side(self, kind: str, workers: int) -> dict[str, Any]:
        name = f"bench-{kind}-{workers}-{self.stamp}"
        logs = self.logs / name
        log(f"{kind}, {workers} worker(s): {name}")
        row: dict[str, Any] = {"kind": kind, "workers": workers, "tags": self.opts.tags}
        try:
            if kind == "push":
                wall, cpu = measured(
                    self.provision_args(name, workers), self.env, logs.with_suffix(".provision.log")
                )
                site = [
                    *PLAYBOOK,
                    "site.yml",
                    "--limit",
                    f"{name}-w*",
                    "--tags",
                    self.opts.tags,
                ]
                site_wall, site_cpu = measured(site, self.env, logs.with_suffix(".site.log"))
                row.update(
                    provision_wall=wall,
                    provision_cpu=cpu,
                    wall=wall + site_wall,
                    cpu=cpu + site_cpu,
                )
            else:
                pull = {
                    "tpu_provision_bootstrap": "pull",
                    "tpu_provision_pull_repo": self.git_url,
                    "tpu_provision_pull_version": self.git_commit,
                    # git:// beyond loopback, asked for by name (the commit says what must come)
                    "tpu_provision_pull_repo_http_hosts": ["host.docker.internal"],
                    "tpu_provision_pull_tags": self.opts.tags.split(","),
                    # the worker's service account, from its metadata server, as on Google Cloud
                    "tpu_provision_pull_auth_kind": "machineaccount",
                    "tpu_provision_pull_api_endpoint": f"http://host.docker.internal:{self.opts.port}/v2",
                    # plain http beyond loopback, asked for by name (the emulator's own tokens)
                    "tpu_provision_pull_api_http_hosts": ["host.docker.internal"],
                    "tpu_provision_pull_installer": self.opts.installer,
                    # nowait: provision returns once SSH answers; the workers go on alone
                    "tpu_provision_pull_wait": kind == "pull",
                }
                argv = [*self.provision_args(name, workers), "-e", json.dumps(pull)]
                wall, cpu = measured(argv, self.env, logs.with_suffix(".provision.log"))
                row.update(wall=wall, cpu=cpu)
                if kind == "pull":
                    row["worker_seconds"] = self.worker_seconds(name)
        finally:
            values = {"tpu_teardown_confirm": True, "tpu_provision_name": name}
            values.update(tpu_provision_zone=ZONE, tpu_provision_project=PROJECT)
            values["tpu_teardown_poll_interval"] = 1
            teardown = [*PLAYBOOK, "playbooks/teardown.yml", "-e", json.dumps(values)]
            subprocess.run(teardown, cwd=REPO, env=self.env, capture_output=True, check=False)
        log(f"  wall {row['wall']:.1f} s, controller CPU {row['cpu']:.1f} s")
        return row

    def worker_seconds(self, name: str) -> list[dict[str, float]]:
        """From each worker's pull log: when Ansible was installed and when the pull ended."""
        label = f"label=cloudtpu.emulator={EMULATOR_ID}"
        names = subprocess.run(
            ["docker", "ps", "--filter", label, "--format", "{{.Names}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        found = []
        for container in sorted(c for c in names if f"-{name}-" in c):
            text = subprocess.run(
                ["docker", "exec", container, "cat", "/var/log/cloudtpu-pull.log"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            steps = {
                m[2]: float(m[1])
                for m in re.finditer(r"^pull: \[(\d+) s\] (installing|ansible-pull)", text, re.M)
            }
            end = re.search(r"^pull: finished with exit code \d+ after (\d+) s", text, re.M)
            if "installing" in steps and "ansible-pull" in steps and end:
                found.append(
                    {"install": steps["ansible-pull"] - steps["installing"], "total": float(end[1])}
                )
        return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], choices=sorted(TYPES))
    parser.add_argument("--tags", default="python,libtpu", help="site.yml tags on both sides")
    parser.add_argument(
        "--installer", default="uv", choices=["uv", "pip"], help="pull: how workers install Ansible"
    )
    parser.add_argument("--port", type=int, default=8571, help="the benchmark emulator's port")
    parser.add_argument("--git-port", type=int, default=9471, help="the git daemon's port")
    parser.add_argument(
        "--image", help="worker image (default: the emulator's, cloudtpu-pod-worker:current)"
    )
    parser.add_argument(
        "--sides", nargs="+", default=["push", "pull", "nowait"], choices=["push", "pull", "nowait"]
    )
    parser.add_argument("--add", action="store_true", help="add the rows to those of --results")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--markdown", type=Path, help="update the push-against-pull section of this file"
    )
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--render-only", action="store_true", help="redo table and figure from --results"
    )
    opts = parser.parse_args()

    if opts.render_only:
        data = json.loads(opts.results.read_text(encoding="utf-8"))
    else:
        if shutil.which("docker") is None or shutil.which("git") is None:
            print("docker and git are needed: run `make image` first", file=sys.stderr)
            return 1
        bench = Bench(opts)
        bench.start()
        rows = []
        try:
            for index, workers in enumerate(opts.workers):
                order = opts.sides if index % 2 == 0 else opts.sides[::-1]
                rows += [bench.side(kind, workers) for kind in order]
        finally:
            bench.stop()
        data = {
            "header": (
                f"site.yml --tags {opts.tags} on both sides; pull installs Ansible with "
                f"{opts.installer}; one fresh pod per side and worker count; "
                f"{platform.machine()}, {os.cpu_count()} CPUs; load average "
                f"{os.getloadavg()[0]:.1f} at the end."
            ),
            "options": {k: str(v) for k, v in vars(opts).items()},
            "rows": rows,
        }
        if opts.add and opts.results.exists():
            old = json.loads(opts.results.read_text(encoding="utf-8"))
            new = {(r["kind"], r["workers"]) for r in rows}
            keep = [r for r in old["rows"] if (r["kind"], r["workers"]) not in new]
            data = {**old, "rows": keep + rows}
        opts.results.parent.mkdir(parents=True, exist_ok=True)
        opts.results.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    text = markdown(data)
    print(text)
    if opts.markdown:
        write_markdown(opts.markdown, text)
    if not opts.no_plot:
        draw(REPO / "bench" / "pull" / "plot.py", str(opts.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
