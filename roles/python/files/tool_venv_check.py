# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether the tool venv of uv works, run by the venv's own python: `python -I -B -c "<this file>"`.

The python role's look at the host runs it (tasks/host.yml, files/host_probe.py) to decide
whether the venv is rebuilt, and its record and the next run's state check run it again
(cloudtpu.pod.tpu_state), so a venv that broke behind the record's back sends the role through
its tasks. It exits non-zero when the venv is broken: its python is not a venv's (pyvenv.cfg
gone), pip cannot be imported, or uv is installed but its package or its binary is gone or
answers with another version. Otherwise it prints one JSON object: the interpreter, pip's
version and uv's (null when uv is not installed). The same venv gives the same line.
Python 3.8 or newer, standard library only.
"""

import importlib
import importlib.metadata
import json
import os
import subprocess
import sys


def uv_version(prefix):
    """The installed uv's version (its binary's answer), None when uv is not installed."""
    try:
        recorded = importlib.metadata.version("uv")
    except importlib.metadata.PackageNotFoundError:
        return None
    # the package's files, not only its record: a half-removed uv is a broken venv
    importlib.import_module("uv")

    answer = subprocess.run(
        [os.path.join(prefix, "bin", "uv"), "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    found = answer[1] if len(answer) > 1 else ""
    if found != recorded:
        sys.exit(f"uv's binary answers {' '.join(answer)!r}, its package is uv {recorded}")
    return found


def state():
    prefix = os.path.dirname(os.path.dirname(sys.executable))
    if sys.prefix == sys.base_prefix or os.path.realpath(sys.prefix) != os.path.realpath(prefix):
        sys.exit(f"{sys.executable} does not run as the venv {prefix} (no pyvenv.cfg)")
    import pip

    return {
        "python": sys.version,
        "prefix": sys.prefix,
        "pip": pip.__version__,
        "uv": uv_version(prefix),
    }


if __name__ == "__main__":
    print(json.dumps(state(), sort_keys=True))
