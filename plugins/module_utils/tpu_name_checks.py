# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The checks of Google Cloud names, in the manner of :mod:`tpu_checks` (``''`` when the value
is fine, else one sentence that names the variable, the value given and what is allowed):

* :func:`gcp_name_problem`: a Google Cloud project ID, zone or TPU node ID, or a list of them,
  as the TPU API takes them in its paths (:data:`GCP_NAMES`).
* :func:`bucket_problem`: a Cloud Storage bucket name as Google's naming rules allow it.

:func:`name_list` reads a list of names as users give them: a list, or a comma-separated
string (``-e tpu_recover_nodes=pod-a,pod-b``).

The filter gcp_name_problem exposes the first to Jinja; the storage_plan filter checks buckets
with the second; the filter name_list exposes name_list.
"""

from __future__ import annotations

import re
from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import _shown

# Google Cloud names, as the TPU API takes them in its paths: (pattern, what it is, more words).
GCP_NAMES = {
    "project": (
        re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]"),
        "a project ID",
        "such as my-project (6 to 30 lowercase letters, digits and hyphens, starting with a "
        "letter, not ending with a hyphen)",
    ),
    "zone": (re.compile(r"[a-z]+-[a-z]+[0-9]+-[a-z]"), "a zone", "such as us-central2-b"),
    "node": (
        re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"),
        "a node ID",
        "of 1 to 63 lowercase letters, digits and hyphens, starting with a letter and not "
        "ending with a hyphen",
    ),
}


def name_list(value: Any) -> Any:
    """A comma-separated string as the list of its parts (each trimmed, empty ones dropped);
    anything else as it is, for the checks to refuse what is not a list."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


def gcp_name_problem(value: Any, name: str, kind: str = "project", many: bool = False) -> str:
    """Why ``value`` is not a project ID (``kind`` project) or a zone (``kind`` zone) for
    ``name``; ``''`` when it is. With ``many``, a list of them or a comma-separated string (as
    ``-e`` gives), which may be empty."""
    pattern, what, more = GCP_NAMES[kind]
    allowed = f"a list (or comma-separated string) of {kind}s, each {what} {more}"
    if not many:
        allowed, items = f"{what} {more}", [value]
    elif isinstance(value, str):
        items = name_list(value)
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        return f"{name} is {_shown(value)}: not a list; allowed: {allowed}."
    for item in items:
        if not isinstance(item, str) or not pattern.fullmatch(item):
            which = f"{_shown(item)} is not {what}" if many else f"not {what}"
            return f"{name} is {_shown(value)}: {which}; allowed: {allowed}."
    return ""


# Cloud Storage bucket names (Google's naming rules): 3 to 63 characters of lowercase letters,
# digits, '-', '_' and '.', starting and ending with a letter or digit; with dots, up to 222
# characters in dot-separated parts of at most 63 each. Never an IP address in dotted-decimal
# form, never starting with "goog", never holding "google" or a look-alike of it.
_BUCKET = re.compile(r"[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?")
_BUCKET_GOOGLE = re.compile(r"g[o0]{2}g[l1]e")
BUCKET_ALLOWED = (
    "a bucket name without gs:// (3 to 63 lowercase letters, digits, '-', '_' and '.', starting"
    " and ending with a letter or digit; up to 222 with dots, each dot-separated part at most 63;"
    " not an IP address, not starting with goog, not holding google)"
)


def bucket_problem(value: Any, name: str) -> str:
    """Why ``value`` is not a Cloud Storage bucket name for ``name``; ``''`` when it is."""

    def problem(reason: str) -> str:
        return f"{name} is {_shown(value)}: {reason}; allowed: {BUCKET_ALLOWED}."

    if not isinstance(value, str) or not _BUCKET.fullmatch(value):
        return problem("not a bucket name")
    longest = 222 if "." in value else 63
    if not 3 <= len(value) <= longest or max(len(part) for part in value.split(".")) > 63:
        return problem("too short or too long")
    if "." in value and (".." in value or re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", value)):
        return problem("an IP address or an empty dot-separated part")
    if value.startswith("goog") or _BUCKET_GOOGLE.search(value):
        return problem("Google refuses names that start with goog or hold google")
    return ""
