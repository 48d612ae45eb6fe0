"""Whether tpu_nfs_owner has the same uid across the nfs role's share
(module_utils/tpu_nfs_status.py owner_uid_problem, the nfs_uid_problem filter over hostvars)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter.nfs_uid_problem import nfs_uid_problem
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_nfs_status import (
    owner_uid_problem,
)

TAIL = (
    ". NFS matches users by uid, so the share would not be writable there. Give the user the "
    "same uid on every worker, or set tpu_nfs_squash: all_squash."
)


def worker(uid: str | None = "1000", converged: bool = False, notes: dict | None = None) -> dict:
    """A worker's hostvars: its lookup (when it went through its tasks) and its record."""
    found: dict = {"tpu_nfs__seen": {"converged": converged, "notes": notes or {}}}
    if uid is not None:
        found["ansible_facts"] = {"getent_passwd": {"tpu": ["x", uid, uid, "", "/home/tpu"]}}
    return found


def problem(host: str, hostvars: dict, server: str = "pod-w0", play=None) -> str:
    uid = hostvars[host]["ansible_facts"]["getent_passwd"]["tpu"][1]
    return nfs_uid_problem(uid, "tpu", host, server, hostvars, play or list(hostvars))


def test_the_same_uid_everywhere_is_no_problem() -> None:
    pod = {"pod-w0": worker(), "pod-w1": worker()}
    assert problem("pod-w0", pod) == problem("pod-w1", pod) == ""


def test_a_client_compares_with_the_servers_lookup() -> None:
    pod = {"pod-w0": worker("1001"), "pod-w1": worker()}
    assert problem("pod-w1", pod) == (
        "tpu_nfs_owner 'tpu' has uid 1000 on pod-w1 but 1001 on the server pod-w0" + TAIL
    )


def test_a_client_compares_with_the_notes_of_a_server_on_the_fast_path() -> None:
    server = worker(None, converged=True, notes={"owner_uid": "1002", "server": "pod-w0"})
    pod = {"pod-w0": server, "pod-w1": worker()}
    assert "has uid 1000 on pod-w1 but 1002 on the server pod-w0." in problem("pod-w1", pod)
    server["tpu_nfs__seen"]["notes"]["owner_uid"] = "1000"
    assert problem("pod-w1", pod) == ""


def test_a_client_whose_server_is_not_in_the_play_is_not_compared() -> None:
    pod = {"pod-w0": worker("1001"), "pod-w1": worker()}
    assert problem("pod-w1", pod, play=["pod-w1"]) == ""


def test_the_server_names_the_workers_whose_records_hold_another_uid() -> None:
    pod = {
        "pod-w0": worker(),
        "pod-w1": worker(None, True, {"server": "pod-w0", "owner_uid": "1001"}),
        "pod-w2": worker(None, True, {"server": "pod-w0", "owner_uid": "1000"}),
        "pod-w3": worker(None, True, {"server": "other", "owner_uid": "7"}),
        "pod-w4": worker(None, True, {"server": "pod-w0", "owner_uid": "1003"}),
        "pod-w5": {},
    }
    assert problem("pod-w0", pod) == (
        "tpu_nfs_owner 'tpu' has uid 1000 on the server pod-w0 but another one on pod-w1, "
        "pod-w4 (their records of the last complete run)" + TAIL
    )
    assert problem("pod-w0", pod, play=["pod-w0", "pod-w2", "pod-w4"]).count("pod-w4 (") == 1


def test_a_server_without_its_lookup_is_an_error() -> None:
    pod = {"pod-w0": worker(None), "pod-w1": worker()}
    with pytest.raises(AnsibleFilterError, match="nfs_uid_problem"):
        problem("pod-w1", pod)


def test_the_sentence_without_hostvars() -> None:
    assert owner_uid_problem("tpu", "1000", "pod-w1", "pod-w0") == ""
    assert owner_uid_problem("tpu", 1000, "pod-w1", "pod-w0", server_uid="1000") == ""
    got = owner_uid_problem("tpu", "1000", "pod-w0", "pod-w0", others=["pod-w2"])
    assert got.startswith("tpu_nfs_owner 'tpu' has uid 1000 on the server pod-w0 but another")
