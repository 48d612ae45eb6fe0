"""status.yml against the emulator's in-memory backend, where the TPU API is the point: a
refused call (a bad token) is shown and fails the play, and the projects and zones come from
the inventory's tpu_vm source when no host is in the inventory (a preempted pod) and no
CLOUDTPU_PROJECT is set. Workers are never reached: every case has no inventory host.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.lifecycle_support import (
    PROJECT,
    TOKEN,
    EmulatorCli,
    ansible_env,
    playbook,
    status_lines,
)


@pytest.fixture(scope="module")
def emulator() -> Iterator[EmulatorCli]:
    cli = EmulatorCli(backend="memory", delay=0.1).start()
    try:
        # Only the demo inventory's token is accepted from here on (the initial state too).
        state = cli.admin("GET", "state")
        state["settings"]["tokens"] = [TOKEN]
        cli.admin("POST", "state", state)
        yield cli
    finally:
        cli.stop()


@pytest.fixture
def env(emulator: EmulatorCli, tmp_path: Path) -> dict[str, str]:
    emulator.admin("POST", "reset")
    return ansible_env(emulator.api_url, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))


def test_a_refused_token_is_shown_and_fails_the_play(
    emulator: EmulatorCli, env: dict[str, str]
) -> None:
    # The inventory reads the API with the token its file names; the modules with the one
    # in the environment, which the API refuses.
    result = playbook("status.yml", dict(env, CLOUDTPU_PROJECT=PROJECT, GCP_ACCESS_TOKEN="bad"))
    shown = status_lines(result)
    print(shown)
    assert result.returncode != 0, result.tail()
    assert shown.startswith(f"TPU API error for project {PROJECT}: "), shown
    assert "the access token was rejected or has expired" in shown, shown
    assert "the API did not answer: see the error above" in shown, shown
    assert "Fail when the TPU API could not be asked" in result.stdout, result.tail()
    assert result.recap()["localhost"]["changed"] == 0, result.recap()
