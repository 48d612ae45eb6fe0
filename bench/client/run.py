"""Benchmark: the collection's own TPU API client against Google's ``google-cloud-tpu``.

Both talk to one emulated TPU API (``tools/tpu_emulator``, a subprocess) holding NODES nodes
(v4-32, 4 workers each) in one zone. Measured side by side, in one run, alternating:

* listing every node of the zone, paged: ``TpuClient.list_nodes`` of
  ``plugins/module_utils/tpu_api.py`` against ``google.cloud.tpu_v2.TpuClient.list_nodes`` (REST
  transport), in this process, client construction included; and the official client's
  messages turned into plain dicts, which is what hostvars need;
* what a module pays per task: a fresh interpreter that imports the client and reads one node
  (``get_node``), also with ``AnsibleModule`` imported first as every module does, and the
  import alone, for each library, with ``python -c pass`` for scale;
* what each library needs installed: the closure of its requirements in this environment
  (``bench/client/deps.py``), distributions, installed size, native code.

    .venv/bin/python bench/client/run.py [--nodes 1000] [--repeat 5] [--round-trips 9]
                                         [--markdown bench/client/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "collections"))

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuClient as OurClient
from google.api_core.client_options import ClientOptions
from google.cloud import tpu_v2
from google.oauth2.credentials import Credentials

from bench.client import deps
from bench.client.report import markdown
from bench.inventory.run import PROJECT, ZONE_NAMES, make_state
from bench.scale.report import replace_section
from tools.tpu_emulator.testing import TOKEN, EmulatorProcess, admin

ZONE = ZONE_NAMES[0]
MARK = "bench-client"

# What a module does with each library, in a fresh interpreter. argv: collections folder,
# API URL (with /v2), root URL, token, project, zone, node.
OURS_IMPORT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuClient"
)
OURS_GET = OURS_IMPORT + (
    "; c = TpuClient.from_params({'auth_kind': 'accesstoken', 'access_token': sys.argv[4], "
    "'base_url': sys.argv[2]}); print(c.get_node(sys.argv[5], sys.argv[6], sys.argv[7])['name'])"
)
OFFICIAL_IMPORT = (
    "import sys; from google.cloud import tpu_v2; "
    "from google.api_core.client_options import ClientOptions; "
    "from google.oauth2.credentials import Credentials"
)
OFFICIAL_GET = OFFICIAL_IMPORT + (
    "; c = tpu_v2.TpuClient(transport='rest', "
    "client_options=ClientOptions(api_endpoint=sys.argv[3]), "
    "credentials=Credentials(token=sys.argv[4])); "
    "print(c.get_node(name='projects/%s/locations/%s/nodes/%s' % tuple(sys.argv[5:8])).name)"
)
ANSIBLE_MODULE = "from ansible.module_utils.basic import AnsibleModule; "
# Appended to each: the interpreter's own peak memory (VmHWM starts again at exec, unlike the
# ru_maxrss of a child, which keeps the parent's peak from before the exec).
PEAK = (
    "; print('VmHWM', [line.split()[1] for line in open('/proc/self/status') "
    "if line.startswith('VmHWM')][0])"
)
SCRIPTS = {
    "start": "pass",
    "ours_import": OURS_IMPORT,
    "ours_get": OURS_GET,
    "official_import": OFFICIAL_IMPORT,
    "official_get": OFFICIAL_GET,
    # the same with what every module imports first
    "ours_module": ANSIBLE_MODULE + OURS_GET,
    "official_module": ANSIBLE_MODULE + OFFICIAL_GET,
}


def official_client(root_url: str) -> tpu_v2.TpuClient:
    return tpu_v2.TpuClient(
        transport="rest",
        client_options=ClientOptions(api_endpoint=root_url),
        credentials=Credentials(token=TOKEN),
    )


def list_ours(api_url: str, page_size: int) -> int:
    client = OurClient.from_params(
        {"auth_kind": "accesstoken", "access_token": TOKEN, "base_url": api_url}
    )
    nodes, _ = client.list_nodes(PROJECT, ZONE, page_size)
    return len(nodes)


def list_official(root_url: str, page_size: int, as_dicts: bool = False) -> int:
    client = official_client(root_url)
    parent = f"projects/{PROJECT}/locations/{ZONE}"
    nodes = list(client.list_nodes(request={"parent": parent, "page_size": page_size}))
    if as_dicts:
        plain = [tpu_v2.Node.to_dict(node) for node in nodes]
        return len(plain)
    return len(nodes)


def timed_call(func: Any, *args: Any) -> tuple[float, float, int]:
    """(wall s, CPU s of this process, result) of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    result = func(*args)
    return time.perf_counter() - start, time.process_time() - cpu, result


def timed_script(key: str, argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak resident MB) of one fresh interpreter running ``SCRIPTS[key]``."""
    code = SCRIPTS[key] + PEAK
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out, err = proc.communicate()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{key} failed ({proc.returncode}):\n{err.decode()}\n{code}")
    if key.endswith(("_get", "_module")) and b"/nodes/" not in out:
        raise SystemExit(f"{key} printed no node name: {out!r}")
    peak_kb = int(out.decode().rsplit("VmHWM", 1)[1].split()[0])
    return wall, usage.ru_utime + usage.ru_stime, peak_kb / 1024


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def child_env() -> dict[str, str]:
    drop = ("CLOUDTPU_", "GCP_", "GOOGLE_", "ANSIBLE_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    rss: dict[str, list[float]] = {}
    requests_of: dict[str, int] = {}

    def add(key: str, seconds: float, cpu_seconds: float) -> None:
        wall.setdefault(key, []).append(seconds)
        cpu.setdefault(key, []).append(cpu_seconds)

    work = Path(tempfile.mkdtemp(prefix="bench-client-"))
    try:
        state_file = work / "state.json"
        state_file.write_text(json.dumps(make_state(args.nodes, 1)), encoding="utf-8")
        with EmulatorProcess(state_file) as emulator:
            api, root = emulator.api_url, emulator.root_url
            listings = {
                "list_ours": (list_ours, api),
                "list_official": (list_official, root),
                "list_official_dicts": (lambda r, p: list_official(r, p, True), root),
            }
            for func, url in listings.values():  # warm up: imports, connections
                func(url, args.page_size)
            for _ in range(args.repeat):
                for key, (func, url) in listings.items():
                    admin(root, "POST", "stats/reset")
                    seconds, cpu_seconds, count = timed_call(func, url, args.page_size)
                    if count != args.nodes:
                        raise SystemExit(f"{key} listed {count} nodes, not {args.nodes}")
                    add(key, seconds, cpu_seconds)
                    requests_of[key] = admin(root, "GET", "stats")["requests"]

            argv = [str(REPO / "collections"), api, root, TOKEN, PROJECT, ZONE, "pod-00000"]
            env = child_env()
            for key in SCRIPTS:  # warm up: compiled files, page cache
                timed_script(key, argv, env)
            for _ in range(args.round_trips):
                for key in SCRIPTS:
                    seconds, cpu_seconds, peak = timed_script(key, argv, env)
                    add(key, seconds, cpu_seconds)
                    rss.setdefault(key, []).append(peak)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    dependencies = {
        "ours": deps.measure(["requests", "google-auth"]),
        "official": deps.measure(["google-cloud-tpu"]),
        "ansible": deps.measure(["ansible"]),
    }
    extra = sorted(set(dependencies["official"]["names"]) - set(dependencies["ours"]["names"]))
    return {
        "nodes": args.nodes,
        "workers": args.nodes * 4,
        "page_size": args.page_size,
        "repeat": args.repeat,
        "round_trips": args.round_trips,
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        ),
        "load_average": round(os.getloadavg()[0], 1),
        "versions": {n: deps.version(n) for n in ("google-cloud-tpu", "requests", "google-auth")},
        "wall": {k: summary(v) for k, v in wall.items()},
        "cpu": {k: summary(v) for k, v in cpu.items()},
        "rss_mb": {k: summary(v) for k, v in rss.items()},
        "requests": requests_of,
        "dependencies": dependencies,
        "extra": extra,
        "extra_bytes": dependencies["official"]["bytes"] - dependencies["ours"]["bytes"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--page-size", type=int, default=500, help="the inventory's default")
    parser.add_argument("--repeat", type=int, default=5, help="listings per client")
    parser.add_argument("--round-trips", type=int, default=9, help="fresh interpreters per row")
    parser.add_argument("--markdown", help="replace the bench-client section of this file")
    parser.add_argument("--json", default=str(REPO / "bench" / "results" / "client.json"))
    args = parser.parse_args()
    result = run(args)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = markdown(result)
    print(table)
    if args.markdown:
        replace_section(
            Path(args.markdown), table, (f"<!-- {MARK}:start -->", f"<!-- {MARK}:end -->")
        )
    pages = -(-args.nodes // args.page_size)
    # request counts are exact: each listing reads the pages once
    return 0 if all(n == pages for n in result["requests"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
