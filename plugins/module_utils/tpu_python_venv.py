# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The venv already at the python role's venv path: its Python, and why the role refuses it.

The role never replaces a venv of another Python; the filters python_venv_found and
python_venv_problem read this module in its look at the host (roles/python/tasks/host.yml).
"""

from __future__ import annotations

import re

# pyvenv.cfg names the venv's Python as version (Python 3.11 and older) or version_info.
CFG_VERSION_RE = re.compile(r"^version(_info)?\s*=\s*([0-9]+\.[0-9]+)", re.MULTILINE)


def venv_version(cfg: str | None) -> str:
    """The major.minor Python of a venv from its pyvenv.cfg text: ``''`` without a venv
    (``cfg`` None), ``'unknown'`` when the file names none."""
    if cfg is None:
        return ""
    found = CFG_VERSION_RE.search(cfg)
    return found.group(2) if found else "unknown"


def venv_problem(found: str, version: str, venv: str) -> str:
    """Why the venv at ``venv`` (of Python ``found``, from :func:`venv_version`) does not fit
    ``tpu_python_version`` ``version``, or ``''``."""
    if found in ("", version):
        return ""
    return (
        f"The venv path {venv} already holds a venv of Python {found}, but tpu_python_version"
        f" is '{version}'. The role never replaces a venv: move it away, or set tpu_venv_path"
        " to another path."
    )
