# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Value checks shared by the collection's roles, playbooks, modules and inventory plugin.

Every check returns ``''`` when the value is fine, else one sentence that names the variable,
the value given and what is allowed, ready for an ``assert``'s ``fail_msg`` or ``fail_json``:

* :func:`path_problem`: an absolute, normalised path that is not ``/`` or a system folder, with
  optional rules per variable (``under``: strictly inside one of these folders; ``parent``:
  directly in one of them, as libtpu's lock files in ``/tmp``; ``not_under``: more folders that
  must not hold it; ``basename``: a pattern for its last part).
* :func:`device_glob_problem`: a glob of TPU device files only (``/dev/accel*``,
  ``/dev/accel/*``, ``/dev/vfio/[0-9]*``), never one that matches other devices.
* :func:`number_problem`: a number (or an int-like string, as ``-e`` gives) within bounds.
* :func:`boolean_problem`: true or false as Ansible's ``bool`` reads them (``yes``, ``off``,
  ``1``... as ``-e`` gives them).
* :data:`OPTION_LIMITS` and :func:`option_problems`: the bounds of the numeric options every TPU
  module and the inventory plugin take (timeouts, poll intervals, retries), in one table.

The network checks (CIDR lists, single addresses) are in ``tpu_network_checks``; the checks of
Google Cloud names (project IDs, zones, node IDs, bucket names) in ``tpu_name_checks``; the
checks of an inventory source file (keys, states, host name template) in
``tpu_inventory_checks``.

A path (here and in ``tpu_local_paths``) is refused when it holds a character that is not what
it looks like: a control character (a line break, an escape...) or a Unicode bidirectional
control, which shows the text in another order than it has (:func:`unsafe_character`). A long
value is shown shortened in a message (its start and its length).

The filter plugins of the same names (``plugins/filter/<name>.py``, one file each) expose these
to Jinja.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

# A folder that is never a valid place for anything the collection manages, with all below it.
SYSTEM_TREES = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lost+found",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr/bin",
    "/usr/include",
    "/usr/lib",
    "/usr/libexec",
    "/usr/sbin",
    "/usr/share",
    "/usr/src",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/lock",
    "/var/mail",
    "/var/run",
    "/var/spool",
)
_LIB_TREE = re.compile(r"^/(usr/)?lib[^/]*(/|\Z)")
# Folders that may hold what the collection manages, but are never that thing themselves.
SYSTEM_FOLDERS = (
    "/",
    "/home",
    "/media",
    "/mnt",
    "/opt",
    "/root",
    "/snap",
    "/srv",
    "/tmp",
    "/usr",
    "/usr/local",
    "/usr/local/bin",
    "/usr/local/lib",
    "/usr/local/sbin",
    "/usr/local/share",
    "/var",
    "/var/cache",
    "/var/lib",
    "/var/log",
    "/var/tmp",
)
# C0 and C1 control characters, DEL, and the Unicode bidirectional controls: embeddings and
# overrides (U+202A-U+202E), isolates (U+2066-U+2069) and the marks (U+200E, U+200F, U+061C).
_UNSAFE_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# A string longer than this is shown by its start and its length; a list or mapping whose JSON
# is longer than _SHOWN_JSON is cut there.
_SHOWN_TEXT = 100
_SHOWN_JSON = 2000


def _shown(value: Any) -> str:
    """The value as the user wrote it, quoted like Jinja's to_json; shortened when long."""
    if isinstance(value, str) and len(value) > _SHOWN_TEXT:
        return f"{json.dumps(value[:60] + '...')} ({len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 300:
        digits = math.floor(value.bit_length() * math.log10(2)) + 1
        return f"a whole number of about {digits} digits"
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        try:
            text = repr(value)
        except ValueError:  # holds an int too long to write out
            return f"a {type(value).__name__} too large to show"
    if len(text) > _SHOWN_JSON:
        return f"{text[: _SHOWN_JSON // 2]}... ({len(text)} characters)"
    return text


def unsafe_character(value: str) -> str:
    """The first control or bidirectional-text character in ``value``, described (``''`` when
    there is none), such as ``a control character (U+001B)``."""
    found = _UNSAFE_CHARS.search(value)
    if not found:
        return ""
    char = found.group(0)
    code = f"U+{ord(char):04X}"
    if char == "\n":
        return f"a control character ({code}, a line break)"
    if ord(char) < 0xA0:
        return f"a control character ({code})"
    return f"a bidirectional-text control character ({code}), which shows text out of order"


def _within(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or inside it."""
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder if folder == "/" else folder + "/")


def _folders(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value]


def system_folder(path: str) -> str:
    """The system folder that makes ``path`` unusable, or ``''``."""
    if path in SYSTEM_FOLDERS:
        return path
    lib = _LIB_TREE.match(path)
    if lib:
        return lib.group(0).rstrip("/")
    for tree in SYSTEM_TREES:
        if _within(path, tree):
            return tree
    return ""


def _path_rules(
    under: list[str], parent: list[str], not_under: list[str], basename: str
) -> str:  # what is allowed, in words
    words = "an absolute, normalised path without spaces or control characters"
    if basename:
        words += f" whose last part matches {basename}"
    if parent:
        words += " directly in " + " or ".join(parent)
    elif under:
        words += " inside " + " or ".join(under)
    words += ", not / or a system folder (such as /etc, /usr, /var, /tmp, /home or /opt themselves)"
    if not_under:
        words += " and not in " + ", ".join(not_under)
    return words


def path_problem(
    value: Any,
    name: str,
    under: str | Iterable[str] | None = None,
    parent: str | Iterable[str] | None = None,
    not_under: str | Iterable[str] | None = None,
    basename: str = "",
) -> str:
    """Why ``value`` is not an acceptable path for the variable ``name``; ``''`` when it is.

    ``basename`` is a regular expression the path's last part must match (libtpu's lock names).
    """
    under_l, parent_l, not_under_l = _folders(under), _folders(parent), _folders(not_under)
    allowed = _path_rules(under_l, parent_l, not_under_l, basename)

    def problem(reason: str) -> str:
        return f"{name} is {_shown(value)}: {reason}; allowed: {allowed}."

    if not isinstance(value, str) or not value:
        return problem("not a path")
    unsafe = unsafe_character(value)
    if unsafe:
        return problem(f"it contains {unsafe}")
    if re.search(r"\s", value):
        return problem("it contains spaces")
    if not value.startswith("/"):
        return problem("it is not absolute")
    if ".." in value.split("/"):
        return problem("it contains '..'")
    clean = posixpath.normpath(value)
    if clean.startswith("//"):
        clean = clean[1:]
    if clean != value:
        return problem(f"it is not normalised (write {clean})")
    folder = system_folder(value)
    if folder == value:
        return problem("it is a system folder")
    if folder:
        return problem(f"it is in the system folder {folder}")
    for bad in not_under_l:
        if _within(value, bad):
            return problem(f"it is in {bad}")
    if parent_l and posixpath.dirname(value) not in [p.rstrip("/") or "/" for p in parent_l]:
        return problem("it is not directly in " + " or ".join(parent_l))
    if under_l and not any(_within(value, f) and value != f.rstrip("/") for f in under_l):
        return problem("it is not inside " + " or ".join(under_l))
    if basename and not re.fullmatch(basename, posixpath.basename(value)):
        return problem(f"its last part {posixpath.basename(value)} does not match {basename}")
    return ""


# TPU device files, after "/dev/": accel<N> up to v4, accel/accel<N> on newer kernels, vfio/<N>
# from v5e/v5p on. Globs may use digits, '*', '?' and digit classes ([0-9]) after the prefix, so
# "/dev/*", "/dev/fuse" or "/dev/vfio/vfio" (the VFIO container) never pass. tpu-unlock carries
# the same pattern (its DEVICE_FAMILIES; a unit test keeps the two equal).
DEVICE_FAMILIES = re.compile(
    r"accel(?:/accel)?(?:[0-9*?]|\[[0-9-]+\])*|accel/(?:[0-9*?]|\[[0-9-]+\])+"
    r"|vfio/(?:[0-9]|\[[0-9-]+\])(?:[0-9*?]|\[[0-9-]+\])*"
)
DEVICE_GLOBS_ALLOWED = (
    "/dev/accel* (or /dev/accel[0-9]*, /dev/accel0) up to v4, /dev/accel/* on newer kernels,"
    " /dev/vfio/[0-9]* from v5e/v5p on (after the prefix only digits, '*', '?' and classes such"
    " as [0-9])"
)


def device_glob_problem(value: Any, name: str) -> str:
    """Why ``value`` is not a glob of TPU device files for ``name``; ``''`` when it is."""
    if not isinstance(value, str) or not value:
        reason = "not a glob pattern"
    elif not value.startswith("/dev/") or not DEVICE_FAMILIES.fullmatch(value[5:]):
        reason = "not a TPU device pattern (it could match other devices' files)"
    else:
        return ""
    return f"{name} is {_shown(value)}: {reason}; allowed: {DEVICE_GLOBS_ALLOWED}."


# A number written with more characters than this is refused before it is converted: Python
# refuses to convert a string of more than 4300 digits, and no bound here needs 20.
_NUMBER_CHARS = 64


def _number(value: Any, integer: bool) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return None if integer and not value.is_integer() else (int(value) if integer else value)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"[+-]?[0-9]+", text):
            return int(text)
        if not integer and re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)", text):
            return float(text)
    return None


def _bound(number: float) -> str:
    """A bound as people write it: 2592000, not 2.592e+06; 0.05 as it is."""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def number_problem(
    value: Any,
    name: str,
    minimum: float | None = None,
    maximum: float | None = None,
    integer: bool = True,
) -> str:
    """Why ``value`` is not a number (an int-like string from ``-e`` counts) in the bounds."""
    kind = "a whole number" if integer else "a number"
    if minimum is not None and maximum is not None:
        allowed = f"{kind} from {_bound(minimum)} to {_bound(maximum)}"
    elif minimum is not None:
        allowed = f"{kind} of at least {_bound(minimum)}"
    elif maximum is not None:
        allowed = f"{kind} of at most {_bound(maximum)}"
    else:
        allowed = kind
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} is {_shown(value)}: not a finite number; allowed: {allowed}."
    if isinstance(value, str) and len(value.strip()) > _NUMBER_CHARS:
        return (
            f"{name} is {_shown(value)}: {len(value.strip())} characters, too long for a number;"
            f" allowed: {allowed}."
        )
    number = _number(value, integer)
    if number is None:
        return f"{name} is {_shown(value)}: not {kind}; allowed: {allowed}."
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        return f"{name} is {_shown(value)}: out of range; allowed: {allowed}."
    return ""


BOOLEANS_ALLOWED = "true or false (yes/no, on/off, 1/0 also work)"


def boolean_problem(value: Any, name: str) -> str:
    """Why ``value`` is not a boolean as Ansible's ``bool`` reads it (a string from ``-e``
    counts); ``''`` when it is."""
    try:
        boolean(value, strict=True)
    except TypeError:
        return f"{name} is {_shown(value)}: not true or false; allowed: {BOOLEANS_ALLOWED}."
    return ""


# The numeric options of the TPU modules and the inventory plugin: one table, one place.
OPTION_LIMITS: dict[str, dict[str, Any]] = {
    "timeout": {"minimum": 1, "maximum": 7 * 86400},
    "poll_interval": {"minimum": 0.05, "maximum": 3600, "integer": False},
    "retries": {"minimum": 1, "maximum": 100},
    "requeue_tries": {"minimum": 0, "maximum": 100},
    "retry_max_sleep": {"minimum": 0, "maximum": 600, "integer": False},
    "request_timeout": {"minimum": 1, "maximum": 3600, "integer": False},
    "page_size": {"minimum": 1, "maximum": 1000},
    "retry_backoff": {"minimum": 0, "maximum": 60, "integer": False},
}


def option_problems(options: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Problems of the numeric options present (and not None) in ``options``."""
    found = []
    for key, limits in OPTION_LIMITS.items():
        if options.get(key) is not None:
            problem = number_problem(options[key], prefix + key, **limits)
            if problem:
                found.append(problem)
    return found


def check_module_options(module: Any) -> None:
    """Fail the module (before any API call) when a numeric option is out of bounds."""
    problems = option_problems(module.params)
    if problems:
        module.fail_json(msg=" ".join(problems), problems=problems)
