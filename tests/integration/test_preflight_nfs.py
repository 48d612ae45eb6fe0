"""nfs refuses what only the pod can tell (the server, the owner, the workers' addresses) before
it changes anything, naming the variable and the value. The bad values of single variables are
in the bad-input table (test_bad_input_roles_network.py).

The role runs in check mode on the control machine as a one-worker pod that serves itself
(tpu_nfs_server_host: localhost), so that the checks after the server lookup are reached too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.playbook_helpers import (
    LOCAL_PYTHON,
    error_text,
    run_playbook,
)
from tests.role_runner import run_role

# The value the role must refuse as a worker address (not an address anything binds to).
ANY_ADDRESS = "0.0.0.0"
SELF_SERVED = {**LOCAL_PYTHON, "tpu_nfs_server_host": "localhost", "tpu_node": "p1"}


CASES = [
    # id, variables, hostvars (None: self-served), variable to name, value to show
    ("missing-owner", {"tpu_nfs_owner": "nosuchuser-x9"}, None, "tpu_nfs_owner", "nosuchuser-x9"),
    (
        "unknown-server",
        {"tpu_nfs_server_host": "ghost-w0"},
        LOCAL_PYTHON,
        "tpu_nfs_server_host",
        "ghost-w0",
    ),
]


@pytest.mark.parametrize(
    ("extra", "hostvars", "variable", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_refused(extra, hostvars, variable, value):
    result = run_role("nfs", extra, hostvars=SELF_SERVED if hostvars is None else hostvars)
    out = result.stdout + result.stderr
    error = error_text(out)
    assert result.returncode != 0, f"accepted {extra}:\n{out}"
    assert variable in error, f"the error does not name {variable}:\n{error or out}"
    assert value in error, f"the error does not show the value {value!r}:\n{error or out}"
    # Refused before the first change: no package task ran.
    assert "Install the NFS client tools" not in out, out
    assert "Install nfs-ganesha" not in out and "Install the kernel NFS server" not in out, out


@pytest.mark.parametrize("address", [ANY_ADDRESS, "*", "::"])
def test_worker_address_that_opens_the_share_to_everyone_is_refused(tmp_path: Path, address):
    """The exports come from the inventory: a worker whose address is a wildcard is refused."""
    inventory = {
        "tpu": {
            "hosts": {
                "localhost": {
                    "ansible_connection": "local",
                    "tpu_node": "p1",
                    "tpu_worker_id": 0,
                    "tpu_internal_ip": "10.128.0.2",
                    **LOCAL_PYTHON,
                },
                "p1-w1": {"tpu_node": "p1", "tpu_worker_id": 1, "tpu_internal_ip": address},
                "p2-w0": {"tpu_node": "p2", "tpu_worker_id": 0, "tpu_internal_ip": "10.9.9.9"},
            }
        },
        "tpu_coordinator": {"hosts": {"localhost": {}, "p2-w0": {}}},
    }
    (tmp_path / "inventory.yml").write_text(json.dumps(inventory))
    play = [
        {
            "name": "nfs on the coordinator only",
            "hosts": "localhost",
            "gather_facts": True,
            "roles": [{"role": "cloudtpu.pod.nfs"}],
        }
    ]
    (tmp_path / "play.yml").write_text(json.dumps(play))
    result = run_playbook(tmp_path / "play.yml", tmp_path / "inventory.yml", "--check")
    out = result.stdout + result.stderr
    error = error_text(out)
    assert result.returncode != 0, f"accepted a worker address {address!r}:\n{out}"
    assert "tpu_internal_ip" in error and "tpu_nfs_export_cidrs" in error, error or out
    assert f"'{address}'" in error, error or out
    # The other pod's worker is not part of this pod's exports.
    assert "10.9.9.9" not in error, error
    assert "Install the NFS client tools" not in out, out
