"""Who takes part in the pod's one download, seen from the roles' facts
(module_utils/tpu_pod_wheels.py): the coordinator that serves, converged or not, and the hosts
that need installing."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.cloudtpu.pod.plugins.filter.hosts_with_fact import (
    FilterModule as Needing,
)
from ansible_collections.cloudtpu.pod.plugins.filter.pod_cache_serves import (
    FilterModule as Serves,
)

POD = {"hosts": ["p-w0", "p-w1", "p-w2"], "coordinator": "p-w0"}
ALL = POD["hosts"]
SEEN = "r__seen"

serves = Serves().filters()["pod_cache_serves"]
needing = Needing().filters()["hosts_with_fact"]


def facts(*converged: str, others: dict | None = None) -> dict:
    found = {name: {SEEN: {"converged": name in converged}} for name in ALL}
    return {**found, **(others or {})}


def test_the_coordinator_serves_when_two_workers_go_through_the_tasks() -> None:
    assert serves(POD, "p-w0", ALL, facts("p-w0"), SEEN) is True
    assert serves(POD, "p-w0", ALL, facts(), SEEN) is True


@pytest.mark.parametrize(
    ("host", "play", "hostvars"),
    [
        ("p-w1", ALL, facts()),  # not the coordinator
        ("p-w0", ALL, facts("p-w0", "p-w1")),  # one worker goes through the tasks
        ("p-w0", ALL, facts(*ALL)),  # all converged
        ("p-w0", ["p-w0"], facts()),  # a play of one host
        ("p-w0", ["p-w0", "p-w1"], facts("p-w0")),  # p-w2 is not in the play
    ],
)
def test_when_the_coordinator_does_not_serve(host, play, hostvars) -> None:
    assert serves(POD, host, play, hostvars, SEEN) is False


def test_a_host_without_the_fact_goes_through_the_tasks() -> None:
    hostvars = facts("p-w0", "p-w1", others={"p-w2": {}, "p-w1": {SEEN: {}}})
    assert serves(POD, "p-w0", ALL, hostvars, SEEN) is True


def test_hosts_of_other_pods_do_not_count() -> None:
    hostvars = facts("p-w1", "p-w2", others={"q-w0": {}})
    assert serves(POD, "p-w0", [*ALL, "q-w0"], hostvars, SEEN) is False


def test_the_hosts_whose_fact_is_true_in_the_plays_order() -> None:
    hostvars = {
        "a": {"r__todo": True},
        "b": {"r__todo": False},
        "c": {},
        "d": {"r__todo": True},
    }
    assert needing(["d", "c", "b", "a"], hostvars, "r__todo") == ["d", "a"]
    assert needing([], hostvars, "r__todo") == []


def test_a_bad_input_is_a_filter_error() -> None:
    with pytest.raises(AnsibleFilterError, match="hosts_with_fact"):
        needing(["x"], {}, "r__todo")
    with pytest.raises(AnsibleFilterError, match="pod_cache_serves"):
        serves({}, "p-w0", ALL, facts(), SEEN)
