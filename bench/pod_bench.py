"""What the benchmarks on emulated pods (bench/bootstrap, bench/pull) share: their folder of keys,
facts and logs (.cache/bench), the environment of their ansible runs against a benchmark emulator,
the pods' SSH key, a command run with its wall and controller CPU time, and the venv of their own
(not the project's) that draws their figures with matplotlib.

Controller CPU is user + sys of the processes a run starts and waits for, from
getrusage(RUSAGE_CHILDREN) before and after: a benchmark starts nothing else while a run is on.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / ".cache" / "bench"
PROJECT = "demo-project"
ZONE = "us-central2-b"
MATPLOTLIB = "matplotlib==3.10.7"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def cpu_children() -> float:
    """User + sys seconds of every child this process has waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str], env: dict[str, str], logfile: Path) -> tuple[float, float, int, str]:
    """Run a command, write its output to logfile; return wall and CPU seconds, rc and output."""
    cpu, start = cpu_children(), time.monotonic()
    done = subprocess.run(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seconds, cpu = time.monotonic() - start, cpu_children() - cpu
    logfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.write_text(done.stdout, encoding="utf-8")
    return seconds, cpu, done.returncode, done.stdout


def ansible_env(port: int) -> dict[str, str]:
    """The environment ansible-playbook needs against a benchmark's emulator on ``port``."""
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


def ssh_key() -> Path:
    """The pods' SSH key (made once) and an empty known_hosts file of the benchmarks' own."""
    BENCH.mkdir(parents=True, exist_ok=True)
    key = BENCH / "id_ed25519"
    if not key.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tpu@bench", "-f", str(key)],
            check=True,
        )
    (BENCH / "known_hosts").touch()
    return key


def draw(script: Path, *args: str) -> None:
    """Run a plot script with matplotlib from a venv of the benchmarks' own (.cache/bench-venv,
    made and filled on first use)."""
    venv = REPO / ".cache" / "bench-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = subprocess.run(
        [str(python), "-c", "import matplotlib"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", MATPLOTLIB], check=True)
    subprocess.run([str(python), str(script), *args], check=True)
