"""tpu-info in the venv (tpu_framework_tpu_info, on by default) and what playbooks/status.yml's
probe makes of it, on the converged worker. Reads only.

The worker is a container without a TPU chip, so the real tpu-info can only say so ("No TPU
chips found.", rc 0); its tables of a real TPU's chips, HBM and duty cycle cannot be shown
here. That it finds no chip is what the probe turns into the status table's "no TPU device".
"""

from __future__ import annotations

import base64
import json
import os
import shlex
from pathlib import Path

USER = "tpu"
PYTHON = os.environ.get("CLOUDTPU_TEST_PYTHON") or "3.10"
VENV = f"/home/{USER}/.venv{PYTHON.replace('.', '')}"
TOOL = f"{VENV}/bin/tpu-info"
PROBE = Path(__file__).resolve().parents[3] / "playbooks" / "templates" / "status_probe.py.j2"


def test_tpu_info_is_in_the_venv_and_the_login_users(host):
    script = "import importlib.metadata as m; print(m.version('tpu-info'))"
    out = host.run(f"runuser -u {USER} -- {VENV}/bin/python -c {shlex.quote(script)}")
    assert out.rc == 0 and out.stdout.strip(), f"tpu-info is not installed: {out.stderr}"
    f = host.file(TOOL)
    assert f.is_file and f.mode & 0o111 and f.user == USER, f"{TOOL}: {f.user} {oct(f.mode)}"


def test_tpu_info_finds_no_tpu_chip_in_a_container(host):
    out = host.run(f"runuser -u {USER} -- {TOOL}")
    assert out.rc == 0, f"rc {out.rc}:\n{out.stdout}\n{out.stderr[-2000:]}"
    said = [line.strip() for line in out.stdout.splitlines() if line.strip()]
    assert said and said[-1] == "No TPU chips found.", out.stdout


def test_status_probe_says_no_tpu_device(host):
    """The probe as status.yml runs it: python3 as root, the program on standard input."""
    program = base64.b64encode(PROBE.read_bytes()).decode()
    args = (
        f"--host w0 --runs-dir /home/{USER}/cloudtpu-runs --venv {VENV}"
        " --device-glob '/dev/accel*' --unlock /usr/local/bin/tpu-unlock"
    )
    out = host.run(f"echo {program} | base64 -d | python3 - {args}")
    assert out.rc == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])["tpu_info"]
    assert found == {
        "shown": False,
        "no_device": True,
        "reason": "tpu-info: No TPU chips found.",
    }, found
