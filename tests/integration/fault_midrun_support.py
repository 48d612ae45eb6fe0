"""The means of test_fault_midrun.py: the test pod's names and labels, docker commands on its
worker containers, what the remote shell role leaves on a worker (checked inside the container),
and a site.yml run read line by line that stops a worker when a given line comes
(:func:`stream_playbook`), with what happened around the stop (:class:`Fault`)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.integration.lifecycle_support import BIN, DEMO_INVENTORY, REPO, Run, inventory, run

IMAGE = "cloudtpu-pod-worker:current"
NODE = "fault-pod"
W0, W1 = "fault-pod-w0", "fault-pod-w1"
EMULATOR_ID = f"fault{os.getpid()}"
LABEL = f"cloudtpu.emulator={EMULATOR_ID}"
CLEANUP = [str(BIN / "python"), "-m", "tools.tpu_emulator.docker_backend", "cleanup"]
SITE = "site.yml"
TAGS = "base,tcmalloc,libtpu,remote_shell"
# The first task of the last play this subset runs: the two workers are past base, tcmalloc and
# libtpu, and the remote shell role (its asserts run on the control machine first) still has to
# look up the login user, install the packages and set the locale on them.
TRIGGER = "TASK [cloudtpu.pod.remote_shell : "
LOCALE = "en_US.UTF-8"
# What the last role leaves on a worker that finished it, as shell checks that print evidence.
EFFECTS = {
    "mosh installed": "dpkg-query -W -f='${Status}' mosh",
    "byobu installed": "dpkg-query -W -f='${Status}' byobu",
    f"LANG={LOCALE} in /etc/default/locale": f"grep -x 'LANG={LOCALE}' /etc/default/locale",
}


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=False, timeout=timeout
    )
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def worker_container(worker: int) -> str:
    """The container the Docker backend labels as worker ``worker`` of this test's pod."""
    names = docker(
        "ps",
        "-a",
        "--filter",
        f"label={LABEL}",
        "--filter",
        f"label=cloudtpu.worker={worker}",
        "--format",
        "{{.Names}}",
    ).stdout.split()
    assert len(names) == 1, f"expected one container for worker {worker}, found {names}"
    return names[0]


def container_ip(name: str) -> str:
    fmt = "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}"
    found = docker("inspect", "--format", fmt, name).stdout.split()
    return found[0] if found else ""


def effects(container: str) -> dict[str, str]:
    """Each effect of the remote shell role -> '' when present, else the evidence of its lack."""
    missing = {}
    for what, check in EFFECTS.items():
        done = docker("exec", container, "sh", "-c", check, check=False)
        output = (done.stdout + done.stderr).strip()
        if done.returncode != 0 or "not-installed" in output:
            missing[what] = f"rc={done.returncode} {output!r}"
        else:
            missing[what] = ""
    return missing


def hosts_addresses(env: dict[str, str]) -> dict[str, str]:
    hostvars = inventory(env)["_meta"]["hostvars"]
    return {h: hostvars[h]["ansible_host"] for h in (W0, W1) if h in hostvars}


@dataclass
class Fault:
    """What happened around the stop of worker 1 during a streamed run."""

    line: str = ""
    at: float = 0.0
    stop_seconds: float = 0.0
    stop_output: str = ""
    after: list[str] = field(default_factory=list)


def stream_playbook(
    name: str,
    env: dict[str, str],
    args: list[str],
    trigger: str,
    action: Callable[[], subprocess.CompletedProcess],
    timeout: float = 900,
) -> tuple[Run, Fault]:
    """ansible-playbook -i inventories/demo NAME ARGS, read line by line; ``action`` runs once,
    when a stdout line starts with ``trigger``, while the run goes on."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY), name, *args]
    fault = Fault()
    lines: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8") as errors:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=errors)
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace")
                lines.append(line)
                if fault.line:
                    fault.after.append(line.rstrip())
                elif line.startswith(trigger):
                    fault.line = line.rstrip()
                    fault.at = time.monotonic() - started
                    done = action()
                    fault.stop_seconds = time.monotonic() - started - fault.at
                    fault.stop_output = (done.stdout + done.stderr).strip()
            proc.wait()
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        errors.seek(0)
        stderr = errors.read()
    return Run(cmd, proc.returncode, "".join(lines), stderr, time.monotonic() - started), fault


def site(env: dict[str, str]) -> Run:
    """ansible-playbook -i inventories/demo site.yml --tags TAGS."""
    cmd = [str(BIN / "ansible-playbook"), "-i", str(DEMO_INVENTORY), SITE, "--tags", TAGS]
    return run(cmd, env, 900)


def evidence(result: Run, lines: int = 60) -> str:
    recap = "\n".join(f"  {h}: {c}" for h, c in sorted(result.recap().items()))
    return f"rc={result.returncode}, recap:\n{recap}\ntail of the output:\n{result.tail(lines)}"


def step(name: str, result: Run) -> Run:
    print(f"[{result.seconds:6.1f} s] {name}: rc={result.returncode} recap={result.recap()}")
    return result
