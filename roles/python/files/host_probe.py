# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""What the python role's decisions need from the host, in one remote call; it only looks.

tasks/host.yml runs it with the host's own python, as root (also in check mode):
`python3 -c "<this file>" VERSION USER VENV UV_DIR MARKER CHECK`. It prints one JSON object:

- apt_policy: apt's answer for pythonVERSION (the host's own sources can offer what the release
  lacks: an internal mirror, a local repository in the image); '' without apt.
- passwd: the login user's passwd entry; null when there is no such user.
- venv_cfg: the text of VENV/pyvenv.cfg; null when there is none.
- tool: the tool venv of uv at UV_DIR (see tool_venv); UV_DIR is '' when uv is not the installer.

MARKER is the name of the file the role keeps in the tool venv, CHECK the source of
files/tool_venv_check.py. Python 3.8 or newer, standard library only.
"""

import json
import os
import pwd
import re
import stat
import subprocess
import sys

# What `python -m venv` and pip leave at the top of a venv, in bin/, in lib/, and in
# site-packages when only pip, setuptools and uv are installed: a tool venv that the role made
# before it marked its folders. Anything else there is not the role's.
VENV_TOP = {".gitignore", "bin", "include", "lib", "lib64", "pyvenv.cfg"}
TOOL_BIN = re.compile(
    r"activate(\.csh|\.fish)?|Activate\.ps1|pip(3(\.[0-9]+)?)?|python(3(\.[0-9]+)?)?"
    "|\U0001d70bthon|uvx?"
)
TOOL_LIB = re.compile(r"python3\.[0-9]+")
TOOL_SITE = re.compile(
    r"pip|setuptools|pkg_resources|_distutils_hack|uv|__pycache__|distutils-precedence\.pth"
    r"|(pip|setuptools|uv)-[^-/]+\.dist-info"
)
CHECK_TIMEOUT = 120
CHECK_ENV = {"LC_ALL": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}


def allowed(marker):
    """What tpu_python_uv_dir may name on the worker, in words."""
    owner = pwd.getpwuid(os.geteuid()).pw_name
    return (
        "allowed: a folder that does not exist yet, an empty folder, or the tool venv this role"
        f" made there (marked by its {marker} file, or from before the marker a venv with"
        f" nothing but pip, setuptools and uv in it), owned by {owner} and writable by no one"
        " else, and not reached through a symbolic link. The role never empties another folder:"
        " move it away, or set tpu_python_uv_dir to another path"
    )


def listing(path):
    """The names in a folder, [] when it is not one or cannot be read."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def made_by_the_role_before(path, entries):
    """A venv holding nothing but pip, setuptools and uv: what the role made before it kept a
    marker in its tool venv (so such a venv is taken over, and rebuilt when it breaks)."""
    if "pyvenv.cfg" not in entries or not set(entries) <= VENV_TOP:
        return False
    if not stat.S_ISREG(os.lstat(os.path.join(path, "pyvenv.cfg")).st_mode):
        return False
    if not all(TOOL_BIN.fullmatch(name) for name in listing(os.path.join(path, "bin"))):
        return False
    lib = os.path.join(path, "lib")
    for version in listing(lib):
        if not TOOL_LIB.fullmatch(version) or set(listing(os.path.join(lib, version))) - {
            "site-packages"
        }:
            return False
        site = listing(os.path.join(lib, version, "site-packages"))
        if not all(TOOL_SITE.fullmatch(name) for name in site):
            return False
    return True


def owned(info):
    """Owned by the user who runs this (root) and writable by no one else."""
    return (
        info.st_uid == os.geteuid()
        and not info.st_mode & stat.S_IWOTH
        and not (info.st_mode & stat.S_IWGRP and info.st_gid != 0)
    )


def run_check(path, check):
    """The tool venv's python runs files/tool_venv_check.py: (healthy, uv version, error)."""
    try:
        done = subprocess.run(
            [os.path.join(path, "bin", "python"), "-I", "-B", "-c", check],
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT,
            cwd="/",
            env=CHECK_ENV,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return False, None, str(error)
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        return False, None, f"exit code {done.returncode}: " + (lines[-1] if lines else "")
    try:
        return True, json.loads(done.stdout)["uv"], ""
    except (ValueError, KeyError, TypeError):
        return False, None, "it printed no state: " + done.stdout.strip()[:200]


def tool_venv(path, marker, check):
    """What is at the tool venv's path and what the role may do there.

    state: absent or empty (the role creates the venv), ok, broken (the role rebuilds it: the
    folder is its own), refused (problem says why, naming tpu_python_uv_dir and its value).
    marked: the role's marker file is there (a venv of the role's without it gets one).
    uv: the installed uv's version (null: none); uv_bin: bin/uv exists; error: why it is broken.
    """
    found = {"state": "", "problem": "", "marked": False, "uv": None, "uv_bin": False, "error": ""}

    def refused(reason):
        shown = json.dumps(path)
        problem = f"tpu_python_uv_dir is {shown}: {reason}; {allowed(marker)}."
        return dict(found, state="refused", problem=problem)

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as error:
        return refused(f"it cannot be looked at ({error.strerror})")
    if info is not None and stat.S_ISLNK(info.st_mode):
        return refused(f"it is a symbolic link to {os.readlink(path)}")
    real = os.path.realpath(path)
    if real != path:
        return refused(f"it is reached through a symbolic link (it is {real})")
    if info is None:
        return dict(found, state="absent")
    if not stat.S_ISDIR(info.st_mode):
        return refused("it is not a folder")
    if not owned(info):
        return refused(f"it is owned by uid {info.st_uid} with mode {oct(info.st_mode & 0o7777)}")
    entries = listing(path)
    if not entries:
        return dict(found, state="empty")
    try:
        mark = os.lstat(os.path.join(path, marker))
        found["marked"] = stat.S_ISREG(mark.st_mode) and mark.st_uid == os.geteuid()
    except OSError:
        pass
    if not found["marked"] and not made_by_the_role_before(path, entries):
        more = f" and {len(entries) - 5} more" if len(entries) > 5 else ""
        shown = ", ".join(entries[:5]) + more
        return refused(f"it holds other things than a tool venv made by this role ({shown})")
    healthy, uv, error = run_check(path, check)
    found["uv_bin"] = os.path.exists(os.path.join(path, "bin", "uv"))
    return dict(found, state="ok" if healthy else "broken", uv=uv, error=error)


def apt_policy(version):
    try:
        return subprocess.run(
            ["apt-cache", "policy", "python" + version],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    except OSError:
        return ""


def passwd(user):
    try:
        return list(pwd.getpwnam(user))
    except KeyError:
        return None


def venv_cfg(venv):
    try:
        with open(venv + "/pyvenv.cfg", encoding="utf-8") as cfg:
            return cfg.read()
    except FileNotFoundError:
        return None


def main(argv):
    version, user, venv, uv_dir, marker, check = argv
    return {
        "apt_policy": apt_policy(version),
        "passwd": passwd(user),
        "venv_cfg": venv_cfg(venv),
        "tool": tool_venv(uv_dir, marker, check) if uv_dir else {"state": "unused"},
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
