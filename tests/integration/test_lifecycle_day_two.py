"""Day two on a real local pod: status, verify, ssh_config and recover against one emulated
two-worker pod (the emulator's Docker backend: each worker a systemd+sshd container), reached as
user tpu with the test's own key and known_hosts file, as a user's environment would.

In order, on the one pod of this module: status on a READY node (a detached run and an ended
one in the run records, tpu-info's absence explained), on a CREATING node (the inventory leaves
it out; the API view shows it), verify twice (changed=0, no retry noise), ssh_config and
`ssh -F` to a worker, a web server on worker 0 reached through the config's port forward,
status with a stopped worker (unreachable, the play does not fail), on a
PREEMPTED node, with an empty inventory, recover refusing bad input before deleting anything,
then recover as user tpu (not root), which recreates, bootstraps and refreshes the SSH config
(its port forward kept).

To keep the module short the pod is bootstrapped with the libtpu role only (site.yml and
recover.yml with the other roles' tags skipped): the full role set is converged by molecule's
pod scenario. verify's framework check is a stand-in program in the login user's venv (printing
the report the real check prints), because installing jax on two workers takes minutes; what
verify does around it (one start time, background jobs, quiet waits, verdicts) is what runs.

Skipped, with the reason printed, only when no Docker daemon answers.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.day_two_pod import VENV, keygen
from tests.integration.lifecycle_support import (
    BIN,
    DEMO_INVENTORY,
    PROJECT,
    REPO,
    ZONE,
    EmulatorCli,
    Run,
    ansible_env,
    extra_vars,
    free_port,
    get_through,
    playbook,
    run,
    status_lines,
    step,
    unchanged,
)
from tests.integration.test_lifecycle_docker import CLEANUP, IMAGE, docker, docker_unavailable

NODE = "day2"
WORKERS = ["day2-w0", "day2-w1"]
EMULATOR_ID = f"d2{os.getpid()}"
LABEL = f"cloudtpu.emulator={EMULATOR_ID}"
RUNNING_ID = "20261123T143000Z-ab12"
ENDED_ID = "20261122T100000Z-cd34"
# The libtpu role alone. --skip-tags rather than --tags libtpu: the argument checks of the
# shared apt role are tagged always and need the variables of the roles they serve.
ONLY_LIBTPU = ("--skip-tags", "base,python,framework,tcmalloc,remote_shell,nfs")
INSTALL_TPU_INFO = "the framework role installs it: tpu_framework_tpu_info: true"
STAND_IN_CHECK = (
    "import json, sys\n"
    "print(json.dumps({'ok': True, 'mode': 'cpu', 'devices': ['TFRT_CPU_0'],"
    " 'reason': 'stand-in check: ' + ' '.join(sys.argv[1:3])}))\n"
)


class Pod:
    def __init__(self, emulator: EmulatorCli, folder: Path) -> None:
        self.emulator = emulator
        self.folder = folder
        self.key = folder / "id_ed25519"
        self.known_hosts = folder / "known_hosts"
        self.ssh_config = folder / "ssh_config"
        self.env = ansible_env(
            emulator.api_url,
            ANSIBLE_REMOTE_USER="tpu",
            ANSIBLE_PRIVATE_KEY_FILE=str(self.key),
            ANSIBLE_SSH_COMMON_ARGS=f"-o UserKnownHostsFile={self.known_hosts}",
            ANSIBLE_SSH_CONTROL_PATH_DIR=str(folder / "cp"),
            ANSIBLE_LOCAL_TEMP=str(folder / "ansible-tmp"),
            ANSIBLE_CACHE_PLUGIN_CONNECTION=str(folder / "facts"),
            ANSIBLE_TIMEOUT="10",
            CLOUDTPU_PROJECT=PROJECT,
            CLOUDTPU_ZONES=ZONE,
        )
        self.variables = extra_vars(
            {
                "tpu_ssh_config_record": str(folder / "ssh_config_record.json"),
                "tpu_recover_known_hosts": str(self.known_hosts),
                "tpu_recover_poll_interval": 0.5,
                "tpu_recover_ssh_timeout": 180,
            }
        )

    def playbook(self, name: str, *args: str, env: dict[str, str] | None = None) -> Run:
        return step(name, playbook(name, env or self.env, *self.variables, *args))

    def shell(self, pattern: str, command: str, become: bool = False) -> Run:
        args = [str(BIN / "ansible"), "-i", str(DEMO_INVENTORY), pattern, "-m", "shell"]
        result = run([*args, *(["-b"] if become else []), "-a", command], self.env, 300)
        assert result.returncode == 0, result.tail()
        return result

    def containers(self) -> dict[str, str]:
        """worker number -> container name, of the running containers."""
        names = docker("ps", "--filter", f"label={LABEL}", "--format", "{{.Names}}").split()
        return {
            docker(
                "inspect", "--format", '{{index .Config.Labels "cloudtpu.worker"}}', n
            ).strip(): n
            for n in names
        }


@pytest.fixture(scope="module")
def pod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    reason = docker_unavailable()
    if reason:
        print(f"SKIPPED test_lifecycle_day_two: {reason}")
        pytest.skip(reason)
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode:
        built = subprocess.run([str(REPO / "tools" / "image" / "build.sh")], cwd=REPO, check=False)
        assert built.returncode == 0, "tools/image/build.sh failed; see its output above"
    folder = tmp_path_factory.mktemp("day2")
    (folder / "cp").mkdir()
    emulator = EmulatorCli(
        backend="docker",
        delay=0.2,
        env={"CLOUDTPU_EMULATOR_ID": EMULATOR_ID, "CLOUDTPU_EMULATOR_IMAGE": IMAGE},
    ).start()
    try:
        current = Pod(emulator, folder)
        keygen(current.key)
        made = current.playbook(
            "provision.yml",
            *extra_vars(
                {
                    "tpu_provision_name": NODE,
                    "tpu_provision_project": PROJECT,
                    "tpu_provision_zone": ZONE,
                    "tpu_provision_accelerator_type": "v4-16",
                    "tpu_provision_ssh_user": "tpu",
                    "tpu_provision_ssh_public_key_file": f"{current.key}.pub",
                    "tpu_provision_known_hosts": str(current.known_hosts),
                    "tpu_provision_poll_interval": 0.5,
                    "tpu_provision_ssh_timeout": 180,
                }
            ),
        )
        assert made.returncode == 0, made.tail(80)
        cmd = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY), "site.yml"]
        boot = step("site.yml, libtpu only", run([*cmd, *ONLY_LIBTPU], current.env, 900))
        assert boot.returncode == 0, boot.tail(80)
        yield current
    finally:
        emulator.stop()
        leftovers = subprocess.run(
            [*CLEANUP, "--id", EMULATOR_ID],
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            check=False,
        )
        print(f"docker backend cleanup after the test: {leftovers.stdout.strip()}")


def test_status_of_a_ready_pod_with_run_records(pod: Pod) -> None:
    record = (
        'd=$HOME/cloudtpu-runs/{id}; mkdir -p -m 700 "$d"; {start}'
        'printf \'{{"run_id": "{id}", "host": "day2-w0", "cmd": "{cmd}", "detached": true, '
        '"pid": %s, "started": %s, "workdir": "%s"}}\' "{pid}" "$(date +%s)" "$HOME" '
        '> "$d/day2-w0.json"; chmod 600 "$d/day2-w0.json"'
    )
    running = record.format(
        id=RUNNING_ID, cmd="sleep 600", pid="$!",
        start="setsid sleep 600 </dev/null >/dev/null 2>&1 & ",
    )  # fmt: skip
    ended = record.format(id=ENDED_ID, cmd="script: eval.sh", pid="1", start="")
    pod.shell("day2-w0", f"{running}; {ended}; echo 3 > $HOME/cloudtpu-runs/{ENDED_ID}/day2-w0.rc")

    result = pod.playbook("status.yml")
    shown = status_lines(result)
    print(shown)
    assert result.returncode == 0, result.tail(80)
    unchanged(result)
    assert f"node {NODE}  type v4-16  {PROJECT}/{ZONE}  state READY  health HEALTHY" in shown
    rows = {
        w: next(line for line in shown.splitlines() if line.strip().startswith(w)) for w in WORKERS
    }
    for worker, row in rows.items():
        # A container's uptime is its host kernel's, so only its shape is known here.
        assert re.search(r"  [0-9]+d [0-9]{2}h [0-9]{2}m  ", row) and row.endswith("free"), (
            worker,
            row,
        )
    assert f"run {RUNNING_ID}: running (pid " in shown and "): sleep 600" in shown, shown
    assert f"run {ENDED_ID}: exited rc 3: script: eval.sh" in shown, shown
    # The libtpu role alone made these workers: no venv, so no tpu-info, and how to get it.
    missing = f"tpu-info: not shown, tpu-info is not installed in {VENV} ({INSTALL_TPU_INFO})"
    assert shown.count(missing) == 2, shown


def test_status_of_a_creating_node_comes_from_the_api(pod: Pod) -> None:
    path = f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:set"
    pod.emulator.admin("POST", path, {"state": "CREATING"})
    try:
        result = pod.playbook("status.yml", "--check")
    finally:
        pod.emulator.admin("POST", path, {"state": "READY"})
    shown = status_lines(result)
    print(shown)
    assert result.returncode == 0, result.tail(80)
    unchanged(result)
    assert "state CREATING" in shown, shown
    assert shown.count("not in the inventory (node CREATING)") == 2, shown


def test_verify_twice_changes_nothing_and_waits_quietly(pod: Pod) -> None:
    # The stand-in framework (see the module docstring): a venv python, the check, the fact.
    fact = json.dumps({"name": "jax", "env": {}, "venv_path": VENV, "version": "stand-in"})
    pod.shell(
        "tpu",
        f"install -d -o tpu -g tpu {VENV}/bin && ln -sf /usr/bin/python3 {VENV}/bin/python && "
        f"echo {base64.b64encode(STAND_IN_CHECK.encode()).decode()} | base64 -d "
        f"> {VENV}/bin/cloudtpu-framework-check && "
        f"install -d /etc/ansible/facts.d && printf %s '{fact}' > "
        "/etc/ansible/facts.d/cloudtpu_framework.fact",
        become=True,
    )
    for attempt in ("verify", "verify again"):
        result = pod.playbook("verify.yml", "-e", "tpu_verify_multihost=yes")
        assert result.returncode == 0, result.tail(80)
        unchanged(result)
        assert "RETRYING" not in result.output and "FAILED" not in result.output, result.tail(80)
        assert result.stdout.count("ok: stand-in check: --framework jax") == 2, result.tail(40)
        assert "2 of 2 workers verified" in result.stdout, (attempt, result.tail(40))


def test_ssh_config_logs_in_as_ansible_does(pod: Pod) -> None:
    result = pod.playbook("ssh_config.yml", "-e", f"tpu_ssh_config_path={pod.ssh_config}")
    assert result.returncode == 0, result.tail(60)
    text = pod.ssh_config.read_text()
    assert "User tpu" in text and f"IdentityFile {pod.key}" in text, text
    assert f'UserKnownHostsFile "{pod.known_hosts}"' in text, text
    for worker in WORKERS:
        login = subprocess.run(
            ["ssh", "-F", str(pod.ssh_config), "-o", "BatchMode=yes", worker, "id -un"],
            capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert (login.returncode, login.stdout.strip()) == (0, "tpu"), (login.stderr, text)


def test_a_server_on_worker_0_is_reached_through_the_forward(pod: Pod) -> None:
    remote, local = 8765, free_port()
    # A web server on worker 0 as the login user, on its loopback address only.
    pod.shell(
        WORKERS[0],
        f"d=$(mktemp -d) && echo forwarded-from-w0 > $d/index.html && cd $d && "
        f"setsid nohup python3 -m http.server {remote} --bind 127.0.0.1 "
        "> /dev/null 2>&1 < /dev/null & echo $! > /tmp/forward-test-http.pid",
    )
    forwards = {"tpu_ssh_config_forwards": [{"local": local, "remote": remote}]}
    result = pod.playbook(
        "ssh_config.yml", "-e", f"tpu_ssh_config_path={pod.ssh_config}", "-e", json.dumps(forwards)
    )
    assert result.returncode == 0, result.tail(60)
    text = pod.ssh_config.read_text()
    assert text.count(f"LocalForward 127.0.0.1:{local} localhost:{remote}") == 1, text
    tunnel = subprocess.Popen(
        ["ssh", "-F", str(pod.ssh_config), "-o", "BatchMode=yes", "-N", WORKERS[0]],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        body = get_through(tunnel, f"http://127.0.0.1:{local}/", 60)
    finally:
        tunnel.terminate()
        _, errors = tunnel.communicate(timeout=30)
        pod.shell(WORKERS[0], "kill $(cat /tmp/forward-test-http.pid)")
    assert body.strip() == "forwarded-from-w0", (body, errors)


def test_status_with_a_stopped_worker(pod: Pod) -> None:
    docker("stop", "--time", "2", pod.containers()["1"])
    started = time.monotonic()
    result = pod.playbook("status.yml")
    shown = status_lines(result)
    print(shown)
    assert result.returncode == 0, result.tail(80)
    assert time.monotonic() - started < 120
    row = next(line for line in shown.splitlines() if line.strip().startswith("day2-w1"))
    assert "unreachable" in row, shown
    assert "free" in next(line for line in shown.splitlines() if line.strip().startswith("day2-w0"))
    # ignore_unreachable: the play goes on for it, and the recap counts no failure.
    assert result.recap()["day2-w1"]["failed"] == 0, result.recap()
    assert "UNREACHABLE" in result.stdout, result.tail(40)


def test_status_of_a_preempted_node_and_of_an_empty_inventory(pod: Pod) -> None:
    pod.emulator.admin("POST", f"projects/{PROJECT}/locations/{ZONE}/nodes/{NODE}:preempt")
    result = pod.playbook("status.yml")
    shown = status_lines(result)
    print(shown)
    assert result.returncode == 0, result.tail(80)
    unchanged(result)
    assert "state PREEMPTED" in shown, shown
    assert shown.count("not in the inventory (node PREEMPTED)") == 2, shown

    elsewhere = dict(pod.env, CLOUDTPU_ZONES="europe-west4-a")
    empty = pod.playbook("status.yml", env=elsewhere)
    print(status_lines(empty))
    assert empty.returncode == 0, empty.tail(60)
    assert (
        f"No TPU node and no worker in the inventory. Looked in: project {PROJECT}, "
        "zones europe-west4-a." in status_lines(empty)
    ), empty.tail(40)


BAD_RECOVER = [
    ("tpu_recover_timeout", "0", "out of range; allowed: a whole number from 1 to"),
    ("tpu_recover_poll_interval", "soon", "soon"),
    ("tpu_recover_force", "maybe", "maybe"),
    ("tpu_recover_states", "GONE", "GONE"),
]


def test_recover_refuses_bad_input_before_deleting(pod: Pod) -> None:
    before = pod.emulator.mutating_calls()
    for name, value, shown in BAD_RECOVER:
        result = pod.playbook(
            "recover.yml", "-e", f"tpu_recover_nodes={NODE}", "-e", f"{name}={value}"
        )
        assert result.returncode != 0, result.tail()
        assert name in result.output and shown in result.output, result.tail(30)
    assert pod.emulator.mutating_calls() == before
    assert pod.emulator.node(NODE)["state"] == "PREEMPTED"


def test_recover_as_the_login_user_bootstraps_and_refreshes_ssh_config(pod: Pod) -> None:
    old = pod.ssh_config.read_text()
    result = pod.playbook(
        "recover.yml", "-e", f"tpu_recover_nodes={NODE}", "-e", "tpu_recover_wait_for_ssh=yes",
        *ONLY_LIBTPU,
    )  # fmt: skip
    assert result.returncode == 0, result.tail(100)
    assert "Permission denied" not in result.output, result.tail(60)
    recap = result.recap()
    assert sorted(h for h in recap if h != "localhost") == WORKERS, recap
    # The bootstrap plays ran on the new workers and installed tpu-unlock there.
    assert all(recap[w]["changed"] >= 1 and recap[w]["failed"] == 0 for w in WORKERS), recap
    assert pod.emulator.node(NODE)["state"] == "READY"
    new = pod.ssh_config.read_text()
    print(f"--- ssh config before recover:\n{old}\n--- after:\n{new}")
    addresses = sorted(e["ipAddress"] for e in pod.emulator.node(NODE)["networkEndpoints"])
    for address in addresses:
        assert f"HostName {address}" in new, new
    # The refresh kept the port forward on worker 0's entry (from the record).
    assert new.count("LocalForward 127.0.0.1:") == 1, new
    assert new.index("LocalForward") < new.index(f"Host {WORKERS[1]}"), new
    for worker in WORKERS:
        login = subprocess.run(
            ["ssh", "-F", str(pod.ssh_config), "-o", "BatchMode=yes", worker,
             "id -un; test -x /usr/local/bin/tpu-unlock && echo tpu-unlock"],
            capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert login.returncode == 0, (worker, login.stderr, new)
        assert login.stdout.split() == ["tpu", "tpu-unlock"], (worker, login.stdout)

    after = pod.playbook("status.yml")
    shown = status_lines(after)
    print(shown)
    assert after.returncode == 0 and "state READY" in shown, after.tail(60)
    unchanged(after)


def test_helpers_read_a_table() -> None:
    printed = [
        "TASK [Show nodes and workers] ***",
        "ok: [localhost] => {",
        '    "msg": [',
        '        "node a",',
        '        "  w0"',
        "    ]",
        "}",
        "PLAY RECAP ***",
    ]
    assert status_lines(Run([], 0, "\n".join(printed), "", 0.0)) == "node a\n  w0"
