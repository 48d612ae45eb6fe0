"""Progress lines of long waits: the module side (module_utils/tpu_progress.py, written by
tpu_node and tpu_queued_resource at every poll) and the controller side
(plugin_utils/tpu_progress_action.py, which shows them while the module runs)."""

from __future__ import annotations

import importlib
import re
import threading
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from tests.module_harness import ZONE, run_module, serve

progress = importlib.import_module(
    "ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_progress"
)
action = importlib.import_module(
    "ansible_collections.cloudtpu.pod.plugins.plugin_utils.tpu_progress_action"
)
node_action = importlib.import_module("ansible_collections.cloudtpu.pod.plugins.action.tpu_node")
queued_action = importlib.import_module(
    "ansible_collections.cloudtpu.pod.plugins.action.tpu_queued_resource"
)

LINE = re.compile(r"^(?P<name>[a-z0-9-]+): (?P<state>[A-Za-z_]+) \((?P<seconds>[0-9]+) s\)$")


# -- the module's side -----------------------------------------------------------------------


def test_a_line_names_the_resource_its_state_and_the_seconds() -> None:
    assert progress.progress_line("pod-a", "CREATING", 40.4) == "pod-a: CREATING (40 s)"
    assert progress.progress_line("qr", "", -1) == "qr: ? (0 s)"


def test_the_log_is_off_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    log = progress.ProgressLog()
    assert not log.on
    log.line("pod-a", "CREATING")  # nothing to write to, nothing raised


def test_the_log_appends_lines_with_the_seconds_since_it_began(tmp_path: Path) -> None:
    now = [100.0]
    path = tmp_path / "progress.log"
    log = progress.ProgressLog(str(path), clock=lambda: now[0])
    log.line("pod-a", "CREATING")
    now[0] = 112.0
    log.line("pod-a", "READY")
    assert path.read_text().splitlines() == ["pod-a: CREATING (0 s)", "pod-a: READY (12 s)"]


def test_a_file_that_cannot_be_written_turns_progress_off(tmp_path: Path) -> None:
    log = progress.ProgressLog(str(tmp_path / "missing" / "progress.log"))
    log.line("pod-a", "CREATING")
    assert not log.on


def lines(path: Path) -> list[tuple[str, str, int]]:
    found = []
    for text in path.read_text().splitlines():
        match = LINE.match(text)
        assert match, text
        found.append((match["name"], match["state"], int(match["seconds"])))
    return found


SLOW_NODE = {
    "name": "pod-a",
    "zone": ZONE,
    "accelerator_type": "v4-8",
    "runtime_version": "tpu-ubuntu2204-base",
    "poll_interval": 0.1,
    "timeout": 30,
}


def test_a_slow_create_and_delete_write_the_nodes_state_at_every_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "progress.log"
    monkeypatch.setenv(progress.PROGRESS_ENV, str(path))
    with serve(operation_delay=1.0) as api:
        created = run_module("tpu_node", api.auth(**SLOW_NODE))
        assert not created.failed, created.msg
        seen = lines(path)
        # one second of CREATING at 0.1 s polls: a line per poll (some slack for a slow machine)
        creating = [s for s in seen if s[1] == "CREATING"]
        assert len(creating) >= 5, seen
        assert seen[-1][:2] == ("pod-a", "READY"), seen
        assert all(name == "pod-a" for name, _, _ in seen)
        path.unlink()
        deleted = run_module("tpu_node", api.auth(**dict(SLOW_NODE, state="absent")))
        assert not deleted.failed, deleted.msg
        seen = lines(path)
        assert len([s for s in seen if s[1] == "DELETING"]) >= 5, seen
        assert seen[-1][:2] == ("pod-a", "gone"), seen


def test_without_the_variable_the_module_writes_nothing_and_reads_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with serve(operation_delay=0.5) as api:
        created = run_module("tpu_node", api.auth(**SLOW_NODE))
        assert not created.failed, created.msg
        # no node reads during the operation: the reads of the wait for READY only
        assert api.calls().get("GET nodes.get", 0) <= 3, api.calls()
    assert list(tmp_path.iterdir()) == []


def test_a_queued_request_writes_its_states_while_it_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "progress.log"
    monkeypatch.setenv(progress.PROGRESS_ENV, str(path))
    args = {
        "name": "qr-a",
        "zone": ZONE,
        "tier": "spot",
        "accelerator_type": "v4-8",
        "runtime_version": "tpu-ubuntu2204-base",
        "poll_interval": 0.1,
        "timeout": 30,
    }
    with serve(operation_delay=0.5) as api:
        outcome = run_module("tpu_queued_resource", api.auth(**args))
        assert not outcome.failed, outcome.msg
        seen = lines(path)
        assert seen and all(name == "qr-a" for name, _, _ in seen), seen
        assert seen[-1][1] == "ACTIVE", seen
        assert {state for _, state, _ in seen} <= set(outcome["states_seen"]), seen
        path.unlink()
        gone = run_module("tpu_queued_resource", api.auth(**dict(args, state="absent", force=True)))
        assert not gone.failed, gone.msg
        assert lines(path)[-1][:2] == ("qr-a", "gone"), lines(path)


# -- the controller's side ---------------------------------------------------------------------


def test_the_tail_shows_complete_lines_only_and_each_once(tmp_path: Path) -> None:
    path = tmp_path / "progress.log"
    shown: list[str] = []
    tail = action.ProgressTail(str(path), shown.append)
    assert tail.read_new() == 0  # no file yet
    path.write_text("pod-a: CREATING (0 s)\npod-a: CRE")
    tail.read_new()
    assert shown == ["pod-a: CREATING (0 s)"]
    with path.open("a") as stream:
        stream.write("ATING (10 s)\n\npod-a: READY (20 s)\n")
    tail.read_new()
    tail.read_new()
    assert shown == ["pod-a: CREATING (0 s)", "pod-a: CREATING (10 s)", "pod-a: READY (20 s)"]


def test_follow_reads_until_stopped_and_once_more(tmp_path: Path) -> None:
    path = tmp_path / "progress.log"
    path.write_text("")
    shown: list[str] = []
    tail = action.ProgressTail(str(path), shown.append)
    stop = threading.Event()
    thread = threading.Thread(target=tail.follow, args=(stop, 0.01))
    thread.start()
    with path.open("a") as stream:
        stream.write("pod-a: CREATING (0 s)\n")
    stop.set()
    thread.join(5)
    assert shown == ["pod-a: CREATING (0 s)"]


def make(args: dict[str, Any], transport: str = "local", **task: Any) -> Any:
    fields = {"async_val": 0, "no_log": False, "check_mode": False}
    fields.update(task)
    connection = mock.MagicMock(transport=transport)
    connection._shell.env_prefix = lambda **kw: " ".join(f"{k}={v}" for k, v in kw.items())
    plugin = node_action.ActionModule(
        mock.MagicMock(args=args, environment=None, **fields),
        connection,
        mock.MagicMock(),
        mock.MagicMock(),
        mock.MagicMock(),
        None,
    )
    return plugin


@pytest.mark.parametrize(
    ("args", "transport", "task", "shows"),
    [
        ({}, "local", {}, True),
        ({"wait": "yes"}, "local", {}, True),
        ({"wait": False}, "local", {}, False),
        ({}, "ssh", {}, False),
        ({}, "local", {"async_val": 60}, False),
        ({}, "local", {"no_log": True}, False),
        ({}, "local", {"check_mode": True}, False),
    ],
    ids=["local", "wait-yes", "no-wait", "remote", "async", "no_log", "check"],
)
def test_progress_is_shown_only_for_a_waiting_task_on_the_controller(
    args: dict[str, Any], transport: str, task: dict[str, Any], shows: bool
) -> None:
    assert make(args, transport, **task).shows_progress() is shows


def test_both_modules_have_the_action() -> None:
    assert issubclass(node_action.ActionModule, action.ProgressAction)
    assert issubclass(queued_action.ActionModule, action.ProgressAction)


def test_the_module_gets_a_file_and_its_lines_are_shown_while_it_runs() -> None:
    plugin = make({"name": "pod-a"})
    shown: list[str] = []
    seen_while_running: list[str] = []
    paths: list[Path] = []

    def module(**kwargs: Any) -> dict[str, Any]:
        environment = plugin._compute_environment_string()
        path = environment.split(f"{progress.PROGRESS_ENV}=", 1)[1]
        paths.append(Path(path))
        assert paths[0].stat().st_mode & 0o077 == 0  # a private file
        log = progress.ProgressLog(path, clock=lambda: 0.0)
        log.line("pod-a", "CREATING")
        for _ in range(200):  # the line is shown before the module returns
            if shown:
                break
            threading.Event().wait(0.02)
        seen_while_running.extend(shown)
        log.line("pod-a", "READY")
        return {"changed": True, "node": {"state": "READY"}}

    plugin._execute_module = module
    with mock.patch.object(action.Display, "display", lambda self, text: shown.append(text)):
        result = plugin.run(task_vars={})
    assert result["changed"] is True and result["node"] == {"state": "READY"}
    assert seen_while_running == ["pod-a: CREATING (0 s)"]
    assert shown == ["pod-a: CREATING (0 s)", "pod-a: READY (0 s)"]
    assert plugin._progress_path == "" and not paths[0].exists()
    assert progress.PROGRESS_ENV not in plugin._compute_environment_string()


def test_a_remote_module_runs_as_it_would_alone() -> None:
    plugin = make({"name": "pod-a"}, transport="ssh")
    plugin._execute_module = mock.MagicMock(return_value={"changed": False})
    assert plugin.run(task_vars={})["changed"] is False
    assert progress.PROGRESS_ENV not in plugin._compute_environment_string()


def test_an_async_task_runs_as_the_normal_action_runs_it() -> None:
    plugin = make({"name": "pod-a"}, async_val=60)
    plugin._connection.has_native_async = False
    plugin._execute_module = mock.MagicMock(return_value={"ansible_job_id": "j1", "started": 1})
    result = plugin.run(task_vars={})
    assert result["ansible_job_id"] == "j1" and not result.get("failed"), result
    assert plugin._execute_module.call_args.kwargs["wrap_async"]


def test_a_failed_read_for_a_progress_line_is_a_line_and_the_wait_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api_module = importlib.import_module(
        "ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api"
    )
    node_task = importlib.import_module(
        "ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_node_task"
    )
    path = tmp_path / "progress.log"
    monkeypatch.setenv(progress.PROGRESS_ENV, str(path))
    module = mock.MagicMock(params=dict(SLOW_NODE, project="p", state="present", wait=True))
    for field in node_task.SPEC_FIELDS:
        module.params.setdefault(field, None)
    client = mock.MagicMock()
    client.find_node.side_effect = api_module.TpuApiError("no answer", reason="UNAVAILABLE")
    task = node_task.NodeTask(module, client)
    task.show_node({"name": "op", "done": False})
    task.show_node({"name": "op", "done": True})  # done: the wait for the node shows it
    assert path.read_text().splitlines() == ["pod-a: ?, not read: UNAVAILABLE (0 s)"]
