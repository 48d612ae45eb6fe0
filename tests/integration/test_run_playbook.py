"""Day two on a real emulated pod: run.yml, sync.yml, logs.yml (and babysit.yml restarting a
run) against two worker containers.

One v4-16 node (two workers) is provisioned once for this module by day_two_pod.provisioned(),
reached over SSH as the login user ``tpu``, with libtpu and a venv without packages (see there
why that is enough).

Skipped, with the reason printed, only when no Docker daemon answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.day_two_pod import (
    HOME,
    VENV,
    Pod,
    docker_unavailable,
    provisioned,
    run_id,
    table,
)
from tests.integration.lifecycle_support import extra_vars

NODE = "pod-run"
WORKERS = ["pod-run-w0", "pod-run-w1"]
EMULATOR_ID = f"run{os.getpid()}"


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_run_playbook: {reason}")
        pytest.skip(reason)
    with provisioned(tmp_path_factory.mktemp("day2"), NODE, "v4-16", EMULATOR_ID) as made:
        yield made


def runs_on_workers(pod: Pod) -> dict[str, str]:
    return pod.shell(f"ls {HOME}/cloudtpu-runs 2>/dev/null | sort | tr '\\n' ' '")


def test_bad_requests_are_refused_before_anything_starts(pod: Pod) -> None:
    cases = [
        # -e cmd='python train.py --steps 10' typed in a shell reaches Ansible like this
        (["-e", "cmd=python train.py --steps 10"], ["cmd was cut by Ansible's key=value parsing"]),
        ([], ["nothing to run: give cmd or tpu_run_script"]),
        (
            ["-e", "cmd=hostname", "-e", "tpu_run_timeout=soon", "-e", "tpu_run_detach=maybe"],
            ['tpu_run_timeout is "soon"', 'tpu_run_detach is "maybe"'],
        ),
    ]
    for args, messages in cases:
        refused = pod.play("run.yml", *args)
        assert refused.returncode != 0, refused.tail()
        for message in messages:
            assert message in refused.output, (message, refused.tail(30))
        if args[:2] == ["-e", "cmd=python train.py --steps 10"]:
            assert "-e \"cmd='python train.py --steps 10'\"" in refused.output, refused.tail()
    # a --limit that matches no worker: Ansible stops before any play, naming the pattern
    typo = pod.play("run.yml", "-e", "cmd=hostname", "--limit", "pod-run-w9")
    assert typo.returncode != 0
    assert "Could not match supplied host pattern, ignoring: pod-run-w9" in typo.output, typo.tail()
    assert "no hosts to target" in typo.output, typo.tail()
    # nothing was recorded on the workers: the checks come before anything changes
    assert runs_on_workers(pod) == {w: "" for w in WORKERS}


def test_quotes_and_hash_reach_bash_in_the_venv_and_framework_env(pod: Pod) -> None:
    cmd = """cmd='echo "a  b" && echo "$PJRT_DEVICE $VIRTUAL_ENV $PWD" # not shown'"""
    result = pod.play("run.yml", "-e", cmd, "-e", "tpu_run_start_delay=2")
    assert result.returncode == 0, result.tail(60)
    rows = table(result)
    assert sorted(rows) == WORKERS, rows
    for worker in WORKERS:
        assert rows[worker]["rc"] == "0", rows
        assert rows[worker]["lines"] == ["a  b", f"TPU {VENV} {HOME}"], rows
    assert "2 of 2 workers succeeded" in result.stdout
    ident = run_id(result)
    # the record, the exit code file and the modes of the run-record contract
    base = f"{HOME}/cloudtpu-runs/{ident}/{{{{ inventory_hostname }}}}"
    seen = pod.shell(
        f"stat -c '%a %U' {HOME}/cloudtpu-runs/{ident} {base}.log {base}.json {base}.rc"
        f" | tr '\\n' ,; cat {base}.rc; cat {base}.json | tr -d '\\n'"
    )
    for worker in WORKERS:
        *modes, rest = seen[worker].split(",", 4)
        assert modes == ["700 tpu", "600 tpu", "600 tpu", "600 tpu"], seen
        code, record = rest.split("\n", 1)
        assert code.strip() == "0", seen
        data = json.loads(record)
        assert data["run_id"] == ident and data["host"] == worker, data
        assert data["cmd"].startswith('echo "a  b" && echo'), data
        assert data["detached"] is False and isinstance(data["pid"], int), data
        assert data["workdir"] == HOME and isinstance(data["started"], int), data


def test_failing_pipe_in_a_multiline_script_fails_the_play_and_logs_bring_crash_logs(
    pod: Pod, tmp_path: Path
) -> None:
    script = (
        "echo first\n"
        "mkdir -p /tmp/tpu_logs && echo 'libtpu crashed' > /tmp/tpu_logs/tpu_driver.ERROR\n"
        "sh -c 'echo piped; exit 7' | cat"
    )
    result = pod.play("run.yml", *extra_vars({"cmd": script, "tpu_run_start_delay": 2}))
    assert result.returncode != 0, result.tail(60)
    rows = table(result)
    for worker in WORKERS:
        # the command's own exit code (pipefail), not that of cat or of a tee
        assert rows[worker] == {"rc": "7", "lines": ["first", "piped"]}, rows
    assert "0 of 2 workers succeeded" in result.stdout, result.tail()
    assert "failed: pod-run-w0 (rc 7), pod-run-w1 (rc 7)" in result.stdout, result.tail()
    ident = run_id(result)

    # logs.yml for that run: the logs, and libtpu's crash logs because the run failed
    fetched = pod.play("logs.yml", "-e", f"tpu_logs_run={ident}", cwd=tmp_path)
    assert fetched.returncode == 0, fetched.tail(60)
    folder = tmp_path / ".cache" / "runs" / ident
    for worker in WORKERS:
        assert (folder / f"{worker}.log").read_text() == "first\npiped\n"
        crash = folder / f"{worker}.tpu_logs" / "tpu_driver.ERROR"
        assert crash.read_text() == "libtpu crashed\n", sorted(folder.rglob("*"))
    assert "pod-run-w0 exit 7, pod-run-w1 exit 7" in fetched.stdout, fetched.tail()


def test_local_script_detached_then_logs_fetch_the_newest_run(pod: Pod, tmp_path: Path) -> None:
    script = tmp_path / "train.sh"
    script.write_text('#!/bin/bash\necho "started in $PWD"\nsleep 3\necho finished\n')
    # tpu_run_detach arrives as the string "true", as from any -e key=value
    result = pod.play(
        "run.yml",
        "-e",
        f"tpu_run_script={script}",
        "-e",
        "tpu_run_detach=true",
        "-e",
        "tpu_run_start_delay=2",
    )
    assert result.returncode == 0, result.tail(60)
    rows = table(result)
    ident = run_id(result)
    for worker in WORKERS:
        assert rows[worker]["rc"] == "started", rows
        assert re.match(r"pid \d+, log /home/tpu/cloudtpu-runs/", rows[worker]["lines"][0]), rows
    records = pod.shell(
        f"tr -d '\\n' < {HOME}/cloudtpu-runs/{ident}/{{{{ inventory_hostname }}}}.json"
    )
    for worker in WORKERS:
        data = json.loads(records[worker])
        assert data["detached"] is True and data["cmd"] == "script: train.sh", data
        assert isinstance(data["pid"], int) and data["pid"] > 1, data

    # the wrapper writes the .rc file when a detached command ends, too
    deadline = time.monotonic() + 90
    codes: dict[str, str] = {}
    while time.monotonic() < deadline:
        codes = pod.shell(f"cat {HOME}/cloudtpu-runs/{ident}/*.rc 2>/dev/null; true")
        if all(codes.get(w, "").strip() == "0" for w in WORKERS):
            break
        time.sleep(2)
    assert all(codes.get(w, "").strip() == "0" for w in WORKERS), codes

    # logs.yml without tpu_logs_run takes the newest run; the tail is printed too
    fetched = pod.play("logs.yml", "-e", "tpu_logs_tail=5", cwd=tmp_path)
    assert fetched.returncode == 0, fetched.tail(60)
    for worker in WORKERS:
        log = tmp_path / ".cache" / "runs" / ident / f"{worker}.log"
        assert log.read_text() == "started in /home/tpu\nfinished\n"
        assert not (log.parent / f"{worker}.tpu_logs").exists(), "crash logs of a good run"
    assert '"finished"' in fetched.stdout, fetched.tail()
    again = pod.play("logs.yml", cwd=tmp_path)
    assert again.returncode == 0, again.tail()
    assert all(again.recap()[w]["changed"] == 0 for w in WORKERS), again.recap()


def test_sync_a_folder_then_run_in_it(pod: Pod, tmp_path: Path) -> None:
    project = tmp_path / "myproject"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / "data").mkdir()
    (project / "data" / "blob.bin").write_text("large\n")
    (project / ".gitignore").write_text("data/\nsecret.txt\n")
    (project / "secret.txt").write_text("token\n")
    (project / "train.py").write_text("print('trained')\n")
    result = pod.play(
        "run.yml",
        "-e",
        "tpu_sync_src=./myproject",
        "-e",
        "tpu_run_sync=true",
        "-e",
        "cmd='ls -A && python3 train.py'",
        "-e",
        "tpu_run_start_delay=2",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.tail(60)
    rows = table(result)
    for worker in WORKERS:
        # .git, the ignored file and the ignored folder stayed home; the run ran in the copy
        assert rows[worker] == {"rc": "0", "lines": [".gitignore", "train.py", "trained"]}, rows
    owners = pod.shell(f"stat -c %U {HOME}/myproject {HOME}/myproject/train.py | sort -u")
    assert owners == {w: "tpu" for w in WORKERS}, owners

    again = pod.play("sync.yml", "-e", "tpu_sync_src=./myproject", cwd=tmp_path)
    assert again.returncode == 0, again.tail(60)
    assert all(again.recap()[w]["changed"] == 0 for w in WORKERS), again.recap()


def test_braces_in_the_command_and_the_environment_reach_every_worker_as_typed(pod: Pod) -> None:
    """-e "cmd='...'" with Go-template braces, and tpu_run_env values with {{ }}: data, not
    templates (Ansible renders extra variables, so this failed with a template error)."""
    result = pod.play(
        "run.yml",
        "-e",
        "cmd='echo {{.Names}} && printenv BRACES'",
        *extra_vars({"tpu_run_env": {"BRACES": "{{ .ID }} {{ undefined_here }}"}}),
        "-e",
        "tpu_run_start_delay=2",
    )
    assert result.returncode == 0, result.tail(60)
    rows = table(result)
    for worker in WORKERS:
        assert rows[worker] == {
            "rc": "0",
            "lines": ["{{.Names}}", "{{ .ID }} {{ undefined_here }}"],
        }, rows
    # the run's record (what status.yml shows) keeps the command as typed
    record = pod.shell(
        f"cat {HOME}/cloudtpu-runs/{run_id(result)}/{{{{ inventory_hostname }}}}.json | tr -d '\\n'"
    )
    for worker in WORKERS:
        assert json.loads(record[worker])["cmd"] == "echo {{.Names}} && printenv BRACES", record


def test_a_lookup_in_the_command_is_text_for_bash_and_never_runs_here(
    pod: Pod, tmp_path: Path
) -> None:
    """lookup('pipe', ...) in cmd or in a tpu_run_env value, given in an -e @file as AWX gives
    a job's variables: it runs nowhere on this machine; bash on the workers gets it as text."""
    markers = [tmp_path / "from-cmd", tmp_path / "from-env"]
    pipes = [f"{{{{ lookup('pipe', 'touch {marker}') }}}}" for marker in markers]
    variables = tmp_path / "vars.json"
    variables.write_text(
        json.dumps(
            {
                "cmd": f"""printf '%s\\n' "{pipes[0]}" "$PIPED\"""",
                "tpu_run_env": {"PIPED": pipes[1]},
                "tpu_run_start_delay": 2,
            }
        )
    )
    result = pod.play("run.yml", "-e", f"@{variables}")
    assert result.returncode == 0, result.tail(60)
    assert not [m for m in markers if m.exists()], "a lookup ran on this machine"
    rows = table(result)
    for worker in WORKERS:
        assert rows[worker] == {"rc": "0", "lines": pipes}, rows


def test_babysit_restarts_a_command_with_braces_as_recorded(pod: Pod, tmp_path: Path) -> None:
    """The recorded command of a detached run whose process is gone (killed, no exit code) is
    started again by babysit.yml as it was typed, braces and all."""
    marker = f"{HOME}/braces-restarted"
    command = f"test -f {marker} && echo {{{{.Names}}}} && exit 0; touch {marker}; sleep 600"
    started = pod.play(
        "run.yml",
        *extra_vars({"cmd": command, "tpu_run_detach": True, "tpu_run_start_delay": 1}),
    )
    assert started.returncode == 0, started.tail(60)
    first = run_id(started)
    record = f"{HOME}/cloudtpu-runs/{first}/{{{{ inventory_hostname }}}}.json"
    # once the command runs, its whole process group goes at once (no exit code is written)
    pid = "sed -n 's/.*\"pid\": \\([0-9]*\\).*/\\1/p' " + record
    pod.shell(
        f"for i in $(seq 100); do test -f {marker} && break; sleep 0.1; done; "
        f'pkill -KILL -g "$({pid})"'
    )
    watched = pod.play(
        "babysit.yml",
        "-e",
        "tpu_babysit_interval=2",
        "-e",
        "tpu_run_start_delay=1",
        "-e",
        f"tpu_babysit_log_dir={tmp_path}",
        cwd=tmp_path,
    )
    assert watched.returncode == 0, watched.tail(60)
    log = (tmp_path / f"{first}.log").read_text()
    restarted = re.findall(r"restarted: run (\S+) continues run " + first, log)
    assert len(restarted) == 1, log
    outputs = pod.shell(f"cat {HOME}/cloudtpu-runs/{restarted[0]}/{{{{ inventory_hostname }}}}.log")
    assert outputs == {worker: "{{.Names}}" for worker in WORKERS}, outputs
    pod.shell(f"rm -f {marker}")


def test_secrets_show_in_no_output_and_in_no_fact_cache(pod: Pod, tmp_path: Path) -> None:
    """Every tpu_run_env value is a canary: an attached run (the default callback) and a
    detached one (the JSON callback), both at -vvv with --diff, must show none, though each
    worker gets every value exactly. The first run gathers facts as site.yml does (bootstrap.yml,
    its roles skipped): the fact cache holds no canary and no worker's environment."""
    canaries = {
        name: f"{name.lower()}-canary-{secrets.token_hex(8)}"
        for name in ("HF_TOKEN", "WANDB_API_KEY")
    }
    digests = {name: hashlib.sha256(value.encode()).hexdigest() for name, value in canaries.items()}
    facts = tmp_path / "facts"
    env = dict(pod.env, ANSIBLE_CACHE_PLUGIN_CONNECTION=str(facts))
    command = "; ".join(f'printf %s "${name}" | sha256sum' for name in sorted(canaries))
    attached = Pod(env, pod.tmp, pod.group).play(
        "run.yml",
        "playbooks/bootstrap.yml",
        "--skip-tags",
        "base,python,framework,tcmalloc,libtpu,remote_shell,nfs",
        "-vvv",
        "--diff",
        *extra_vars({"cmd": command, "tpu_run_env": canaries, "tpu_run_start_delay": 1}),
    )
    assert attached.returncode == 0, attached.tail(60)
    detached = Pod(dict(env, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"), pod.tmp, pod.group)
    started = detached.play(
        "run.yml",
        "-vvv",
        "--diff",
        *extra_vars(
            {
                "cmd": command,
                "tpu_run_env": canaries,
                "tpu_run_detach": True,
                "tpu_run_start_delay": 1,
            }
        ),
    )
    assert started.returncode == 0, started.tail(60)
    assert '"plays"' in started.stdout, started.tail()
    rows = table(attached)
    for worker in WORKERS:
        sums = [line.split()[0] for line in rows[worker]["lines"]]  # type: ignore[union-attr]
        assert sums == [digests[name] for name in sorted(canaries)], rows
    # a file per host (its name has a prefix of the cache's own); the workers' facts, no env
    cached = {path.name: path.read_text() for path in facts.iterdir()}
    for worker in WORKERS:
        texts = [text for name, text in cached.items() if name.endswith(worker)]
        assert len(texts) == 1 and "ansible_distribution" in texts[0], sorted(cached)
    assert not [name for name, text in cached.items() if "ansible_env" in text], sorted(cached)
    for value in canaries.values():
        for where, text in [("attached", attached.output), ("detached", started.output)]:
            shown = [line for line in text.splitlines() if value in line]
            assert not shown, (where, shown[:5])
        for name, text in cached.items():
            assert value not in text, name


def test_logs_bring_every_attempt_of_a_restarted_run_from_the_copies(
    pod: Pod, tmp_path: Path
) -> None:
    """Three attempts, each continuing the one before (as babysit.yml restarts a run), with
    tpu_run_log_copy in /srv/runcopy (a folder the login user owns, standing in for a mounted
    bucket). The first two attempts' run folders are then removed from the workers, as a
    recreated node has none; logs.yml with tpu_logs_copy brings all three attempts' logs."""
    pod.shell("sudo install -d -o tpu -m 0700 /srv/runcopy")
    copy = ["-e", "tpu_run_log_copy=/srv/runcopy", "-e", "tpu_run_log_copy_every=1"]
    ids: list[str] = []
    for attempt in ("a", "b", "c"):
        before = ["-e", f"tpu_run_continues={ids[-1]}"] if ids else []
        result = pod.play(
            "run.yml", *extra_vars({"cmd": f"echo attempt-{attempt}"}), *copy, *before
        )
        assert result.returncode == 0, result.tail()
        ids.append(run_id(result))
    pod.shell(f"rm -rf {HOME}/cloudtpu-runs/{ids[0]} {HOME}/cloudtpu-runs/{ids[1]}")

    dest = tmp_path / "runs"
    logs = pod.play("logs.yml", "-e", "tpu_logs_copy=/srv/runcopy", "-e", f"tpu_logs_dest={dest}")
    assert logs.returncode == 0, logs.tail()
    assert f"It continues {ids[0]}, {ids[1]} (restarted by babysit.yml)" in logs.stdout, logs.tail()
    for attempt, rid in zip("abc", ids, strict=True):
        for worker in WORKERS:
            text = (dest / rid / f"{worker}.log").read_text(encoding="utf-8")
            assert f"attempt-{attempt}" in text, (rid, worker, text)
    # without the copies, only the newest attempt is on the workers
    plain = pod.play("logs.yml", "-e", f"tpu_logs_dest={tmp_path / 'plain'}")
    assert plain.returncode == 0 and "It continues" not in plain.stdout, plain.tail()
    assert sorted(p.name for p in (tmp_path / "plain").iterdir()) == [ids[2]]
