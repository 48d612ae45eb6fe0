# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Where a worker's Python comes from: the distribution's own packages or the deadsnakes PPA.

The filters python_source (the python role's choice) and python_packages_ahead (the packages
bootstrap.yml installs up front) read it, so both decide the same way.
"""

from __future__ import annotations

import re
from typing import Any

# What each release ships in its own archive (main or universe), by major.minor.
# Ubuntu 20.04 has 3.9 in universe next to the default 3.8; 22.04 has 3.11 in universe
# (jammy-updates) next to the default 3.10; Debian ships exactly one python3.X per release.
SYSTEM: dict[tuple[str, str], tuple[str, ...]] = {
    ("Ubuntu", "20.04"): ("3.8", "3.9"),
    ("Ubuntu", "22.04"): ("3.10", "3.11"),
    ("Ubuntu", "24.04"): ("3.12",),
    ("Debian", "11"): ("3.9",),
    ("Debian", "12"): ("3.11",),
    ("Debian", "13"): ("3.13",),
}

# What the deadsnakes PPA publishes per Ubuntu LTS release. It leaves out the version the
# release itself ships, and publishes for LTS releases only. 20.04 builds stay published but
# are no longer updated.
DEADSNAKES: dict[str, tuple[str, ...]] = {
    "20.04": ("3.7", "3.10", "3.11", "3.12", "3.13"),
    "22.04": ("3.7", "3.8", "3.9", "3.12", "3.13", "3.14"),
    "24.04": ("3.7", "3.8", "3.9", "3.10", "3.11", "3.13", "3.14"),
}

VERSION_RE = re.compile(r"^3\.([0-9]{1,2})\Z")
CANDIDATE_RE = re.compile(r"^\s*Candidate:\s*(\S+)\s*$", re.MULTILINE)
PREFERENCES = ("auto", "system", "deadsnakes")


def _release(distribution: str, distribution_version: str) -> str:
    if distribution == "Debian":
        return distribution_version.split(".", 1)[0]
    return distribution_version


def _packages(version: str) -> list[str]:
    return [f"python{version}", f"python{version}-venv", f"python{version}-dev"]


def _refuse(message: str) -> dict[str, Any]:
    return {"ok": False, "source": "", "packages": [], "interpreter": "", "message": message}


def _accept(version: str, source: str, message: str) -> dict[str, Any]:
    return {
        "ok": True,
        "source": source,
        "packages": _packages(version),
        "interpreter": f"/usr/bin/python{version}",
        "message": message,
    }


def apt_candidate(apt_policy: Any, package: str = "") -> str:
    """The candidate version of ``package`` in ``apt-cache policy`` output, or '' when none.

    apt-cache reads its argument as a pattern (``python3.15`` also matches
    ``postgresql-plpython3-15``), so with ``package`` only the block headed ``<package>:``
    counts.
    """
    text = str(apt_policy or "")
    if package:
        blocks = re.split(r"^(?=\S[^\n]*:\s*$)", text, flags=re.MULTILINE)
        text = next((b for b in blocks if b.split("\n", 1)[0].strip() == f"{package}:"), "")
    match = CANDIDATE_RE.search(text)
    if not match or match.group(1) == "(none)":
        return ""
    return match.group(1)


def _shipped(versions: tuple[str, ...]) -> str:
    return " and ".join(f"python{v}" for v in versions)


def _alternatives(distribution: str, release: str) -> str:
    """What the release offers and what to set instead, as one sentence fragment."""
    shipped = SYSTEM.get((distribution, release), ())
    if distribution != "Ubuntu":
        if len(shipped) == 1:
            return (
                f"{distribution} {release} ships {_shipped(shipped)} and the deadsnakes PPA is "
                f"for Ubuntu only; set tpu_python_version: '{shipped[0]}'"
            )
        return f"{distribution} {release} ships {_shipped(shipped)}; set one of those"
    ppa = DEADSNAKES.get(release, ())
    choices = sorted(set(shipped) | set(ppa), key=lambda v: int(v.split(".")[1]))
    return (
        f"{distribution} {release} ships {_shipped(shipped)} and the deadsnakes PPA publishes "
        f"{', '.join(ppa) or 'nothing'} for it; set tpu_python_version to one of "
        f"{', '.join(choices)}"
    )


def python_source(
    version: Any,
    distribution: str,
    distribution_version: Any,
    prefer: str = "auto",
    apt_policy: Any = "",
) -> dict[str, Any]:
    """Decide where Python ``version`` comes from on ``distribution`` ``distribution_version``."""
    version = str(version)
    release = _release(str(distribution), str(distribution_version))
    where = f"{distribution} {release}"
    if prefer not in PREFERENCES:
        return _refuse(
            f"tpu_python_source is '{prefer}'; it must be one of {', '.join(PREFERENCES)}."
        )
    match = VERSION_RE.match(version)
    if not match:
        return _refuse(
            f"tpu_python_version is '{version}'; it must be major.minor such as '3.10' or "
            "'3.11' (quote it in YAML: an unquoted 3.10 is the number 3.1)."
        )
    if int(match.group(1)) < 7:
        return _refuse(
            f"tpu_python_version is '{version}', older than any TPU framework supports; "
            "did you mean 3.10 (an unquoted 3.10 in YAML is the number 3.1: quote it)?"
        )
    if distribution not in ("Ubuntu", "Debian"):
        return _refuse(
            f"tpu_python_version '{version}' cannot be installed on {where}: the python role "
            "supports Ubuntu (20.04, 22.04, 24.04, the TPU VM images) and Debian (11, 12, 13)."
        )

    known = (distribution, release) in SYSTEM
    shipped = SYSTEM.get((distribution, release), ())
    ppa = DEADSNAKES.get(release, ()) if distribution == "Ubuntu" else ()
    candidate = apt_candidate(apt_policy, f"python{version}")
    from_sources = (
        f"python{version} {candidate} from the host's apt sources ({where} itself ships "
        f"{_shipped(shipped) or 'no python3'})."
    )

    if prefer == "system":
        if known and version not in shipped and candidate:
            return _accept(version, "system", from_sources)
        if known and version not in shipped:
            return _refuse(
                f"tpu_python_version '{version}' with tpu_python_source 'system': "
                f"{_alternatives(distribution, release)}"
                + (", or set tpu_python_source: auto." if distribution == "Ubuntu" else ".")
            )
        note = "" if known else f" ({where} is not in the role's table: trusted as asked)"
        return _accept(version, "system", f"python{version} from the {where} archive{note}.")

    if prefer == "deadsnakes":
        if distribution != "Ubuntu":
            return _refuse(
                f"tpu_python_source is 'deadsnakes' but {where} is not Ubuntu: "
                f"{_alternatives(distribution, release)}, with tpu_python_source: auto."
            )
        note = "" if release in DEADSNAKES else f" ({where} is not in the role's table)"
        return _accept(version, "deadsnakes", f"python{version} from the deadsnakes PPA{note}.")

    if version in shipped:
        return _accept(version, "system", f"python{version} from the {where} archive.")
    if version in ppa:
        return _accept(
            version,
            "deadsnakes",
            f"python{version} from the deadsnakes PPA ({where} ships {_shipped(shipped)}).",
        )
    if candidate:
        return _accept(version, "system", from_sources)
    if not known:
        return _refuse(
            f"tpu_python_version '{version}': the python role does not know what {where} "
            "ships; set tpu_python_source to 'system' (the archive has the version) or "
            "'deadsnakes' (Ubuntu only) to choose yourself."
        )
    return _refuse(
        f"tpu_python_version '{version}' is not available on {where}: "
        f"{_alternatives(distribution, release)}."
    )
