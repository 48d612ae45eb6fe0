"""expire.yml against the emulator's in-memory backend (SSH and bootstrap skipped, as in
test_lifecycle_playbooks.py): provision.yml labels nodes with their lifetime; expire.yml lists
them, refuses to delete without its confirmation (and with --check), then deletes only the
nodes past their lifetime, and a run after that finds nothing to delete and changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

from tests.integration.lifecycle_support import (
    PROJECT,
    ZONE,
    EmulatorCli,
    ansible_env,
    extra_vars,
    playbook,
)
from tests.integration.test_lifecycle_playbooks import with_base

EMULATOR_DELAY = 0.05  # seconds each operation of the emulator takes (conftest.py)
WHERE = {"tpu_expire_projects": PROJECT, "tpu_expire_zones": ZONE}


def test_expire_deletes_the_nodes_past_their_lifetime_and_no_other(
    emulator: EmulatorCli, tmp_path: Path
) -> None:
    env = ansible_env(emulator.api_url, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    for name, lifetime in (("short", "1s"), ("long", "8h"), ("plain", None)):
        values = {"tpu_provision_name": name, "tpu_provision_method": "node"}
        values |= {"tpu_provision_lifetime": lifetime} if lifetime else {}
        made = playbook("provision.yml", env, *with_base(**values))
        assert made.returncode == 0, made.tail()
    assert emulator.node("short")["labels"] == {"cloudtpu-lifetime": "1s"}
    assert emulator.node("long")["labels"] == {"cloudtpu-lifetime": "8h"}
    assert "cloudtpu-lifetime" not in (emulator.node("plain").get("labels") or {})
    time.sleep(1.5)  # short's one second of life is over
    calls = emulator.mutating_calls()

    listed = playbook("expire.yml", env, *extra_vars(WHERE))
    assert listed.returncode != 0, listed.tail()
    assert f"short ({PROJECT}/{ZONE}): expired" in listed.output, listed.tail()
    assert f"long ({PROJECT}/{ZONE}): expires in 7 h 59 min" in listed.output, listed.tail()
    assert "plain" not in listed.output, listed.tail()
    assert "1 node(s) past their lifetime" in listed.output, listed.tail()
    assert "-e tpu_expire_confirm=true" in listed.output, listed.tail()

    checked = playbook(
        "expire.yml", env, *extra_vars({**WHERE, "tpu_expire_confirm": True}), "--check"
    )
    assert checked.returncode != 0 and "without --check" in checked.output, checked.tail()
    assert emulator.mutating_calls() == calls, "nothing is deleted without the confirmation"

    done = playbook("expire.yml", env, *extra_vars({**WHERE, "tpu_expire_confirm": True}))
    assert done.returncode == 0, done.tail()
    assert emulator.node("short") is None
    assert emulator.node("long") is not None and emulator.node("plain") is not None

    again = playbook("expire.yml", env, *extra_vars({**WHERE, "tpu_expire_confirm": True}))
    assert again.returncode == 0, again.tail()
    assert "short" not in again.output and "long (" in again.output, again.tail()
    assert again.recap()["localhost"]["changed"] == 0, again.tail()


def test_a_bad_confirmation_is_refused_before_the_api_is_asked(
    emulator: EmulatorCli, tmp_path: Path
) -> None:
    env = ansible_env(emulator.api_url, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    before = len(emulator.admin("GET", "stats")["log"])
    refused = playbook("expire.yml", env, *extra_vars({**WHERE, "tpu_expire_confirm": "maybe"}))
    assert refused.returncode != 0
    assert 'tpu_expire_confirm is "maybe": not true or false' in refused.output, refused.tail()
    # the inventory plugin lists the nodes of every zone as the run starts; the playbook's own
    # read (tpu_node_info, the zone's nodes) never came
    asked = emulator.admin("GET", "stats")["log"][before:]
    assert not [line for line in asked if f"/locations/{ZONE}/nodes" in line], asked
