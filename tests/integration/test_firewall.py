"""playbooks/firewall.yml: what it refuses, and the exact rules it would send.

The Compute Engine API cannot be reached from the test machines, so no rule is created here:
these tests run the play in dry-run mode (tpu_firewall_dry_run: true), which builds the rule
set as the fact tpu_firewall_rules, prints it and stops before the google.cloud call. They
check the refusals and that rule set, field by field, as the play would send it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.playbook_helpers import error_text, playbook_env, run_playbook

PLAYBOOK = "playbooks/firewall.yml"
API_TASK = "Create, update or delete the firewall rules"
BASE = {"tpu_firewall_source_ranges": ["203.0.113.7/32"], "tpu_firewall_target_tags": ["tpu"]}
# The ranges the play must refuse unless tpu_firewall_allow_world is set.
WORLD_V4 = "0.0.0.0/0"
WORLD_V6 = "::/0"
# One range broader than an IPv4 /8 is open to much of the world: half the internet here.
HALF_V4 = "128.0.0.0/1"


def play(tmp_path: Path, variables: dict, *, json_output: bool = False):
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(variables))
    # JSON on stdout; naming it as the only enabled callback keeps ansible.cfg's timing
    # callbacks from writing into the same stream.
    json_callback = {
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.json",
    }
    env = playbook_env(**(json_callback if json_output else {}))
    return run_playbook(PLAYBOOK, "localhost,", "-e", f"@{vars_file}", env=env)


def dry_run_rules(tmp_path: Path, variables: dict) -> tuple[list[dict], list[str]]:
    """(tpu_firewall_rules as shown by the play, names of the tasks that ran)."""
    result = play(tmp_path, {**variables, "tpu_firewall_dry_run": True}, json_output=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads(result.stdout)
    tasks = report["plays"][0]["tasks"]
    shown = [t["hosts"]["localhost"] for t in tasks if t["task"]["name"] == "Show the rule set"]
    assert len(shown) == 1, [t["task"]["name"] for t in tasks]
    return shown[0]["tpu_firewall_rules"], [t["task"]["name"] for t in tasks]


def rule(name: str, protocol: str, ports: str, ranges: list[str], **over: object) -> dict:
    what = "SSH" if protocol == "tcp" else "mosh"
    base = {
        "name": name,
        "description": f"{what} to TPU workers (cloudtpu.pod playbooks/firewall.yml)",
        "network": {"selfLink": "global/networks/default"},
        "direction": "INGRESS",
        "priority": 1000,
        "allowed": [{"ip_protocol": protocol, "ports": [ports]}],
        "source_ranges": ranges,
        "target_tags": ["tpu"],
    }
    return {**base, **over}


def test_default_rule_set(tmp_path: Path):
    rules, ran = dry_run_rules(tmp_path, BASE)
    assert rules == [
        rule("cloudtpu-pod-ssh", "tcp", "22", ["203.0.113.7/32"]),
        rule("cloudtpu-pod-mosh", "udp", "60000-61000", ["203.0.113.7/32"]),
    ], json.dumps(rules, indent=2)
    assert API_TASK not in ran, f"dry run went on to the API: {ran}"


def test_ipv4_and_ipv6_ranges_go_to_separate_rules(tmp_path: Path):
    ranges = ["203.0.113.0/24", "2001:db8:1::/48", "198.51.100.7"]
    rules, _ = dry_run_rules(tmp_path, {**BASE, "tpu_firewall_source_ranges": ranges})
    v4, v6 = ["203.0.113.0/24", "198.51.100.7"], ["2001:db8:1::/48"]
    assert rules == [
        rule("cloudtpu-pod-ssh", "tcp", "22", v4),
        rule("cloudtpu-pod-ssh-v6", "tcp", "22", v6),
        rule("cloudtpu-pod-mosh", "udp", "60000-61000", v4),
        rule("cloudtpu-pod-mosh-v6", "udp", "60000-61000", v6),
    ], json.dumps(rules, indent=2)


def test_named_network_tags_ports_and_priority(tmp_path: Path):
    variables = {
        **BASE,
        "tpu_firewall_network": "research-vpc",
        "tpu_firewall_target_tags": ["tpu-pod", "trc"],
        "tpu_firewall_name_prefix": "lab",
        "tpu_firewall_ssh_port": 2222,
        "tpu_firewall_mosh_ports": "60000-60100",
        "tpu_firewall_priority": 900,
    }
    rules, _ = dry_run_rules(tmp_path, variables)
    over = {
        "network": {"selfLink": "global/networks/research-vpc"},
        "target_tags": ["tpu-pod", "trc"],
        "priority": 900,
    }
    assert rules == [
        rule("lab-ssh", "tcp", "2222", ["203.0.113.7/32"], **over),
        rule("lab-mosh", "udp", "60000-60100", ["203.0.113.7/32"], **over),
    ], json.dumps(rules, indent=2)


def test_ssh_only(tmp_path: Path):
    rules, _ = dry_run_rules(tmp_path, {**BASE, "tpu_firewall_mosh": False})
    assert [r["name"] for r in rules] == ["cloudtpu-pod-ssh"], json.dumps(rules, indent=2)


@pytest.mark.parametrize("world", [WORLD_V4, WORLD_V6, HALF_V4])
def test_the_whole_internet_only_when_asked_by_name(tmp_path: Path, world: str):
    variables = {**BASE, "tpu_firewall_source_ranges": [world], "tpu_firewall_allow_world": True}
    rules, _ = dry_run_rules(tmp_path, variables)
    assert [r["source_ranges"] for r in rules] == [[world], [world]], json.dumps(rules, indent=2)


REFUSED = [
    # id, variables (None: drop the key), the variable the error names, the value it shows
    (
        "world-v4",
        {"tpu_firewall_source_ranges": [WORLD_V4]},
        "tpu_firewall_source_ranges",
        WORLD_V4,
    ),
    (
        "world-v6",
        {"tpu_firewall_source_ranges": [WORLD_V6]},
        "tpu_firewall_source_ranges",
        WORLD_V6,
    ),
    (
        "half-v4",
        {"tpu_firewall_source_ranges": ["203.0.113.7/32", HALF_V4]},
        "tpu_firewall_source_ranges",
        HALF_V4,
    ),
    (
        "world-among-others",
        {"tpu_firewall_source_ranges": ["203.0.113.7/32", "10.1.0.0/0"]},
        "tpu_firewall_source_ranges",
        "10.1.0.0/0",
    ),
    (
        "world-flag-misspelt",
        {"tpu_firewall_source_ranges": [WORLD_V4], "tpu_firewall_allow_all": True},
        "tpu_firewall_allow_world",
        WORLD_V4,
    ),
    (
        "missing-ranges",
        {"tpu_firewall_source_ranges": None},
        "tpu_firewall_source_ranges",
        "not set",
    ),
    ("empty-ranges", {"tpu_firewall_source_ranges": []}, "tpu_firewall_source_ranges", "[]"),
    (
        "ranges-not-a-list",
        {"tpu_firewall_source_ranges": "203.0.113.7/32"},
        "tpu_firewall_source_ranges",
        "203.0.113.7/32",
    ),
    (
        "prefix-33",
        {"tpu_firewall_source_ranges": ["10.0.0.0/33"]},
        "tpu_firewall_source_ranges",
        "/33",
    ),
    (
        "octet-300",
        {"tpu_firewall_source_ranges": ["300.1.1.1"]},
        "tpu_firewall_source_ranges",
        "300",
    ),
    (
        "hostname",
        {"tpu_firewall_source_ranges": ["home.example"]},
        "tpu_firewall_source_ranges",
        "home.example",
    ),
    (
        "ports-reversed",
        {"tpu_firewall_mosh_ports": "61000-60000"},
        "tpu_firewall_mosh_ports",
        "61000-60000",
    ),
    (
        "ports-too-high",
        {"tpu_firewall_mosh_ports": "60000-70000"},
        "tpu_firewall_mosh_ports",
        "60000-70000",
    ),
    ("ports-not-a-range", {"tpu_firewall_mosh_ports": "mosh"}, "tpu_firewall_mosh_ports", "mosh"),
    ("ssh-port-0", {"tpu_firewall_ssh_port": 0}, "tpu_firewall_ssh_port", "'0'"),
    ("no-tags", {"tpu_firewall_target_tags": None}, "tpu_firewall_target_tags", "[]"),
    (
        "bad-tag",
        {"tpu_firewall_target_tags": ["TPU_workers"]},
        "tpu_firewall_target_tags",
        "TPU_workers",
    ),
    ("bad-network", {"tpu_firewall_network": "my network"}, "tpu_firewall_network", "my network"),
    ("priority", {"tpu_firewall_priority": 70000}, "tpu_firewall_priority", "70000"),
    (
        "nothing-to-open",
        {"tpu_firewall_ssh": False, "tpu_firewall_mosh": False},
        "tpu_firewall_mosh",
        "false",
    ),
]


@pytest.mark.parametrize(
    ("variables", "named", "value"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED]
)
def test_refused_before_any_rule_is_built(tmp_path: Path, variables, named, value):
    merged = {**BASE, "tpu_firewall_dry_run": True, **variables}
    merged = {k: v for k, v in merged.items() if v is not None}
    result = play(tmp_path, merged)
    out = result.stdout + result.stderr
    error = error_text(out)
    assert result.returncode != 0, out
    assert named in error, f"the error does not name {named}:\n{error or out}"
    assert value in error, f"the error does not show {value!r}:\n{error or out}"
    assert "TASK [Build the rule set]" not in out, out
