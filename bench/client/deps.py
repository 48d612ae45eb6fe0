"""What a client library brings with it: the closure of its requirements and their size on disk.

Read from the metadata of an installed environment (``importlib.metadata``): each
distribution's ``Requires-Dist`` (markers evaluated for this interpreter, no extras) and the
files its ``RECORD`` lists. The pure parts (:func:`requirement_names`, :func:`closure`,
:func:`summarize`) take plain data so that they can be tested without an environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement


def canonical(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_names(
    requires: Iterable[str], environment: Mapping[str, str] | None = None
) -> list[str]:
    """Names of the requirements that apply here: markers evaluated, extras' entries left out."""
    names: list[str] = []
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None:
            env = dict(environment or {})
            env.setdefault("extra", "")
            if not req.marker.evaluate(env):
                continue
        name = canonical(req.name)
        if name not in names:
            names.append(name)
    return names


def closure(roots: Iterable[str], requires_of: Callable[[str], list[str]]) -> list[str]:
    """Every distribution the roots need, the roots included, in the order first reached.

    ``requires_of(name)`` gives a distribution's direct requirements; a name it does not know
    (not installed) stays in the closure with no requirements of its own.
    """
    seen: list[str] = []
    stack = [canonical(r) for r in reversed(list(roots))]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.append(name)
        stack.extend(reversed([n for n in requires_of(name) if n not in seen]))
    return seen


def summarize(names: Iterable[str], info: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Count, bytes and compiled distributions of a set of names.

    ``info[name]`` holds ``bytes`` (installed size) and ``compiled`` (ships native extension
    modules); a name missing from ``info`` is counted under ``missing``.
    """
    names = list(names)
    known = [n for n in names if n in info]
    return {
        "count": len(names),
        "bytes": sum(int(info[n]["bytes"]) for n in known),
        "compiled": sorted(n for n in known if info[n]["compiled"]),
        "missing": sorted(n for n in names if n not in info),
        "names": sorted(names),
    }


# -- the installed environment --------------------------------------------------------------

NATIVE_SUFFIXES = (".so", ".pyd", ".dylib")


def installed() -> dict[str, Any]:
    """name -> distribution, for the interpreter running this."""
    found: dict[str, Any] = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            found.setdefault(canonical(name), dist)
    return found


def dist_info(dist: Any) -> dict[str, Any]:
    """Installed size in bytes (the files of its RECORD) and whether it ships native code."""
    total = 0
    compiled = False
    for file in dist.files or []:
        path = dist.locate_file(file)
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if str(file).endswith(NATIVE_SUFFIXES) or ".so." in str(file):
            compiled = True
    return {"bytes": total, "compiled": compiled}


def measure(roots: Iterable[str]) -> dict[str, Any]:
    """The closure of ``roots`` in this environment, summarized."""
    dists = installed()

    def requires_of(name: str) -> list[str]:
        dist = dists.get(name)
        return requirement_names(dist.requires or []) if dist is not None else []

    names = closure(roots, requires_of)
    info = {n: dist_info(dists[n]) for n in names if n in dists}
    return summarize(names, info)


def version(name: str) -> str:
    """The installed version of a distribution, or '' when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""
