"""Why playbooks/babysit.yml refuses to start (plugins/filter/babysit_request_problem.py,
plugins/filter/babysit_pick_problem.py): the first check that fails speaks, in the order of the
playbook's asserts; none fails, nothing is said."""

from __future__ import annotations

import pytest
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_pick_problem import (
    babysit_pick_problem,
)
from ansible_collections.cloudtpu.pod.plugins.filter.babysit_request_problem import (
    CHECK_MODE,
    NO_SYNC_SOURCE,
    NO_WORKER,
    babysit_request_problem,
)

RUN = "20261123T160000Z-bbbb"
OK = {"ok": True, "message": "ok"}


def request(**changes: object) -> str:
    args: dict = {
        "options": OK,
        "restart": dict(OK, sync=False),
        "sync": dict(OK, mode=""),
        "check_mode": False,
        "workers": ["pod-w0"],
    }
    args.update(changes)
    return babysit_request_problem(**args)


def test_a_sound_request_is_not_refused():
    assert request() == ""
    assert request(restart=dict(OK, sync=True), sync=dict(OK, mode="src")) == ""


@pytest.mark.parametrize("name", ["options", "restart", "sync"])
def test_a_failed_check_gives_its_own_message(name):
    assert request(**{name: {"ok": False, "message": f"bad {name}"}}) == f"bad {name}"


def test_a_failed_check_without_a_message_still_refuses():
    # babysit.yml's assert passes on an empty sentence: a refusal is never empty
    assert request(sync={"ok": False}) == "the request was refused"
    assert babysit_pick_problem({"ok": False}, False, ["pod-w0"]) == "no run was picked"


def test_the_options_speak_before_run_and_sync():
    bad = {"ok": False, "message": "first"}
    got = request(options=bad, restart={"ok": False, "message": "second"}, check_mode=True)
    assert got == "first"


def test_a_restart_that_syncs_needs_a_source():
    assert request(restart=dict(OK, sync=True)) == NO_SYNC_SOURCE
    assert NO_SYNC_SOURCE == (
        "tpu_run_sync=true, but tpu_sync_src and tpu_sync_repo are both unset or empty: "
        "give -e tpu_sync_src=./myproject or -e tpu_sync_repo=URL"
    )


def test_check_mode_is_refused_when_the_variables_are_sound():
    assert request(check_mode=True) == CHECK_MODE
    # a sync with a source is sound: check mode is what is wrong
    assert request(restart=dict(OK, sync=True), sync=dict(OK, mode="src"), check_mode=True) == (
        CHECK_MODE
    )
    assert CHECK_MODE == "it recreates nodes and starts runs; --check cannot show what it would do"


def test_an_inventory_without_workers_is_refused_last():
    assert request(workers=[]) == NO_WORKER
    assert request(workers=[], check_mode=True) == CHECK_MODE
    assert NO_WORKER.startswith("no TPU worker in the inventory: the run's node may be lost")
    assert NO_WORKER.endswith("recover it with playbooks/recover.yml and restart the run")


def pick(**changes: object) -> dict:
    return {**OK, "run_id": RUN, "script": "", "hosts": ["pod-w0", "pod-w1"], **changes}


def test_a_sound_pick_is_not_refused():
    assert babysit_pick_problem(pick(), False, ["pod-w1", "pod-w0"]) == ""
    assert babysit_pick_problem(pick(script="train.sh"), True, ["pod-w0", "pod-w1"]) == ""


def test_no_run_gives_the_picks_message():
    got = babysit_pick_problem({"ok": False, "message": "no detached run"}, False, ["pod-w0"])
    assert got == "no detached run"


def test_a_script_run_needs_its_script_again():
    got = babysit_pick_problem(pick(script="train.sh"), False, ["pod-w0", "pod-w1"])
    assert got == (
        f"run {RUN} ran the local script train.sh: give it again with "
        "-e tpu_run_script=path/to/train.sh, so that a restart can copy it"
    )


def test_the_play_must_reach_the_runs_workers():
    expected = (
        f"run {RUN} ran on pod-w0, pod-w1, but this play reaches pod-w0: a restart starts on "
        "every worker the play reaches, so use the inventory and --limit the run was started with"
    )
    assert babysit_pick_problem(pick(), False, ["pod-w0"]) == expected
    # with the script given again, the workers are what is wrong
    assert babysit_pick_problem(pick(script="train.sh"), True, ["pod-w0"]) == expected


def test_the_reached_workers_are_sorted():
    got = babysit_pick_problem(pick(hosts=["pod-w1"]), False, ["pod-w2", "pod-w0"])
    assert "ran on pod-w1, but this play reaches pod-w0, pod-w2:" in got
