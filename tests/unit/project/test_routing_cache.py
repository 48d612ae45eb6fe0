"""tools/payload_cache.py: the routing table of a large runtime.yml kept between processes.

Each case runs fresh Python processes with -S, so that only this copy of the module is at work
(make setup installs another into site-packages), then puts the toolchain's site-packages on the
path and asks Ansible's collection loader for a routing table, as it does at the start of every
command. HOME is a temporary folder. A process reports the table and how many times YAML was
parsed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "tools" / "payload_cache.py"
SITE = sysconfig.get_path("purelib")
BUILTIN = Path(SITE) / "ansible" / "config" / "ansible_builtin_runtime.yml"
CHILD = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("payload_cache", sys.argv[1])
cache = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cache)
sys.path.append(sys.argv[3])
import yaml
parsed = []
real = yaml.load
yaml.load = lambda *a, **k: parsed.append(1) or real(*a, **k)
from ansible.utils.collection_loader import _collection_finder
with open(sys.argv[2], "rb") as source:
    table = _collection_finder._meta_yml_to_dict(source.read(), ("ns.coll", "runtime.yml"))
print(json.dumps({"table": table, "parsed": len(parsed)}))
"""


def read(home: Path, runtime: Path, **env: str) -> dict:
    environ = {**os.environ, "HOME": str(home), **env}
    done = subprocess.run(
        [sys.executable, "-S", "-c", CHILD, str(MODULE), str(runtime), SITE],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def entries(home: Path) -> list[Path]:
    folder = home / ".cache" / "cloudtpu-payload-pyc"
    return sorted(folder.glob("routing-*.json")) if folder.is_dir() else []


def big_runtime(folder: Path, target: str = "other.coll.copy") -> Path:
    """A runtime.yml past ROUTING_MIN: redirects, deprecations, and scalars YAML would type."""
    lines = ["requires_ansible: '>=2.16'", "plugin_routing:", "  modules:"]
    for number in range(400):
        lines += [
            f"    mod{number}:",
            f"      redirect: {target}{number}",
            "      deprecation:",
            "        removal_version: 2.0",
            "        warning_text: 'yes: on, 0x1F, 2024-01-01 ~ null'",
        ]
    path = folder / "runtime.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_large_table_is_parsed_once_then_read_back_the_same(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    runtime = big_runtime(tmp_path)
    first = read(home, runtime)
    assert first["parsed"] == 1
    # BaseLoader's strings stay strings: no float, bool, int, date or None
    module = first["table"]["plugin_routing"]["modules"]["mod7"]
    assert module["deprecation"]["removal_version"] == "2.0"
    assert module["redirect"] == "other.coll.copy7"
    (entry,) = entries(home)
    assert entry.stat().st_mode & 0o777 == 0o600
    second = read(home, runtime)
    assert second == {"table": first["table"], "parsed": 0}
    # a changed file is parsed anew and kept beside the first
    changed = read(home, big_runtime(tmp_path, "third.coll.copy"))
    assert changed["parsed"] == 1
    assert changed["table"]["plugin_routing"]["modules"]["mod7"]["redirect"] == "third.coll.copy7"
    assert len(entries(home)) == 2


def test_ansible_cores_own_table_comes_back_equal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    off = read(home, BUILTIN, CLOUDTPU_PAYLOAD_CACHE="0")
    assert entries(home) == []
    assert read(home, BUILTIN)["table"] == off["table"]
    kept = read(home, BUILTIN)
    assert kept == {"table": off["table"], "parsed": 0}
    assert len(off["table"]["plugin_routing"]["modules"]) > 1000


@pytest.mark.parametrize("kind", ["small", "off", "broken"])
def test_small_tables_the_off_switch_and_broken_entries(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"CLOUDTPU_PAYLOAD_CACHE": "0"} if kind == "off" else {}
    runtime = big_runtime(tmp_path)
    if kind == "small":
        runtime.write_text("plugin_routing:\n  modules:\n    a:\n      redirect: b.c.d\n")
    if kind == "broken":
        read(home, runtime)
        (entry,) = entries(home)
        entry.write_text('["not a table"]')
    assert read(home, runtime, **env)["parsed"] == 1
    if kind == "broken":
        assert read(home, runtime)["parsed"] == 0
    else:
        assert entries(home) == []
