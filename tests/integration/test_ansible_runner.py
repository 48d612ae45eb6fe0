"""site.yml run the way AWX and Ansible Automation Platform run a job: through ansible-runner,
from a private data dir laid out as the controller lays it out, against a two-worker pod (v4-16)
that provision.yml makes with the emulator's Docker backend.

The private data dir: project/ is this repository (the job's working folder, so its ansible.cfg
applies, as it does to a project checkout), env/envvars holds what the credentials inject,
env/cmdline the machine credential's user (-u tpu), env/ssh_key its key (ansible-runner hands it
to ssh-agent). The fact cache is ansible-runner's own, in the job's artifacts (a job template
with fact storage on).

1. One job over the pod, its inventory the project's tpu_vm source file
   (inventories/demo/tpu_vm.yml and its group_vars, an inventory "sourced from a project"),
   site.yml --tags libtpu: successful, rc 0, every worker ok and changed; a second job
   changes nothing.
2. Job slicing as the controller does it: the inventory is synced once (ansible-inventory --list
   --export, as an inventory update runs it), its hosts are taken in name order and dealt round
   robin into 2 slices, and each slice's job gets an executable inventory script with its own
   hosts only (groups cut down to them, their variables). libtpu, a role of one worker at a time,
   gives each slice job its own worker and the same result as the whole job.
3. A slice with a worker but not its pod's coordinator: the nfs role stops at its server check on
   that worker before it changes anything (docs/docsite/rst/awx.rst: what is safe to slice).
   The slice jobs read their inventory scripts with the `script` inventory plugin, which the
   project's ansible.cfg enables (no ANSIBLE_INVENTORY_ENABLED in the job's environment).

Why --tags libtpu: the role works on each worker alone, needs no other role and converges in
seconds (the framework role downloads a venv of about 1.3 GB per worker, and nfs needs the whole
pod in one play: item 3). The preflight plays run whatever the tags (tags: always).

Skipped, with the reason printed, when no Docker daemon answers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration import test_lifecycle_docker as lifecycle
from tests.integration.lifecycle_support import (
    BIN,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    ansible_env,
    extra_vars,
    plain,
    playbook,
)

ansible_runner = pytest.importorskip("ansible_runner", reason="in requirements.txt (make setup)")

# The Docker worker image, the emulator with its Docker backend and the SSH key of the lifecycle
# test, reused as they are.
worker_image = lifecycle.worker_image
emulator = lifecycle.emulator
ssh = lifecycle.ssh

NODE = "pod-awx"
WORKERS = ["pod-awx-w0", "pod-awx-w1"]
SOURCE = "inventories/demo/tpu_vm.yml"
_PREFIXES = ("ANSIBLE_", "CLOUDTPU_", "GCP_", "PY_COLORS")


@pytest.fixture(scope="module")
def pod(emulator: EmulatorCli, ssh: dict[str, Path]) -> Iterator[dict[str, Any]]:
    """A fresh two-worker pod, deleted again at the end of the module."""
    env = ansible_env(
        emulator.api_url,
        ANSIBLE_PRIVATE_KEY_FILE=str(ssh["key"]),
        ANSIBLE_REMOTE_USER="tpu",
        ANSIBLE_SSH_ARGS=ssh_args(ssh),
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(ssh["control"]),
        ANSIBLE_LOCAL_TEMP=str(ssh["tmp"] / "ansible-tmp"),
    )
    variables = extra_vars(
        {
            "tpu_provision_name": NODE,
            "tpu_provision_project": PROJECT,
            "tpu_provision_zone": ZONE,
            "tpu_provision_accelerator_type": "v4-16",
            "tpu_provision_ssh_user": "tpu",
            "tpu_provision_ssh_public_key_file": str(ssh["pub"]),
            "tpu_provision_known_hosts": str(ssh["known_hosts"]),
            "tpu_provision_poll_interval": 0.5,
            "tpu_provision_ssh_timeout": 180,
            "tpu_teardown_poll_interval": 0.5,
        }
    )
    up = playbook("provision.yml", env, *variables)
    print(f"[{up.seconds:6.1f} s] provision {NODE}: rc={up.returncode}")
    try:
        assert up.returncode == 0, up.tail(80)
        assert sorted(h for h in up.recap() if h != "localhost") == WORKERS, up.recap()
        yield {"api_url": emulator.api_url, "ssh": ssh}
    finally:
        down = playbook(
            "teardown.yml", env, *variables, *extra_vars({"tpu_teardown_confirm": True})
        )
        print(f"[{down.seconds:6.1f} s] teardown {NODE}: rc={down.returncode}")


def forget_caller_settings(patch: pytest.MonkeyPatch) -> None:
    """ansible-runner starts from this process's environment: none of the caller's Ansible, TPU
    or Google settings (ANSIBLE_CONFIG among them), so the project's ansible.cfg applies."""
    for key in list(os.environ):
        if key.startswith(_PREFIXES):
            patch.delenv(key)


@pytest.fixture(autouse=True)
def controller_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    forget_caller_settings(monkeypatch)


def ssh_args(ssh: dict[str, Path]) -> str:
    """The repository's ssh_args with this test's known_hosts file (a job's is its own too)."""
    return (
        "-o ControlMaster=auto -o ControlPersist=60s -o StrictHostKeyChecking=accept-new "
        f"-o UserKnownHostsFile={ssh['known_hosts']} -o ServerAliveInterval=5"
    )


def private_data_dir(
    base: Path, pod: dict[str, Any], machine_credential: bool = True, **envvars: str
) -> Path:
    """A job's private data dir: project/, env/envvars, and with the machine credential
    env/cmdline and env/ssh_key."""
    base.mkdir(parents=True)
    (base / "project").symlink_to(REPO, target_is_directory=True)
    (base / "inventory").mkdir()
    (base / "env").mkdir()
    (base / "cp").mkdir()
    variables = {
        "CLOUDTPU_API_ENDPOINT": pod["api_url"],
        "ANSIBLE_SSH_ARGS": ssh_args(pod["ssh"]),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(base / "cp"),
        "ANSIBLE_LOCAL_TEMP": str(base / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        **envvars,
    }
    (base / "env" / "envvars").write_text(yaml.safe_dump(variables), encoding="utf-8")
    if machine_credential:
        (base / "env" / "cmdline").write_text("-u tpu", encoding="utf-8")
        (base / "env" / "ssh_key").write_text(pod["ssh"]["key"].read_text(), encoding="utf-8")
    return base


def job(data_dir: Path, inventory: Path, tags: str, ident: str) -> Any:
    """site.yml as a job: ansible-runner in the foreground, events kept in artifacts/<ident>."""
    result = ansible_runner.run(
        private_data_dir=str(data_dir),
        playbook="site.yml",
        inventory=str(inventory),
        tags=tags,
        ident=ident,
        quiet=True,
        timeout=600,
    )
    print(f"job {ident}: status {result.status}, rc {result.rc}, stats {result.stats}")
    return result


def stdout_tail(result: Any, lines: int = 60) -> str:
    with result.stdout as handle:
        return "\n".join(handle.read().splitlines()[-lines:])


def hosts_with(result: Any, event: str) -> set[str]:
    """Hosts that emitted the given runner event."""
    return {
        e["event_data"]["host"]
        for e in result.events
        if e.get("event") == event and e.get("event_data", {}).get("host")
    }


def awx_slice(synced: dict[str, Any], number: int, count: int) -> dict[str, Any]:
    """The inventory of slice ``number`` (from 1) of ``count``, the way the controller writes a
    sliced job's inventory from a synced one: its hosts sorted by name, every ``count``-th one
    from position ``number - 1``; groups keep only those hosts, and only they have variables."""
    hostvars = synced.get("_meta", {}).get("hostvars", {})
    names = {h for name, group in synced.items() if name != "_meta" for h in group.get("hosts", [])}
    chosen = sorted(names | set(hostvars))[number - 1 :: count]
    sliced: dict[str, Any] = {}
    for name, group in synced.items():
        if name == "_meta":
            continue
        entry = {k: v for k, v in group.items() if k != "hosts"}
        members = [h for h in group.get("hosts", []) if h in chosen]
        if members:
            entry["hosts"] = members
        sliced[name] = entry
    sliced["_meta"] = {"hostvars": {h: hostvars.get(h, {}) for h in chosen}}
    return sliced


def inventory_script(path: Path, data: dict[str, Any]) -> Path:
    """An executable inventory that prints ``data`` (a job's inventory file on the controller)."""
    text = json.dumps(data)
    path.write_text(f"#!/usr/bin/env python3\nprint({text!r})\n", encoding="utf-8")
    path.chmod(0o700)
    return path


@pytest.fixture(scope="module")
def whole_jobs(pod: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """site.yml --tags libtpu over the whole pod, twice, its inventory the project's source file
    (the second job, and the slice jobs after it, find the pod converged)."""
    data_dir = private_data_dir(tmp_path_factory.mktemp("whole") / "job", pod)
    source = data_dir / "project" / SOURCE
    with pytest.MonkeyPatch.context() as patch:
        forget_caller_settings(patch)
        return job(data_dir, source, "libtpu", "first"), job(data_dir, source, "libtpu", "second")


def test_site_as_one_job_then_again_with_no_change(whole_jobs: tuple[Any, Any]) -> None:
    first, second = whole_jobs
    assert first.status == "successful" and first.rc == 0, stdout_tail(first)
    stats = first.stats
    assert sorted(stats["processed"]) == ["localhost", *WORKERS], stats
    assert not stats["failures"] and not stats["dark"], stats
    assert all(stats["ok"].get(w, 0) > 0 and stats["changed"].get(w, 0) > 0 for w in WORKERS), stats
    assert set(WORKERS) <= hosts_with(first, "runner_on_ok"), "a worker sent no ok event"
    # tpu-unlock was installed on every worker (the role's own install task changed there).
    installed = {
        e["event_data"]["host"]
        for e in first.events
        if e.get("event") == "runner_on_ok"
        and e["event_data"].get("task", "").startswith("Install tpu-unlock")
        and e["event_data"].get("res", {}).get("changed")
    }
    assert installed == set(WORKERS), installed

    assert second.status == "successful" and second.rc == 0, stdout_tail(second)
    assert not second.stats["failures"] and not second.stats["dark"], second.stats
    assert all(second.stats["ok"].get(w, 0) > 0 for w in WORKERS), second.stats
    assert all(second.stats["changed"].get(w, 0) == 0 for w in WORKERS), second.stats
    assert not hosts_with(second, "runner_on_failed")


@pytest.fixture(scope="module")
def synced(pod: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The inventory as an inventory update stores it: ansible-inventory --list --export of the
    project's source file, run through ansible-runner from the project folder."""
    data_dir = private_data_dir(tmp_path_factory.mktemp("sync") / "update", pod, False)
    with pytest.MonkeyPatch.context() as patch:
        forget_caller_settings(patch)
        out, err = ansible_runner.get_inventory(
            action="list",
            inventories=[str(data_dir / "project" / SOURCE)],
            response_format="json",
            export=True,
            private_data_dir=str(data_dir),
            host_cwd=str(data_dir / "project"),
            quiet=True,
        )
    assert isinstance(out, dict), f"ansible-inventory gave no JSON: {out!r} {err}"
    assert sorted(out["_meta"]["hostvars"]) == WORKERS, out["_meta"]["hostvars"].keys()
    return out


def test_slices_deal_the_hosts_round_robin_and_each_converges_alone(
    pod: dict[str, Any], whole_jobs: tuple[Any, Any], synced: dict[str, Any], tmp_path: Path
) -> None:
    slices = [awx_slice(synced, n, 2) for n in (1, 2)]
    members = [sorted(s["_meta"]["hostvars"]) for s in slices]
    assert members == [[WORKERS[0]], [WORKERS[1]]], members
    # The coordinator's group and the pod's group hold only the slice's own worker.
    assert slices[1]["tpu_coordinator"].get("hosts", []) == [], slices[1]["tpu_coordinator"]
    assert slices[1]["tpu_node_pod_awx"]["hosts"] == [WORKERS[1]]
    # ... while the worker's own variables still name its pod's coordinator.
    pod_vars = plain(slices[1]["_meta"]["hostvars"][WORKERS[1]])
    assert pod_vars["tpu_pod_coordinator"] == WORKERS[0], pod_vars

    for number, sliced in enumerate(slices, start=1):
        data_dir = private_data_dir(tmp_path / f"slice{number}", pod)
        script = inventory_script(data_dir / "inventory" / "hosts", sliced)
        result = job(data_dir, script, "libtpu", f"slice{number}")
        mine = members[number - 1]
        assert result.status == "successful" and result.rc == 0, stdout_tail(result)
        assert sorted(result.stats["processed"]) == ["localhost", *mine], result.stats
        assert not result.stats["failures"] and not result.stats["dark"], result.stats
        # Converged by the whole job before: a per-worker role changes nothing in a slice either.
        assert all(result.stats["changed"].get(w, 0) == 0 for w in mine), result.stats
        assert hosts_with(result, "runner_on_ok") - {"localhost"} == set(mine)


def test_a_slice_without_the_coordinator_cannot_run_nfs(
    pod: dict[str, Any], synced: dict[str, Any], tmp_path: Path
) -> None:
    data_dir = private_data_dir(tmp_path / "slice2", pod)
    script = inventory_script(data_dir / "inventory" / "hosts", awx_slice(synced, 2, 2))
    result = job(data_dir, script, "nfs", "nfs-slice2")
    assert result.status == "failed" and result.rc != 0, stdout_tail(result)
    assert result.stats["failures"] == {WORKERS[1]: 1}, result.stats
    assert not result.stats["changed"], result.stats
    failed = [e["event_data"] for e in result.events if e.get("event") == "runner_on_failed"]
    assert [f["task"] for f in failed] == [
        "Check the variables and the pod and look at the role's whole state in one call"
    ], failed
    message = failed[0]["res"]["msg"]
    assert f"{WORKERS[1]} has no NFS server" in message, message


def test_run_env_canaries_reach_no_event_no_artifact_and_no_fact_cache(
    pod: dict[str, Any], whole_jobs: tuple[Any, Any], tmp_path: Path
) -> None:
    """run.yml as a job at verbosity 3 with --diff, its tpu_run_env values canaries given as the
    job's extra vars (env/extravars, where the controller writes a survey's answers), with the fact
    cache of a job template that stores facts: the run sees the values, and no event, no
    artifact and no fact cache file holds one. The workers get a venv made with
    ``python3 -m venv --without-pip`` at the login contract's place first (as
    tests/integration/day_two_pod.py does: run.yml only sources it; the python role is proven
    elsewhere); libtpu is there from the site.yml job above (run.yml calls tpu-unlock)."""
    canaries = {
        name: f"{name.lower()}-canary-{os.urandom(8).hex()}"
        for name in ("HF_TOKEN", "WANDB_API_KEY")
    }
    data_dir = private_data_dir(tmp_path / "run", pod)
    inventory = data_dir / "project" / SOURCE
    venv = ansible_runner.run(
        private_data_dir=str(data_dir),
        inventory=str(inventory),
        host_pattern="tpu",
        module="ansible.builtin.command",
        module_args="python3 -m venv --without-pip /home/tpu/.venv310 creates=/home/tpu/.venv310",
        ident="venv",
        # an ad-hoc command does not start in the project folder: name its configuration
        envvars={"ANSIBLE_CONFIG": str(data_dir / "project" / "ansible.cfg")},
        quiet=True,
        timeout=300,
    )
    assert venv.status == "successful", stdout_tail(venv)
    assert sorted(venv.stats["processed"]) == WORKERS, stdout_tail(venv)
    (data_dir / "env" / "extravars").write_text(
        yaml.safe_dump(
            {
                "cmd": 'test "$HF_TOKEN" = "$EXPECTED_HF" && echo the token reached the run',
                "tpu_run_env": {**canaries, "EXPECTED_HF": canaries["HF_TOKEN"]},
            }
        ),
        encoding="utf-8",
    )
    result = ansible_runner.run(
        private_data_dir=str(data_dir),
        playbook="playbooks/run.yml",
        inventory=str(inventory),
        ident="canary",
        verbosity=3,
        # the machine credential's user, and a job template's "Show Changes" (--diff)
        cmdline="-u tpu --diff",
        fact_cache_type="jsonfile",
        quiet=True,
        timeout=600,
    )
    assert result.status == "successful" and result.rc == 0, stdout_tail(result)
    with result.stdout as handle:
        assert "the token reached the run" in handle.read()
    artifacts = data_dir / "artifacts"
    files = [p for p in artifacts.rglob("*") if p.is_file()]
    assert any(p.parent.name == "job_events" for p in files), "no events were written"
    assert any("fact_cache" in p.parts for p in files), "no fact cache was written"
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for name, canary in canaries.items():
            assert canary not in text, f"{name}'s value is in {path.relative_to(data_dir)}"
    for event in result.events:
        assert not any(c in json.dumps(event) for c in canaries.values()), event.get("event")
