"""What bench/bootstrap/run.py measures around each run: the controller's CPU, the pod's traffic,
the script side's parallel ssh and what ansible-playbook's recap says.

Controller CPU is user + sys of the processes a run starts and waits for (ansible-playbook and
every child it waited for; the script side's ssh clients), from getrusage(RUSAGE_CHILDREN) before
and after (``bench/pod_bench.py``, which runs the commands): the benchmark starts nothing else
while a run is on. SSH ControlPersist masters leave
that process tree (they are daemons), so their CPU is read from /proc, per master, in a control
folder of the benchmark's own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from bench.pod_bench import BENCH, REPO, cpu_children, run

BASELINE = REPO / "bench" / "bootstrap" / "baseline.sh"
RECAP = re.compile(r"^(\S+)[ \t]*:[ \t]+((?:\w+=\d+[ \t]*)+)$", re.M)
TICK = os.sysconf("SC_CLK_TCK")


def mux_cpu(folder: Path) -> dict[int, float]:
    """User + sys seconds of each live ssh ControlPersist master whose socket is in folder."""
    # Ansible names the sockets after the folder's real path.
    prefix = f"ssh: {folder.resolve()}/".encode()
    found: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes()
            if not (title.startswith(prefix) and b"[mux]" in title):
                continue
            # Fields after the command name in parentheses: utime and stime are the 12th and 13th.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / TICK
    return found


def mux_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU the masters used between two readings (a master gone in between is not counted)."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def playbook(args: list[str], env: dict[str, str], logfile: Path) -> tuple[float, float, str]:
    """ansible-playbook against the demo inventory; wall seconds, controller CPU and output."""
    seconds, cpu, rc, out = run(["ansible-playbook", "-i", "inventories/demo", *args], env, logfile)
    if rc != 0:
        tail = "\n".join(out.splitlines()[-30:])
        raise RuntimeError(f"ansible-playbook {' '.join(args)} failed (rc {rc}):\n{tail}")
    return seconds, cpu, out


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


CGROUP_CPU = (
    "/sys/fs/cgroup/cpuacct/docker/{}/cpuacct.usage",
    "/sys/fs/cgroup/system.slice/docker-{}.scope/cpu.stat",
)


def cgroup_cpu_files(names: list[str]) -> list[Path | None]:
    """Each container's cgroup CPU file on this machine (cgroup v1's cpuacct or v2's
    cpu.stat); None where neither is readable."""
    ids = subprocess.run(
        ["docker", "inspect", "--format", "{{.Id}}", *names],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found: list[Path | None] = []
    for ident in ids:
        paths = [Path(pattern.format(ident)) for pattern in CGROUP_CPU]
        found.append(next((path for path in paths if os.access(path, os.R_OK)), None))
    return found


def read_cgroup_cpu(path: Path | None) -> float | None:
    """CPU seconds in one cgroup CPU file (v2: usage_usec; v1: nanoseconds); None if unreadable."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    if text.startswith("usage_usec"):
        return int(text.split()[1]) / 1e6
    return int(text.split()[0]) / 1e9


def container_cpu(names: list[str]) -> list[float | None]:
    """CPU seconds each container has used so far; None where its cgroup is not readable."""
    return [read_cgroup_cpu(path) for path in cgroup_cpu_files(names)]


def cpu_delta(before: list[float | None], after: list[float | None]) -> list[float] | None:
    """Per container CPU seconds between two readings (None when one was not readable)."""
    if None in before or None in after:
        return None
    return [round(a - b, 2) for a, b in zip(after, before, strict=True)]  # type: ignore[operator]


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


SS_PEER = re.compile(r"^\S+\s+\S+\s+(\S+)\s+(\S+):22\s*$")
SS_BYTES = re.compile(r"\bbytes_(acked|received):(\d+)")


def parse_ss(text: str) -> dict[str, tuple[str, int, int]]:
    """`ss -tinH` of established SSH connections: {local address: (peer, sent, received)};
    sent is what the peer acknowledged, both count TCP payload only."""
    found: dict[str, tuple[str, int, int]] = {}
    current: tuple[str, str] | None = None
    for line in text.splitlines():
        peer = SS_PEER.match(line)
        if peer:
            current = (peer.group(1), peer.group(2).strip("[]"))
            continue
        counts = dict(SS_BYTES.findall(line))
        if current and counts:
            found[current[0]] = (
                current[1],
                int(counts.get("acked", 0)),
                int(counts.get("received", 0)),
            )
            current = None
    return found


def ssh_connections() -> dict[str, tuple[str, int, int]]:
    """The controller's SSH connections now (ControlPersist masters hold one per worker)."""
    out = subprocess.run(
        ["ss", "-tinH", "state", "established", "( dport = :22 )"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return parse_ss(out)


def ssh_delta(
    before: dict[str, tuple[str, int, int]], after: dict[str, tuple[str, int, int]], ips: list[str]
) -> tuple[list[int], list[int]]:
    """Bytes the controller sent to and received from each worker between two readings, over
    connections open at the second one (a connection that closed in between is not counted)."""
    sent, received = [0] * len(ips), [0] * len(ips)
    for local, (peer, out, into) in after.items():
        if peer not in ips:
            continue
        _, out0, into0 = before.get(local, (peer, 0, 0))
        sent[ips.index(peer)] += out - out0
        received[ips.index(peer)] += into - into0
    return sent, received


def traffic(
    before: list[tuple[int, int]],
    after: list[tuple[int, int]],
    ssh: tuple[list[int], list[int]] | None = None,
) -> dict[str, Any]:
    """Per worker what eth0 received (rx) and sent (tx), and what the pod took from the
    indexes: all it received, less what the coordinator sent its peers (the caches' traffic),
    less the controller's SSH bytes (Ansible's modules and their replies, when measured)."""
    rx = [a[0] - b[0] for a, b in zip(after, before, strict=True)]
    tx = [a[1] - b[1] for a, b in zip(after, before, strict=True)]
    ssh_in, ssh_out = ssh if ssh else ([0] * len(rx), [0] * len(rx))
    # The coordinator's traffic to its peers: all it sent, less its SSH replies to the controller.
    served = tx[0] - ssh_out[0] if len(tx) > 1 else 0
    result = {"rx": rx, "tx": tx, "pod_rx": sum(rx), "from_indexes": sum(rx) - served - sum(ssh_in)}
    if ssh:
        result["ssh_to_workers"] = ssh_in
    return result


def ssh_all(hosts: list[dict[str, Any]], env: dict[str, str], logdir: Path) -> tuple[float, float]:
    """baseline.sh on every worker at once: one ssh per worker, as gcloud --worker=all does.
    Returns wall seconds and the CPU seconds of the ssh clients."""
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
            f"BENCH_JAX_VERSION={env['BENCH_JAX_VERSION']} BENCH_PYTHON={env['BENCH_PYTHON']}"
            " bash -s",
        ]
        done = subprocess.run(argv, input=script, capture_output=True, check=False)
        (logdir / f"{host['host']}.log").write_bytes(done.stdout + done.stderr)
        results[host["host"]] = done.returncode

    logdir.mkdir(parents=True, exist_ok=True)
    threads = [threading.Thread(target=one, args=(h,)) for h in hosts]
    cpu, start = cpu_children(), time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds, cpu = time.monotonic() - start, cpu_children() - cpu
    failed = {h: rc for h, rc in results.items() if rc != 0}
    if failed:
        raise RuntimeError(f"baseline.sh failed on {failed}; logs in {logdir}")
    return seconds, cpu


def recap_hosts(out: str) -> dict[str, dict[str, int]]:
    """Each host's counts from the PLAY RECAP (ok, changed, unreachable, failed, skipped, ...)."""
    start = out.rfind("PLAY RECAP")
    hosts: dict[str, dict[str, int]] = {}
    for match in RECAP.finditer(out, start if start >= 0 else 0):
        counts = dict(pair.split("=") for pair in match[2].split())
        hosts[match[1]] = {key: int(value) for key, value in counts.items()}
    return hosts


def recap(out: str) -> dict[str, int]:
    """The recap's counts summed over hosts."""
    totals = {"ok": 0, "changed": 0, "failed": 0, "unreachable": 0, "skipped": 0}
    for counts in recap_hosts(out).values():
        for key in totals:
            totals[key] += counts.get(key, 0)
    return totals


def tasks(out: str, hosts: list[str]) -> dict[str, int]:
    """Tasks each of these hosts ran, ok + skipped, from the recap."""
    counts = recap_hosts(out)
    return {h: counts[h].get("ok", 0) + counts[h].get("skipped", 0) for h in hosts if h in counts}


def slowest(out: str, count: int = 8) -> list[str]:
    """The slowest tasks from the profile_tasks summary at the end of a run."""
    lines = [ln for ln in out.splitlines() if re.search(r" -+ \d+\.\d+s$", ln)]
    return lines[:count]
