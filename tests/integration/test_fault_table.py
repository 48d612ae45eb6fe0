"""The fault table of provision.yml, recover.yml, teardown.yml and babysit.yml: for each step
(an API call the playbook makes, in its order), a fault injected at that step, then the same
command again, which must end in the intended state with nothing lost and nothing else touched.

Faults (fault_table_support.rule): ``sigint``, Ctrl-C (SIGINT to the run's process group) while
the emulator holds the step's call; ``403``, PERMISSION_DENIED; ``500``, an internal error;
``timeout``, the call carried out and its answer never sent (the connection closes, as a
client's timeout sees it). Each hits the step's call once. A first run that gets over it (the
client retries a GET or DELETE that failed with 500 or got no answer, and looks before sending
a create again) is judged itself; one that fails is followed by the same command again, which
is judged. Every step has a ``sigint`` row and an API error; the kinds are rotated so that each
of provision, recover and teardown meets each of them. babysit.yml meets Ctrl-C and a 403 at
its round's read of the node: its teardown's calls are teardown.yml's tasks, its recovery is
recover.yml, and a 500 or a lost answer to a read is what the client's retries get over in the
rows above.

All 21 rows run in the suite; CLOUDTPU_FAULT_TABLE=quick runs the nine of DEFAULT alone, for
the edit-test loop. One emulator (in-memory backend) for the module; before each row it goes
back to its state: pod-r preempted, pod-t and pod-b READY, and keep, which no row may touch.
SSH and bootstrap are skipped, as in test_lifecycle_playbooks.py; pod-b's worker is this
machine (local connection).
After the first run, a node that recover.yml deleted must have its spec in the journal; at the
end, the journal holds nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import forked_cli
from tests.integration.fault_table_support import (
    SPEC,
    Step,
    calls,
    clear,
    create,
    delete,
    interrupted,
    local_worker,
    node_get,
    nodes,
    operation,
    rule,
    state,
)
from tests.integration.lifecycle_support import (
    PROJECT,
    ZONE,
    EmulatorCli,
    ansible_env,
    extra_vars,
    playbook,
)
from tests.integration.test_lifecycle_playbooks import with_base

# Every playbook's steps in order (the calls it makes, read from the emulator's log), each with
# the faults it meets. Reads that only look (whether provision's node exists already, whether a
# deleted node is gone) are left out; recover.yml writes the node's spec to the journal just
# before its delete, so a Ctrl-C at the delete stops it between the two.
TABLE: dict[str, list[tuple[Step, tuple[str, ...]]]] = {
    "provision": [
        (create(), ("sigint", "403")),
        (operation("wait"), ("sigint", "timeout")),
        (node_get("get", 1, "pod-p"), ("sigint", "500")),
    ],
    "recover": [
        (node_get("read", 0, "pod-r"), ("sigint", "500")),
        (delete("pod-r"), ("sigint", "timeout")),
        (create(), ("sigint", "403")),
        (operation("wait", 1), ("sigint", "500")),
    ],
    "teardown": [
        (delete("pod-t"), ("sigint", "403", "500")),
        (operation("wait"), ("sigint", "timeout")),
    ],
    # One round (the run has ended: it reads pod-b, the run is done), then the teardown on
    # success, whose delete and wait are teardown.yml's own tasks (shared/delete_nodes.yml);
    # the recovery of a lost node is recover.yml: both are in the rows above.
    "babysit": [
        (node_get("read", 0, "pod-b"), ("sigint", "403")),
    ],
}
ROWS = [
    (book, step, kind) for book, rows in TABLE.items() for step, kinds in rows for kind in kinds
]
# The rows CLOUDTPU_FAULT_TABLE=quick keeps (about 90 CPU-seconds on this machine kind, where
# the whole table takes about 170): every playbook's Ctrl-C, and the calls that change something
# (the creates and deletes) with an API error. The others then show as skipped, saying so.
DEFAULT = {
    "provision-create-sigint",
    "provision-create-403",
    "provision-wait-timeout",
    "recover-delete-sigint",
    "recover-delete-timeout",
    "recover-create-sigint",
    "teardown-delete-sigint",
    "teardown-delete-500",
    "babysit-read-sigint",
}
WHOLE = os.environ.get("CLOUDTPU_FAULT_TABLE") != "quick"
SKIP_BOOTSTRAP = ("--skip-tags", "base,python,framework,tcmalloc,libtpu,remote_shell,nfs,storage")
COMMANDS = {
    "provision": with_base(
        tpu_provision_name="pod-p",
        tpu_provision_method="node",
        tpu_provision_accelerator_type="v4-8",
        tpu_provision_enable_external_ips=False,
        tpu_provision_labels=SPEC["labels"],
        tpu_provision_metadata=SPEC["metadata"],
    ),
    "recover": [*with_base(tpu_recover_nodes="pod-r"), *SKIP_BOOTSTRAP],
    "teardown": with_base(tpu_provision_name="pod-t", tpu_teardown_confirm=True),
}
TARGETS = {"provision": "pod-p", "recover": "pod-r", "teardown": "pod-t", "babysit": "pod-b"}
# The run's worker, with localhost for the plays on this machine.
LIMIT = ("--limit", "localhost,pod-b-w0")
# What the node's spec is made of, compared before and after.
SPEC_KEYS = ("acceleratorType", "runtimeVersion", "labels", "schedulingConfig", "networkConfig")


@pytest.fixture(scope="module")
def emulator() -> Iterator[EmulatorCli]:
    cli = EmulatorCli(backend="memory", delay=0.05).start()
    try:
        cli.admin("POST", "state", state())
        yield cli
    finally:
        forked_cli.close_all()
        cli.stop()


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The state folder (journal) and the environment every run shares: one forked-CLI server."""
    tmp = tmp_path_factory.mktemp("faults")
    return tmp / "state", {
        "ANSIBLE_LOCAL_TEMP": str(tmp / "tmp"),
        "CLOUDTPU_STATE_DIR": str(tmp / "state"),
    }


@pytest.fixture(scope="module")
def babysat(
    emulator: EmulatorCli, folders: tuple[Path, dict[str, str]], tmp_path_factory
) -> list[str]:
    """babysit.yml's command, once a detached run has ended on pod-b's worker (this machine);
    each row starts with a log folder of its own, so a fresh babysitter."""
    emulator.admin("POST", "reset")
    env = ansible_env(emulator.api_url, **folders[1])
    home = folders[0].parent / "babysat"
    worker = local_worker(home / "home")
    detached = {**worker, "cmd": "echo done", "tpu_run_detach": True}
    started = playbook("run.yml", env, *LIMIT, *extra_vars(detached))
    assert started.returncode == 0, started.tail()
    values = {**worker, "tpu_babysit_interval": 1, "tpu_babysit_teardown": "on_success"}
    return [*LIMIT, *extra_vars({**values, "tpu_babysit_log_dir": str(home / "babysit")})]


def journal(folder: Path) -> dict:
    path = folder / f"journal-{PROJECT}-{ZONE}.json"
    return json.loads(path.read_text())["nodes"] if path.exists() else {}


def row_id(row: tuple[str, Step, str]) -> str:
    book, step, kind = row
    return f"{book}-{step.name}-{kind}"


def params() -> list:
    """The rows as pytest parameters; those outside DEFAULT skipped when only the quick rows are
    asked for."""
    unknown = DEFAULT - {row_id(row) for row in ROWS}
    assert not unknown, f"DEFAULT names rows the table does not have: {sorted(unknown)}"
    later = pytest.mark.skipif(
        not WHOLE, reason="outside the quick rows (CLOUDTPU_FAULT_TABLE=quick)"
    )
    return [
        pytest.param(row, id=row_id(row), marks=() if row_id(row) in DEFAULT else later)
        for row in ROWS
    ]


@pytest.mark.parametrize("row", params())
def test_a_fault_at_a_step_is_finished_by_the_same_command_again(
    request: pytest.FixtureRequest,
    emulator: EmulatorCli,
    folders: tuple[Path, dict[str, str]],
    row: tuple[str, Step, str],
) -> None:
    book, step, kind = row
    folder, extra = folders
    command = request.getfixturevalue("babysat") if book == "babysit" else COMMANDS[book]
    if folder.exists():
        clear(folder)
    logs = folder.parent / "babysat" / "babysit"  # a fresh babysitter for every row
    shutil.rmtree(logs, ignore_errors=True)
    emulator.admin("POST", "reset")
    env = ansible_env(emulator.api_url, **extra)
    before = nodes(emulator)
    emulator.admin("POST", "faults", {"rules": [rule(step, kind)]})

    if kind == "sigint":
        first = interrupted(emulator, step, f"{book}.yml", env, command)
        assert first.returncode != 0, first.tail()
    else:
        first = playbook(f"{book}.yml", env, *command)
    # the fault hit the step's call (the interrupted one was answered after the run ended)
    answered = calls(emulator, step)
    assert len(answered) > step.after, f"{step} never came:\n{first.tail()}"
    if kind != "sigint":
        expected = {"403": "403", "500": "500", "timeout": "dropped"}[kind]
        assert answered[step.after].split()[-1] == expected, answered
    print(f"{row_id(row)}: first run rc={first.returncode} in {first.seconds:.1f} s")
    # nothing lost: a node recover.yml deleted has its spec in the journal
    after_first = nodes(emulator)
    if book == "recover" and "pod-r" not in after_first:
        kept = journal(folder).get("pod-r")
        assert kept and kept["spec"]["labels"] == SPEC["labels"], (kept, first.tail())

    emulator.admin("DELETE", "faults")
    if first.returncode == 0:  # it got over the fault itself: nothing to finish
        judged = first
    else:
        judged = playbook(f"{book}.yml", env, *command)
    assert judged.returncode == 0, judged.tail()
    end_state(book, emulator, before, folder)
    if book == "babysit":  # the babysat run completed, and its node went with it
        kept = [json.loads(path.read_text()) for path in logs.glob("*.json")]
        assert [(k["action"], k["over"]) for k in kept] == [("done", True)], kept
        assert "teardown:" in next(logs.glob("*.log")).read_text()


def end_state(book: str, emulator: EmulatorCli, before: dict, folder: Path) -> None:
    """The node the playbook is about made (READY, with its spec) or deleted (teardown, and
    babysit's teardown on success); nothing else
    touched, nothing made twice; the journal empty."""
    after = nodes(emulator)
    target = TARGETS[book]
    if book in ("teardown", "babysit"):
        assert target not in after, after.get(target)
    else:
        node = after.get(target)
        assert node is not None and node["state"] == "READY", node
        assert node["labels"] == SPEC["labels"] and node["acceleratorType"] == "v4-8", node
        assert node["metadata"]["startup-script"] == SPEC["metadata"]["startup-script"], node
        if book == "recover":
            for key in SPEC_KEYS:
                assert node.get(key) == before[target].get(key), (key, node, before[target])
    gone = {target} if book in ("teardown", "babysit") else set()
    assert sorted(after) == sorted({*before, target} - gone)
    for name in set(before) - {target}:
        assert after[name] == before[name], (name, before[name], after[name])
    assert journal(folder) == {}, journal(folder)
