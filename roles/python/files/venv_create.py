# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Create the login user's venv, with the pip (and setuptools) that `python -m venv` gives it.

tasks/venv.yml runs it as the venv's owner with the wanted interpreter:
`pythonX.Y -c "<this file>" VENV CLEAR UV`. CLEAR is "clear" to empty a broken venv first, UV
the path of the role's uv binary or "" when pip is the installer.

`python -m venv` installs pip by running ensurepip, which starts pip to install its own wheel
and compiles it: about 3 CPU-seconds a worker, most of a cold venv. With uv at hand the venv
is made without pip (`python -m venv --without-pip`) and uv installs the very wheels ensurepip
would have installed (ensurepip's own list: the Debian python-wheels folder or the bundled
copies), offline, in a tenth of a second. When that list cannot be read (a Python whose
ensurepip looks different), or without uv, it is `python -m venv` as before. It prints one
line saying which way the venv was made.
"""

import os
import subprocess
import sys


def ensurepip_wheels():
    """The wheel files ensurepip would install, or [] when they cannot be told.

    Python 3.10 to 3.12 list them with ensurepip._get_packages() (pip, and setuptools before
    3.12); 3.13 names its one pip wheel with ensurepip._get_pip_whl_path_ctx().
    """
    try:
        import ensurepip

        if hasattr(ensurepip, "_get_packages"):
            bundled = os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")
            paths = [
                package.wheel_path or os.path.join(bundled, package.wheel_name or "")
                for package in ensurepip._get_packages().values()
            ]
        else:
            with ensurepip._get_pip_whl_path_ctx() as path:
                paths = [str(path)]
        if not paths or not all(p.endswith(".whl") and os.path.isfile(p) for p in paths):
            return []
        return sorted(paths)
    except Exception:  # noqa: BLE001 - any surprise means: let ensurepip do it
        return []


def main(argv):
    venv, clear, uv = argv[1], argv[2] == "clear", argv[3]
    base = [sys.executable, "-m", "venv"] + (["--clear"] if clear else [])
    wheels = ensurepip_wheels() if uv else []
    if not wheels:
        subprocess.run([*base, venv], check=True)
        print("venv made with python -m venv (ensurepip)")
        return 0
    subprocess.run([*base, "--without-pip", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    options = ["--quiet", "--offline", "--no-cache", "--no-deps", "--python", python]
    subprocess.run(
        [uv, "pip", "install", *options, *wheels],
        check=True,
        env=dict(os.environ, UV_NO_PROGRESS="1"),
    )
    names = ", ".join(os.path.basename(w).split("-py")[0] for w in wheels)
    print(f"venv made without pip; uv installed ensurepip's wheels: {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
