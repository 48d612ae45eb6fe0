"""teardown.yml checks every input before it asks for the confirmation, and takes the
confirmation as Ansible's bool filter does (true, yes, on, 1 from the command line).

Against the emulator's in-memory backend; a refused run must not have called the API.
"""

from __future__ import annotations

import pytest

from tests.integration.lifecycle_support import (
    PROJECT,
    ZONE,
    EmulatorCli,
    extra_vars,
    playbook,
)

CONFIRM_ASKED = "to go ahead, run again with"
BASE = {
    "tpu_provision_project": PROJECT,
    "tpu_provision_zone": ZONE,
    "tpu_provision_name": "pod-t",
    "tpu_provision_accelerator_type": "v4-16",
    "tpu_provision_ssh_user": "tpu",
    "tpu_provision_ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJk5dGVzdGtleQ teardown",
    "tpu_provision_known_hosts": "/dev/null",
    "tpu_provision_wait_for_ssh": False,
    "tpu_provision_poll_interval": 0.1,
    "tpu_teardown_poll_interval": 0.1,
}


@pytest.mark.parametrize(
    ("values", "named", "shown"),
    [
        ({"tpu_teardown_zone": "nowhere"}, "tpu_teardown_zone", "'nowhere'"),
        ({"tpu_teardown_project": "X"}, "tpu_teardown_project", "'X'"),
        ({"tpu_teardown_nodes": ["Bad_Node"]}, "tpu_teardown_nodes", "Bad_Node"),
        ({"tpu_teardown_timeout": "soon"}, "tpu_teardown_timeout", '"soon"'),
        ({"tpu_teardown_poll_interval": "-1"}, "tpu_teardown_poll_interval", '"-1"'),
        ({"tpu_teardown_confirm": "maybe"}, "tpu_teardown_confirm", '"maybe": not true or false'),
    ],
    ids=["zone", "project", "node", "timeout", "poll-interval", "confirm-word"],
)
def test_bad_input_is_named_before_the_confirmation(
    emulator: EmulatorCli, env: dict[str, str], values: dict, named: str, shown: str
) -> None:
    """No confirmation given: the refusal is about the bad input, not about confirming."""
    result = playbook("teardown.yml", env, *extra_vars({**BASE, **values}))
    assert result.returncode != 0, result.tail()
    assert named in result.output, result.tail()
    assert shown in result.output, result.tail()
    assert CONFIRM_ASKED not in result.output, "asked to confirm a run that cannot work"
    assert emulator.mutating_calls() == {}, emulator.mutating_calls()


def test_good_input_without_confirmation_asks_for_it(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    result = playbook("teardown.yml", env, *extra_vars(BASE))
    assert result.returncode != 0
    assert CONFIRM_ASKED in result.output, result.tail()
    assert emulator.mutating_calls() == {}, emulator.mutating_calls()


@pytest.mark.parametrize("word", ["ON", "1"])
def test_confirmation_words_of_the_bool_filter_delete(
    emulator: EmulatorCli, env: dict[str, str], word: str
) -> None:
    assert playbook("provision.yml", env, *extra_vars(BASE)).returncode == 0
    assert emulator.node("pod-t") is not None
    result = playbook("teardown.yml", env, *extra_vars(BASE), "-e", f"tpu_teardown_confirm={word}")
    assert result.returncode == 0, result.tail()
    assert emulator.node("pod-t") is None, "the node is still there"
