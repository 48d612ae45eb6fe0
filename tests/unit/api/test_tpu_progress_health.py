"""Progress lines of a wait for a node's health: cloudtpu.pod.tpu_node_info with wait_healthy,
which recover.yml uses to wait out a maintenance event, writes the node's state and health at
every poll (module_utils/tpu_wait.py, tpu_progress.py), and its action plugin shows them as
tpu_node's does (plugin_utils/tpu_progress_action.py)."""

from __future__ import annotations

import importlib
import re
import threading
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from tests.module_harness import PROJECT, ZONE, run_module, serve, state

progress = importlib.import_module(
    "ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_progress"
)
tpu_wait = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_wait")
action = importlib.import_module(
    "ansible_collections.cloudtpu.pod.plugins.plugin_utils.tpu_progress_action"
)
info_action = importlib.import_module(
    "ansible_collections.cloudtpu.pod.plugins.action.tpu_node_info"
)

LINE = re.compile(r"^pod-a: (?P<state>[A-Z]+), health (?P<health>[A-Z_?]+) \((?P<s>[0-9]+) s\)$")
NODE = {
    "nodeId": "pod-a",
    "acceleratorType": "v4-8",
    "runtimeVersion": "tpu-ubuntu2204-base",
    "state": "READY",
    "health": "UNHEALTHY_MAINTENANCE",
    "networkConfig": {"network": "default", "enableExternalIps": True},
}
WAIT = {"name": "pod-a", "zones": [ZONE], "wait_healthy": True, "poll_interval": 0.1}
SET = f"projects/{PROJECT}/locations/{ZONE}/nodes/pod-a:set"


@pytest.mark.parametrize(
    ("node", "back"),
    [
        ({"state": "READY", "health": "UNHEALTHY_MAINTENANCE"}, False),
        ({"state": "READY", "health": "HEALTHY"}, True),
        ({"state": "READY"}, True),
        ({"state": "REPAIRING", "health": "HEALTHY"}, False),
        (None, False),
    ],
)
def test_a_node_is_back_when_ready_and_no_longer_under_maintenance(
    node: dict[str, Any] | None, back: bool
) -> None:
    assert tpu_wait.back_from_maintenance(node) is back


def test_the_health_detail_follows_the_state_in_the_line() -> None:
    detail = tpu_wait.health_detail({"state": "READY", "health": "UNHEALTHY_MAINTENANCE"})
    line = progress.progress_line("pod-a", "READY", 40.2, detail)
    assert line == "pod-a: READY, health UNHEALTHY_MAINTENANCE (40 s)"
    assert tpu_wait.health_detail({"state": "READY"}) == ", health ?"
    assert tpu_wait.health_detail(None) == ""


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file the modules write their progress lines to during the test (PROGRESS_ENV)."""
    path = tmp_path / "progress.log"
    monkeypatch.setenv(progress.PROGRESS_ENV, str(path))
    return path


def test_a_node_under_maintenance_is_shown_at_every_poll_until_it_is_healthy(path: Path) -> None:
    with serve(state((ZONE, [NODE]))) as api:
        # the maintenance ends a second into the wait
        timer = threading.Timer(1.0, api.admin, ("POST", SET, {"health": "HEALTHY"}))
        timer.start()
        try:
            outcome = run_module("tpu_node_info", api.auth(**WAIT, timeout=30))
        finally:
            timer.cancel()
        assert not outcome.failed, outcome.msg
        assert [n["health"] for n in outcome["nodes"]] == ["HEALTHY"]
    seen = [LINE.match(text) for text in path.read_text().splitlines()]
    assert all(seen), path.read_text()
    under = [m for m in seen if m and m["health"] == "UNHEALTHY_MAINTENANCE"]
    # a second of maintenance at 0.1 s polls: a line per poll (some slack for a slow machine)
    assert len(under) >= 4, path.read_text()
    assert all(m["state"] == "READY" for m in under)
    assert seen[-1] and seen[-1]["health"] == "HEALTHY", path.read_text()


@pytest.mark.usefixtures("path")
def test_a_maintenance_that_does_not_end_fails_naming_the_state_and_health() -> None:
    with serve(state((ZONE, [NODE]))) as api:
        outcome = run_module("tpu_node_info", api.auth(**WAIT, timeout=1))
    assert outcome.failed
    assert "pod-a" in outcome.msg and "READY, health UNHEALTHY_MAINTENANCE" in outcome.msg


def test_without_wait_healthy_it_reads_once_and_writes_nothing(path: Path) -> None:
    with serve(state((ZONE, [NODE]))) as api:
        outcome = run_module("tpu_node_info", api.auth(name="pod-a", zones=[ZONE]))
        assert not outcome.failed, outcome.msg
        assert outcome["nodes"][0]["health"] == "UNHEALTHY_MAINTENANCE"
        assert api.calls().get("GET nodes.get", 0) == 1, api.calls()
    assert not path.exists()


@pytest.mark.parametrize(
    "args", [{"zones": [ZONE]}, {"name": "pod-a"}, {"name": "pod-a", "zones": [ZONE, "x-1"]}]
)
def test_wait_healthy_needs_one_node_in_one_zone(args: dict[str, Any]) -> None:
    with serve(state((ZONE, [NODE]))) as api:
        outcome = run_module("tpu_node_info", api.auth(wait_healthy=True, **args))
        assert outcome.failed and "exactly one zone" in outcome.msg, outcome.msg
        assert api.calls() == {}, api.calls()


def make(args: dict[str, Any], transport: str = "local") -> Any:
    task = mock.MagicMock(args=args, environment=None, async_val=0, no_log=False)
    task.check_mode = False
    connection = mock.MagicMock(transport=transport)
    others = (mock.MagicMock(), mock.MagicMock(), mock.MagicMock(), None)
    return info_action.ActionModule(task, connection, *others)


@pytest.mark.parametrize(
    ("args", "transport", "shows"),
    [
        ({}, "local", False),
        ({"wait_healthy": False}, "local", False),
        ({"wait_healthy": True}, "local", True),
        ({"wait_healthy": "yes"}, "local", True),
        ({"wait_healthy": True}, "ssh", False),
    ],
)
def test_the_action_shows_lines_only_while_the_module_waits_for_health(
    args: dict[str, Any], transport: str, shows: bool
) -> None:
    assert issubclass(info_action.ActionModule, action.ProgressAction)
    assert make(args, transport).shows_progress() is shows
