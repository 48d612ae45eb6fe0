"""playbooks/firewall.yml's checks and rule set: module_utils/tpu_firewall.py and the filter
firewall_plan over it. The playbook's own runs are tests/integration/test_firewall.py."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter import firewall_plan as plan_plugin
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_firewall import (
    firewall_plan,
    firewall_rules,
    ranges_problem,
    settings_problem,
)

BASE = {
    "source_ranges": ["203.0.113.7/32"],
    "allow_world": False,
    "target_tags": ["tpu"],
    "network": "default",
    "name_prefix": "cloudtpu-pod",
    "ssh": True,
    "ssh_port": 22,
    "mosh": True,
    "mosh_ports": "60000-61000",
    "priority": 1000,
    "state": "present",
}


def rule(name: str, protocol: str, ports: str, ranges: list[str], what: str) -> dict:
    return {
        "name": name,
        "description": f"{what} to TPU workers (cloudtpu.pod playbooks/firewall.yml)",
        "network": {"selfLink": "global/networks/default"},
        "direction": "INGRESS",
        "priority": 1000,
        "allowed": [{"ip_protocol": protocol, "ports": [ports]}],
        "source_ranges": ranges,
        "target_tags": ["tpu"],
    }


def test_registered():
    assert plan_plugin.FilterModule().filters() == {"firewall_plan": firewall_plan}


def test_one_rule_per_service_and_address_family():
    plan = firewall_plan({**BASE, "source_ranges": ["203.0.113.0/24", "2001:db8::/48"]})
    assert plan["ranges_problem"] == "" and plan["problem"] == ""
    assert plan["rules"] == [
        rule("cloudtpu-pod-ssh", "tcp", "22", ["203.0.113.0/24"], "SSH"),
        rule("cloudtpu-pod-ssh-v6", "tcp", "22", ["2001:db8::/48"], "SSH"),
        rule("cloudtpu-pod-mosh", "udp", "60000-61000", ["203.0.113.0/24"], "mosh"),
        rule("cloudtpu-pod-mosh-v6", "udp", "60000-61000", ["2001:db8::/48"], "mosh"),
    ]


@pytest.mark.parametrize(
    ("ssh", "mosh", "names"), [("yes", "no", ["x-ssh"]), (False, "on", ["x-mosh"])]
)
def test_a_switch_off_makes_no_rule_for_its_service(ssh, mosh, names):
    rules = firewall_rules({**BASE, "name_prefix": "x", "ssh": ssh, "mosh": mosh})
    assert [r["name"] for r in rules] == names


def test_unset_and_string_ranges_say_what_is_allowed():
    assert ranges_problem(None, False) == (
        "tpu_firewall_source_ranges is not set; it is required: a non-empty list of CIDRs that "
        'may reach the workers, for example ["203.0.113.7/32"] (your address).'
    )
    assert ranges_problem("10.0.0.0/8", False) == (
        'tpu_firewall_source_ranges is "10.0.0.0/8": not a list; allowed: a list of CIDRs such '
        'as ["203.0.113.7/32"] (JSON with -e).'
    )


def test_the_world_only_when_asked_by_name():
    problem = ranges_problem(["0.0.0.0/0"], False)
    assert "tpu_firewall_source_ranges" in problem and "tpu_firewall_allow_world" in problem
    assert ranges_problem(["0.0.0.0/0"], "true") == ""
    plan = firewall_plan({**BASE, "source_ranges": ["0.0.0.0/0"]})
    assert plan["ranges_problem"] == problem and plan["rules"] == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"target_tags": []}, "tpu_firewall_target_tags is '[]'; it is required"),
        ({"target_tags": "tpu"}, "tpu_firewall_target_tags is 'tpu'"),
        ({"target_tags": ["tpu\n"]}, "tpu_firewall_target_tags is '['tpu\\n']'"),
        ({"network": "default\n"}, "tpu_firewall_network is 'default\n'; it must be a VPC"),
        ({"name_prefix": "Lab"}, "tpu_firewall_name_prefix is 'Lab'; it must be lower case"),
        ({"ssh_port": 0}, "tpu_firewall_ssh_port is '0'; it must be a port from 1 to 65535."),
        ({"ssh_port": "22a"}, "tpu_firewall_ssh_port is '22a'"),
        ({"mosh_ports": "61000-60000"}, "tpu_firewall_mosh_ports is '61000-60000'; it must be"),
        ({"mosh_ports": 60000}, "tpu_firewall_mosh_ports is '60000'"),
        ({"priority": 70000}, "tpu_firewall_priority is '70000'; it must be 0 to 65535."),
        ({"state": "gone"}, "tpu_firewall_state is 'gone'; it must be present or absent."),
        ({"ssh": "no", "mosh": False}, "tpu_firewall_ssh and tpu_firewall_mosh are both false"),
    ],
)
def test_each_refused_setting_is_named_with_its_value(change, words):
    problem = settings_problem({**BASE, **change})
    assert problem.startswith("Refusing to build the firewall rules: ") and words in problem
    assert firewall_plan({**BASE, **change})["rules"] == []


def test_several_refusals_in_one_message_in_order():
    problem = settings_problem({**BASE, "state": "x", "network": "A", "priority": 0})
    assert problem == (
        "Refusing to build the firewall rules: tpu_firewall_network is 'A'; it must be a VPC "
        "network name. tpu_firewall_state is 'x'; it must be present or absent."
    )
