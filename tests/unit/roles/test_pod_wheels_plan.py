"""Who takes part in the pod's one download of wheels (module_utils/tpu_pod_wheels.py)."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.pod_wheels_plan import pod_wheels_plan

POD = {
    "hosts": ["p-w0", "p-w1", "p-w2"],
    "ips": ["10.0.0.2", "10.0.0.3", ""],
    "coordinator": "p-w0",
    "coordinator_ip": "10.0.0.2",
}
ALL = POD["hosts"]
DIR = "/var/cache/cloudtpu/wheels"


def plan(host="p-w1", play=ALL, needing=ALL, mgr="systemd", pod=POD):
    return pod_wheels_plan(pod, host, play, needing, mgr, DIR, 8479, "cloudtpu-wheels.service")


def test_a_worker_of_a_pod_that_needs_the_wheels_takes_part() -> None:
    found = plan()
    assert found["used"] and not found["is_coordinator"]
    assert found["coordinator"] == "p-w0" and found["address"] == "10.0.0.2"
    assert found["url"] == "http://10.0.0.2:8479"
    assert found["members"] == ["10.0.0.2", "10.0.0.3"]


def test_the_coordinator_serves_even_when_it_needs_nothing() -> None:
    found = plan("p-w0", needing=["p-w1", "p-w2"])
    assert found["used"] and found["is_coordinator"]


@pytest.mark.parametrize(
    ("host", "play", "needing", "mgr", "pod"),
    [
        ("p-w1", ALL, ["p-w1"], "systemd", POD),  # one install: from the index
        ("p-w1", ["p-w1", "p-w2"], ALL, "systemd", POD),  # the coordinator is not in the play
        ("p-w1", ALL, ALL, "sysvinit", POD),  # no systemd on the coordinator
        ("p-w1", ALL, ALL, "systemd", {**POD, "coordinator_ip": ""}),  # no address
        ("p-w2", ALL, ["p-w0", "p-w1"], "systemd", POD),  # this worker needs nothing
        ("p-w1", ALL, ["p-w1", "other-w0"], "systemd", POD),  # another pod's host
    ],
)
def test_who_does_not_take_part(host, play, needing, mgr, pod) -> None:
    assert plan(host, play, needing, mgr, pod)["used"] is False


def test_the_server_answers_the_pods_addresses_only_for_a_bounded_time() -> None:
    serve = plan()["serve"]
    assert serve[:3] == ["systemd-run", "--unit=cloudtpu-wheels.service", "--collect"]
    assert "--property=DynamicUser=yes" in serve and "--property=RuntimeMaxSec=900" in serve
    bind = serve.index("--bind")
    assert serve[bind - 2 : bind + 4] == [
        f"{DIR}/wheel_cache.py",
        "serve",
        "--bind",
        "10.0.0.2",
        "--port",
        "8479",
    ]
    assert serve[-1] == f"{DIR}/wheels"
    assert [a for a in serve if a.startswith("--allow=")] == [
        "--allow=10.0.0.2",
        "--allow=10.0.0.3",
    ]


def test_an_ipv6_coordinator_is_bracketed_in_the_url() -> None:
    pod = {**POD, "ips": ["fd00::2", "fd00::3", ""], "coordinator_ip": "fd00::2"}
    assert plan(pod=pod)["url"] == "http://[fd00::2]:8479"


def test_a_bad_pod_fails_with_the_filters_name() -> None:
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError, match="pod_wheels_plan"):
        plan(pod={"hosts": []})
