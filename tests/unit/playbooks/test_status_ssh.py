"""The status_ssh_option filter (which -o value ssh would take from Ansible's argument strings)
and status_node_groups (the inventory groups of node IDs)."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.status_node_groups import (
    FilterModule as NodesFilter,
)
from ansible_collections.cloudtpu.pod.plugins.filter.status_node_groups import (
    status_node_groups,
)
from ansible_collections.cloudtpu.pod.plugins.filter.status_ssh_option import (
    FilterModule,
    status_ssh_option,
)

KH = "UserKnownHostsFile"


@pytest.mark.parametrize(
    ("strings", "value"),
    [
        (["-o UserKnownHostsFile=/tmp/kh"], "/tmp/kh"),
        (["-oUserKnownHostsFile=/tmp/kh"], "/tmp/kh"),
        (['-o "UserKnownHostsFile /tmp/my kh"'], "/tmp/my kh"),
        (["-o userknownhostsfile=/tmp/kh"], "/tmp/kh"),
        (["-o ControlMaster=auto -o UserKnownHostsFile=/a -o UserKnownHostsFile=/b"], "/a"),
        (["", None, "-o UserKnownHostsFile=/second"], "/second"),
        (["-o UserKnownHostsFile=/first", "-o UserKnownHostsFile=/second"], "/first"),
        (["-o ControlMaster=auto -o StrictHostKeyChecking=accept-new"], ""),
        (["-o", "-o UserKnownHostsFile"], ""),
        ([], ""),
        ("-o UserKnownHostsFile=/one/string", "/one/string"),
        # an unbalanced quote: ssh would never see that option name
        (["-o 'UserKnownHostsFile=/unbalanced"], ""),
    ],
)
def test_known_hosts_file(strings, value):
    assert status_ssh_option(strings, KH) == value


def test_other_options_and_registration():
    args = ["-o ProxyJump=bastion -o IdentitiesOnly=yes"]
    assert status_ssh_option(args, "proxyjump") == "bastion"
    assert status_ssh_option(args, "IdentitiesOnly") == "yes"
    assert FilterModule().filters()["status_ssh_option"] is status_ssh_option


@pytest.mark.parametrize(
    ("nodes", "groups"),
    [
        ("pod-a", ["tpu_node_pod_a"]),
        ("pod-a, pod-b,", ["tpu_node_pod_a", "tpu_node_pod_b"]),
        (["pod.x", "y"], ["tpu_node_pod_x", "tpu_node_y"]),
        ([], []),
        (None, []),
    ],
)
def test_node_groups(nodes, groups):
    assert status_node_groups(nodes) == groups
    assert NodesFilter().filters()["status_node_groups"] is status_node_groups
