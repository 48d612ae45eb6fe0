"""Benchmark: the tpu_vm inventory against a "list then describe each node" client.

Both read the same emulated TPU API holding NODES nodes (v4-32, 4 workers each) spread over
ZONES zones. Measured, side by side, in one run:

* ``ansible-inventory --list`` cold (empty inventory cache), with the repository's ansible.cfg;
* ``ansible-inventory --list`` again, answered from the inventory cache;
* a client that lists the nodes and then GETs each one, which is what scripts built on
  ``gcloud compute tpus tpu-vm list`` + ``describe`` do. It runs in-process over one
  keep-alive HTTP connection, so it is a lower bound: real scripts also pay a gcloud start per
  describe.

Each is repeated ``--repeat`` times; the median is reported, with min and max.

    .venv/bin/python bench/inventory/run.py [--nodes 1000] [--zones 10] [--repeat 5]
                                            [--markdown bench/inventory/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.tpu_emulator.testing import TOKEN, EmulatorProcess, admin

PROJECT = "bench-project"
MARK_START = "<!-- bench-inventory:start -->"
MARK_END = "<!-- bench-inventory:end -->"
ZONE_NAMES = [
    "us-central1-a",
    "us-central1-b",
    "us-central2-b",
    "us-east1-c",
    "us-east1-d",
    "us-east5-a",
    "us-west4-a",
    "europe-west4-a",
    "europe-west4-b",
    "asia-northeast1-b",
    "asia-east1-c",
    "southamerica-west1-a",
]


def make_state(nodes: int, zones: int) -> dict[str, Any]:
    names = (ZONE_NAMES * (zones // len(ZONE_NAMES) + 1))[:zones]
    names = [f"{z}" if i < len(ZONE_NAMES) else f"{z}-{i}" for i, z in enumerate(names)]
    per_zone: dict[str, list[dict[str, Any]]] = {z: [] for z in names}
    for index in range(nodes):
        zone = names[index % zones]
        per_zone[zone].append(
            {
                "nodeId": f"pod-{index:05d}",
                "acceleratorType": "v4-32",
                "runtimeVersion": "tpu-ubuntu2204-base",
                "networkConfig": {"network": "default", "enableExternalIps": True},
                "labels": {"team": f"team-{index % 7}"},
            }
        )
    return {
        "settings": {"operation_delay": 0},
        "projects": {PROJECT: {"zones": {z: {"nodes": n} for z, n in per_zone.items()}}},
    }


def ansible_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "CLOUDTPU_"))}
    env.update(
        {
            "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
            "ANSIBLE_NOCOLOR": "1",
            "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    return env


def run_inventory(source: str, env: dict[str, str]) -> tuple[float, float, dict[str, Any]]:
    """(wall seconds, CPU seconds, parsed --list JSON) of one ``ansible-inventory --list``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-inventory"), "-i", source, "--list"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        raise SystemExit(f"ansible-inventory failed:\n{result.stderr}")
    return elapsed, cpu, json.loads(result.stdout)


def static_copy(listed: dict[str, Any], path: Path) -> None:
    """The same hosts, variables and groups as a static YAML inventory (a floor for --list)."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"__ansible_unsafe"}:
                return value["__ansible_unsafe"]
            return {k: plain(v) for k, v in value.items()}
        return value

    hostvars = plain(listed["_meta"]["hostvars"])
    groups = {
        name: {"hosts": {host: None for host in entry.get("hosts", [])}}
        for name, entry in listed.items()
        if name not in ("_meta", "all", "ungrouped") and entry.get("hosts")
    }
    inventory = {"all": {"hosts": hostvars, "children": groups}}
    path.write_text(yaml.safe_dump(inventory, default_flow_style=False), encoding="utf-8")


def plugin_parse(source: Path) -> float:
    """CPU seconds of the plugin alone: one in-process InventoryManager parse."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader

    start = time.process_time()
    InventoryManager(loader=DataLoader(), sources=[str(source)], cache=True)
    return time.process_time() - start


def list_then_describe(api_url: str, page_size: int) -> tuple[float, float, int]:
    """One list (all pages) plus one GET per node: (wall seconds, CPU seconds, nodes)."""
    start = time.perf_counter()
    cpu_start = time.process_time()
    with requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {TOKEN}"
        names: list[str] = []
        token = ""
        while True:
            params: dict[str, Any] = {"pageSize": page_size}
            if token:
                params["pageToken"] = token
            page = session.get(
                f"{api_url}/projects/{PROJECT}/locations/-/nodes", params=params, timeout=60
            )
            page.raise_for_status()
            body = page.json()
            names += [n["name"] for n in body.get("nodes", [])]
            token = body.get("nextPageToken", "")
            if not token:
                break
        for name in names:
            session.get(f"{api_url}/{name}", timeout=60).raise_for_status()
    return time.perf_counter() - start, time.process_time() - cpu_start, len(names)


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--zones", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--page-size", type=int, default=500, help="the plugin's default")
    parser.add_argument(
        "--latency", type=float, default=0.05, help="seconds added per request in the second pair"
    )
    parser.add_argument("--markdown", help="replace the bench-inventory section of this file")
    parser.add_argument("--json", default=str(REPO / "bench" / "results" / "inventory.json"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-inventory-"))
    try:
        state_file = work / "state.json"
        state_file.write_text(json.dumps(make_state(args.nodes, args.zones)), encoding="utf-8")
        with EmulatorProcess(state_file) as emulator:
            cache_dir = work / "cache"
            source = work / "bench.tpu_vm.yml"
            source.write_text(
                yaml.safe_dump(
                    {
                        "plugin": "cloudtpu.pod.tpu_vm",
                        "projects": [PROJECT],
                        "base_url": emulator.api_url,
                        "auth_kind": "accesstoken",
                        "access_token": TOKEN,
                        "page_size": args.page_size,
                        "cache": True,
                        "cache_plugin": "ansible.builtin.jsonfile",
                        "cache_connection": str(cache_dir),
                        "cache_timeout": 3600,
                    }
                ),
                encoding="utf-8",
            )
            env = ansible_env()
            os.environ["ANSIBLE_CONFIG"] = env["ANSIBLE_CONFIG"]
            from ansible.plugins.loader import init_plugin_loader

            init_plugin_loader([str(REPO / "collections")])
            wall: dict[str, list[float]] = {k: [] for k in ROWS}
            cpu: dict[str, list[float]] = {k: [] for k in ROWS}
            counts: dict[str, int] = {}
            hosts = nodes = 0
            static = work / "static.yml"

            def record(key: str, seconds: float, cpu_seconds: float) -> None:
                wall[key].append(seconds)
                cpu[key].append(cpu_seconds)
                counts[key] = admin(emulator.root_url, "GET", "stats")["requests"]
                admin(emulator.root_url, "POST", "stats/reset")

            for _ in range(args.repeat):
                shutil.rmtree(cache_dir, ignore_errors=True)
                admin(emulator.root_url, "POST", "stats/reset")
                seconds, cpu_seconds, listed = run_inventory(str(source), env)
                hosts = len(listed["_meta"]["hostvars"])
                record("cold", seconds, cpu_seconds)

                seconds, cpu_seconds, cached_list = run_inventory(str(source), env)
                if cached_list != listed:
                    raise SystemExit("the cached run printed another inventory than the cold run")
                record("cached", seconds, cpu_seconds)

                seconds, cpu_seconds, nodes = list_then_describe(emulator.api_url, args.page_size)
                record("describe", seconds, cpu_seconds)

                shutil.rmtree(cache_dir, ignore_errors=True)
                cold_parse = plugin_parse(source)
                record("parse_cold", cold_parse, cold_parse)
                cached_parse = plugin_parse(source)
                record("parse_cached", cached_parse, cached_parse)

                seconds, cpu_seconds, _ = run_inventory("localhost,", env)
                record("empty", seconds, cpu_seconds)

                # the same two clients with a round trip per request, as against the real API
                rules = {"rules": [{"path": "*", "latency": args.latency}]}
                admin(emulator.root_url, "POST", "faults", rules)
                shutil.rmtree(cache_dir, ignore_errors=True)
                seconds, cpu_seconds, _ = run_inventory(str(source), env)
                record("cold_latency", seconds, cpu_seconds)
                seconds, cpu_seconds, _ = list_then_describe(emulator.api_url, args.page_size)
                record("describe_latency", seconds, cpu_seconds)
                admin(emulator.root_url, "DELETE", "faults")

            # slow (tens of seconds for 4000 hosts), so once: the same hosts as a static file
            static_copy(listed, static)
            seconds, cpu_seconds, _ = run_inventory(str(static), env)
            record("static", seconds, cpu_seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    pages = -(-args.nodes // min(args.page_size, 1000))
    result = {
        "nodes": args.nodes,
        "zones": args.zones,
        "workers": hosts,
        "page_size": args.page_size,
        "pages": pages,
        "repeat": args.repeat,
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "load_average": round(os.getloadavg()[0], 1),
        "latency_ms": round(args.latency * 1000),
        "wall": {k: summary(v) for k, v in wall.items()},
        "cpu": {k: summary(v) for k, v in cpu.items()},
        "requests": counts,
        "described_nodes": nodes,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = markdown(result)
    print(table)
    if args.markdown:
        replace_section(Path(args.markdown), table)
    # the request counts are exact; times depend on the machine and are reported, not gated
    return 0 if counts["cold"] == pages and counts["cached"] == 0 else 1


ROWS = {
    "cold": "`ansible-inventory --list`, cold cache",
    "cached": "`ansible-inventory --list`, cached",
    "describe": "list, then GET each node",
    "cold_latency": "`ansible-inventory --list`, cold cache, +{lat} ms per request",
    "describe_latency": "list, then GET each node, +{lat} ms per request",
    "parse_cold": "plugin alone, cold (in-process InventoryManager)",
    "parse_cached": "plugin alone, cached (in-process InventoryManager)",
    "empty": "for scale: `ansible-inventory -i localhost, --list`",
    "static": "for scale: the same hosts and vars as a static YAML file",
}


def markdown(result: dict[str, Any]) -> str:
    wall, cpu, req = result["wall"], result["cpu"], result["requests"]

    def cell(table: dict[str, Any], key: str) -> str:
        v = table[key]
        return f"{v['median']:.2f} s ({v['min']:.2f}-{v['max']:.2f})"

    lines = [
        f"{result['nodes']} nodes x 4 workers ({result['workers']} hosts) over "
        f"{result['zones']} zones, page size {result['page_size']}; median (min-max) of "
        f"{result['repeat']} runs; {result['machine']}; load average {result['load_average']} "
        "at the end.",
        "",
        "| client | wall time | CPU time | API requests |",
        "|---|---|---|---|",
    ]
    for key, label in ROWS.items():
        wall_cell = cell(wall, key) if not key.startswith("parse") else "-"
        requests_cell = str(req.get(key, "-")) if key not in ("static", "empty") else "-"
        label = label.format(lat=result["latency_ms"])
        lines.append(f"| {label} | {wall_cell} | {cell(cpu, key)} | {requests_cell} |")

    def med(key: str) -> float:
        return wall[key]["median"]

    lines += [
        "",
        f"Ratios of medians: requests, list-then-describe / inventory = "
        f"{req['describe'] / max(req['cold'], 1):.0f}x ({req['describe']} against "
        f"{req['cold']}); wall time, list-then-describe / cold inventory = "
        f"{med('describe') / med('cold'):.2f}x with no added latency and "
        f"{med('describe_latency') / med('cold_latency'):.1f}x with {result['latency_ms']} ms "
        f"per request; cold / cached inventory = {med('cold') / med('cached'):.2f}x; static "
        f"YAML file / cold inventory = {med('static') / med('cold'):.1f}x.",
    ]
    return "\n".join(lines)


def replace_section(path: Path, table: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = f"{MARK_START}\n{table}\n{MARK_END}"
    if MARK_START in text and MARK_END in text:
        head, rest = text.split(MARK_START, 1)
        tail = rest.split(MARK_END, 1)[1]
        text = head + block + tail
    else:
        text = text.rstrip() + ("\n\n" if text else "") + block + "\n"
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
