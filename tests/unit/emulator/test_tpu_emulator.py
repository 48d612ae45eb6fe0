"""The local TPU v2 API emulator (tools/tpu_emulator): shapes, auth, faults, admin, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.tpu_emulator import Backend, Emulator, InMemoryBackend, NodeInfo, load_backend
from tools.tpu_emulator.testing import REPO, admin, call, node, serve

P = "proj"
NODES = f"/v2/projects/{P}/locations/-/nodes"


def state() -> dict[str, Any]:
    return {
        "projects": {
            P: {
                "number": "123456789012",
                "zones": {
                    "us-central2-b": {
                        "nodes": [node("big", "v4-32"), node("private", "v4-8", external_ips=False)]
                    },
                    "us-east1-d": {"nodes": [node("one", "v6e-1")]},
                },
            }
        }
    }


@pytest.fixture
def server() -> Iterator[Any]:
    with serve(state()) as srv:
        yield srv


def test_bearer_token_is_required(server: Any) -> None:
    status, body = call(server.root_url, "GET", NODES, token=None)
    assert status == 401
    assert body["error"]["status"] == "UNAUTHENTICATED"
    assert body["error"]["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"


def test_only_listed_tokens_are_accepted_when_tokens_are_set() -> None:
    strict = state()
    strict["settings"] = {"tokens": ["good"]}
    with serve(strict) as srv:
        assert call(srv.root_url, "GET", NODES, token="bad")[0] == 401
        assert call(srv.root_url, "GET", NODES, token="good")[0] == 200


def test_node_shape(server: Any) -> None:
    status, body = call(
        server.root_url, "GET", f"/v2/projects/{P}/locations/us-central2-b/nodes/big"
    )
    assert status == 200
    assert body["name"] == f"projects/{P}/locations/us-central2-b/nodes/big"
    assert body["acceleratorType"] == "v4-32"
    assert body["state"] == "READY"
    assert body["health"] == "HEALTHY"
    assert len(body["networkEndpoints"]) == 4
    for endpoint in body["networkEndpoints"]:
        assert endpoint["ipAddress"].startswith("10.")
        assert endpoint["port"] == 8470
        assert endpoint["accessConfig"]["externalIp"].startswith("198.18.")
    ips = [e["ipAddress"] for e in body["networkEndpoints"]]
    assert len(set(ips)) == 4


def test_no_external_ip_when_external_ips_are_disabled(server: Any) -> None:
    body = call(server.root_url, "GET", f"/v2/projects/{P}/locations/us-central2-b/nodes/private")[
        1
    ]
    assert body["networkEndpoints"] == [
        {"ipAddress": body["networkEndpoints"][0]["ipAddress"], "port": 8470}
    ]


def test_pages_and_tokens(server: Any) -> None:
    first = call(server.root_url, "GET", NODES + "?pageSize=2")[1]
    assert [n["name"].rsplit("/", 1)[1] for n in first["nodes"]] == ["big", "private"]
    token = first["nextPageToken"]
    second = call(server.root_url, "GET", f"{NODES}?pageSize=2&pageToken={token}")[1]
    assert [n["name"].rsplit("/", 1)[1] for n in second["nodes"]] == ["one"]
    assert "nextPageToken" not in second
    # a token belongs to its own list
    other = f"/v2/projects/{P}/locations/us-east1-d/nodes?pageToken={token}"
    assert call(server.root_url, "GET", other)[0] == 400
    assert call(server.root_url, "GET", NODES + "?pageToken=garbage")[0] == 400
    assert call(server.root_url, "GET", NODES + "?pageSize=-1")[0] == 400


def test_page_size_is_capped() -> None:
    capped = state()
    capped["settings"] = {"max_page_size": 1}
    with serve(capped) as srv:
        body = call(srv.root_url, "GET", NODES + "?pageSize=500")[1]
    assert len(body["nodes"]) == 1
    assert body["nextPageToken"]


def test_unknown_project_and_zone(server: Any) -> None:
    status, body = call(server.root_url, "GET", "/v2/projects/nope/locations/-/nodes")
    assert status == 403
    assert body["error"]["details"][0]["metadata"]["permission"] == "tpu.nodes.list"
    status, body = call(server.root_url, "GET", f"/v2/projects/{P}/locations/moon-1a/nodes")
    assert status == 404
    assert "Location" in body["error"]["message"]


def test_service_disabled_fault_has_the_google_shape(server: Any) -> None:
    admin(
        server.root_url, "POST", "faults", {"rules": [{"path": "*", "error": "SERVICE_DISABLED"}]}
    )
    status, body = call(server.root_url, "GET", NODES)
    assert status == 403
    error = body["error"]
    assert error["status"] == "PERMISSION_DENIED"
    assert "Cloud TPU API has not been used in project 123456789012" in error["message"]
    info = error["details"][0]
    assert info["reason"] == "SERVICE_DISABLED"
    assert info["metadata"]["service"] == "tpu.googleapis.com"


def test_status_sequence_then_normal(server: Any) -> None:
    admin(
        server.root_url,
        "POST",
        "faults",
        {"rules": [{"path": "*/nodes", "method": "GET", "statuses": [503, 429]}]},
    )
    assert [call(server.root_url, "GET", NODES)[0] for _ in range(3)] == [503, 429, 200]


def test_error_rule_times_and_method(server: Any) -> None:
    rules = {"rules": [{"path": "*", "method": "DELETE", "error": 500, "times": 1}]}
    admin(server.root_url, "POST", "faults", rules)
    assert call(server.root_url, "GET", NODES)[0] == 200
    target = f"/v2/projects/{P}/locations/us-east1-d/nodes/one"
    assert call(server.root_url, "DELETE", target)[0] == 500
    assert call(server.root_url, "DELETE", target)[0] == 200


def test_latency(server: Any) -> None:
    admin(server.root_url, "POST", "faults", {"rules": [{"path": "*", "latency": 0.2}]})
    start = time.monotonic()
    call(server.root_url, "GET", NODES)
    assert time.monotonic() - start >= 0.2


def test_after_skips_matching_calls_and_times_bounds_a_latency(server: Any) -> None:
    target = f"/v2/projects/{P}/locations/us-east1-d/nodes/one"
    rules = [{"path": "*/nodes/one", "method": "GET", "after": 1, "error": 403, "times": 1}]
    rules.append({"path": "*/nodes", "method": "GET", "after": 1, "latency": 0.3, "times": 1})
    admin(server.root_url, "POST", "faults", {"rules": rules})
    assert [call(server.root_url, "GET", target)[0] for _ in range(3)] == [200, 403, 200]
    took = []
    for _ in range(3):
        start = time.monotonic()
        call(server.root_url, "GET", NODES)
        took.append(time.monotonic() - start)
    assert took[1] >= 0.3 and took[0] < 0.3 and took[2] < 0.3, took


def test_a_dropped_call_is_carried_out_and_not_answered(server: Any) -> None:
    target = f"/v2/projects/{P}/locations/us-east1-d/nodes/one"
    rules = [{"path": "*/nodes/one", "method": "DELETE", "drop": True, "times": 1}]
    admin(server.root_url, "POST", "faults", {"rules": rules})
    with pytest.raises(OSError):  # the connection closes: what a client's timeout sees
        call(server.root_url, "DELETE", target)
    deadline = time.monotonic() + 10
    while call(server.root_url, "GET", target)[0] != 404:
        assert time.monotonic() < deadline, "the dropped delete was not carried out"
        time.sleep(0.05)
    stats = admin(server.root_url, "GET", "stats")
    assert stats["by_status"]["dropped"] == 1 and stats["log"][0].endswith(" dropped"), stats
    assert admin(server.root_url, "GET", "faults")["rules"][0]["times"] == 0


def test_bad_fault_plans_are_refused(server: Any) -> None:
    for plan in ({"rules": [{"paht": "*"}]}, {"rules": [{"error": "TEAPOT"}]}, {"rulez": []}):
        status, body = call(server.root_url, "POST", "/_emulator/faults", plan, token=None)
        assert status == 400, plan
        assert body["error"]["message"]


def test_unreachable_zone_is_reported_and_its_nodes_left_out(server: Any) -> None:
    admin(server.root_url, "POST", "faults", {"unreachable": {P: ["us-east1-d"]}})
    body = call(server.root_url, "GET", NODES)[1]
    assert body["unreachable"] == [f"projects/{P}/locations/us-east1-d"]
    assert {n["name"].split("/")[3] for n in body["nodes"]} == {"us-central2-b"}
    assert call(server.root_url, "GET", f"/v2/projects/{P}/locations/us-east1-d/nodes")[0] == 503


def test_stats_count_api_requests_only_and_reset(server: Any) -> None:
    call(server.root_url, "GET", NODES)
    call(server.root_url, "GET", NODES, token=None)
    admin(server.root_url, "GET", "state")
    stats = admin(server.root_url, "GET", "stats")
    assert stats["requests"] == 2
    assert stats["by_route"] == {"GET nodes.list": 2}
    assert stats["by_status"] == {"200": 1, "401": 1}
    assert admin(server.root_url, "POST", "stats/reset")["requests"] == 0


def test_preempt_and_reset(server: Any) -> None:
    path = f"projects/{P}/locations/us-central2-b/nodes/big:preempt"
    preempted = admin(server.root_url, "POST", path)
    assert preempted["state"] == "PREEMPTED"
    assert all("accessConfig" not in e for e in preempted["networkEndpoints"])
    got = call(server.root_url, "GET", f"/v2/projects/{P}/locations/us-central2-b/nodes/big")[1]
    assert got["state"] == "PREEMPTED"
    admin(server.root_url, "POST", "reset")
    got = call(server.root_url, "GET", f"/v2/projects/{P}/locations/us-central2-b/nodes/big")[1]
    assert got["state"] == "READY"


def test_state_round_trip(server: Any) -> None:
    dumped = admin(server.root_url, "GET", "state")
    assert sorted(dumped["projects"][P]["zones"]) == ["us-central2-b", "us-east1-d"]
    reloaded = Emulator(dumped)
    again = reloaded.dump()
    assert again["projects"] == dumped["projects"]


def test_unknown_state_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown top-level keys"):
        Emulator({"project": {}})


def test_locations_and_accelerator_types(server: Any) -> None:
    body = call(server.root_url, "GET", f"/v2/projects/{P}/locations")[1]
    assert [loc["locationId"] for loc in body["locations"]] == ["us-central2-b", "us-east1-d"]
    types = call(
        server.root_url,
        "GET",
        f"/v2/projects/{P}/locations/us-east1-d/acceleratorTypes?pageSize=1000",
    )[1]
    names = {t["type"] for t in types["acceleratorTypes"]}
    assert {"v4-8", "v5litepod-16", "v6e-256"} <= names
    assert "v4-12" not in names


def test_zone_accelerator_type_restrictions() -> None:
    limited = {"projects": {P: {"zones": {"us-east1-d": {"accelerator_types": ["v6e-*"]}}}}}
    with serve(limited) as srv:
        url = f"/v2/projects/{P}/locations/us-east1-d/nodes?nodeId=x"
        status, body = call(
            srv.root_url,
            "POST",
            url,
            {"acceleratorType": "v4-8", "runtimeVersion": "tpu-ubuntu2204-base"},
        )
        assert status == 400
        assert "not available in zone us-east1-d" in body["error"]["message"]
        body = {"acceleratorType": "v6e-8", "runtimeVersion": "v2-alpha-tpuv6e"}
        ok = call(srv.root_url, "POST", url, body)
        assert ok[0] == 200


@pytest.mark.parametrize("node_id", ["", "Upper", "1abc", "ends-", "a" * 64, "under_score"])
def test_invalid_node_ids(server: Any, node_id: str) -> None:
    url = f"/v2/projects/{P}/locations/us-east1-d/nodes?nodeId={node_id}"
    status, _ = call(
        server.root_url,
        "POST",
        url,
        {"acceleratorType": "v6e-8", "runtimeVersion": "v2-alpha-tpuv6e"},
    )
    assert status == 400


class RecordingBackend(InMemoryBackend):
    """Records the hook calls, as a container backend would receive them."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, int]] = []

    def create(self, node: NodeInfo) -> list:
        self.calls.append(("create", node.node_id, node.workers))
        return super().create(node)

    def delete(self, node: NodeInfo) -> None:
        self.calls.append(("delete", node.node_id, node.workers))
        super().delete(node)

    def preempt(self, node: NodeInfo) -> None:
        self.calls.append(("preempt", node.node_id, node.workers))


def test_backend_hooks_are_called_with_the_worker_count() -> None:
    backend = RecordingBackend()
    emulator = Emulator(
        {"projects": {P: {"zones": {"us-east1-d": {}}}}}, backend=backend, operation_delay=0
    )
    headers = {"authorization": "Bearer t"}
    create = f"/v2/projects/{P}/locations/us-east1-d/nodes"
    body = {"acceleratorType": "v5litepod-16", "runtimeVersion": "v2-alpha-tpuv5-lite"}
    status, op = emulator.dispatch("POST", create, {"nodeId": ["lp"]}, body, headers)
    assert status == 200
    deadline = time.monotonic() + 5
    while not emulator.operations[op["name"]]["done"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    emulator.admin_node(P, "us-east1-d", "lp", "preempt", {})
    emulator.dispatch("DELETE", f"{create}/lp", {}, None, headers)
    deadline = time.monotonic() + 5
    while len(backend.calls) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert backend.calls == [("create", "lp", 4), ("preempt", "lp", 4), ("delete", "lp", 4)]


def test_backend_by_name_or_path() -> None:
    assert isinstance(load_backend("memory"), InMemoryBackend)
    assert isinstance(load_backend("tools.tpu_emulator.backends:InMemoryBackend"), Backend)
    with pytest.raises(ValueError, match="unknown backend"):
        load_backend("nonsense")


def test_cli_prints_its_url_first_and_writes_the_url_file(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state()))
    url_file = tmp_path / "url"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tools.tpu_emulator",
            "--state",
            str(state_file),
            "--port",
            "0",
            "--url-file",
            str(url_file),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/v2")
        assert url_file.read_text().strip() == url
        status, body = call(url[: -len("/v2")], "GET", NODES)
        assert status == 200
        assert len(body["nodes"]) == 3
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == 0


def test_cli_reports_a_bad_state_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("- just\n- a list\n")
    result = subprocess.run(
        [sys.executable, "-m", "tools.tpu_emulator", "--state", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "cannot start" in result.stderr
