# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Which values of a node are secret, and how the modules keep them out of output.

The rule: the values of the node metadata keys in :data:`SECRET_KEYS` (``startup-script``,
``shutdown-script``) are secret. Every worker runs them as root, and the pull bootstrap
(``playbooks/provision.yml`` with ``tpu_provision_bootstrap=pull``) writes the TPU API's access
token (``tpu_provision_pull_auth_kind=accesstoken``) and ``tpu_provision_pull_vars`` into its
startup-script; a user's own script may hold credentials too.

The modules of this collection never return or log such a value. Wherever one would appear in
a result (the API's JSON, a spec, a diff, the differences, a journal entry, the module's own
arguments under ``invocation``) it is replaced by a *hidden marker* (:func:`marker`), such as
``<hidden startup-script, 7120 characters, the cloudtpu.pod pull bootstrap>``, so a result
still says which keys a node has and whether it bootstraps itself. A marker given back to a
module as a value stands for the value it hides: ``cloudtpu.pod.tpu_node`` takes that value
from the node itself, or from the recovery journal on the controller (``tpu_journal.py``, a
0600 file in a 0700 folder), which keeps the real values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible.module_utils.basic import AnsibleModule

SECRET_KEYS = ("startup-script", "shutdown-script")
# The second line of playbooks/templates/pull_startup.sh.j2, the startup-script that
# provision.yml gives a node with tpu_provision_bootstrap=pull.
PULL_MARK = "# cloudtpu.pod pull bootstrap,"
_PULL_NOTE = ", the cloudtpu.pod pull bootstrap"
_MARKER = re.compile(
    r"^<hidden (?P<key>[A-Za-z0-9._-]+), (?P<size>[0-9]+) characters"
    r"(?P<pull>, the cloudtpu\.pod pull bootstrap)?>\Z"
)
# Shorter values are not also masked in the text of results (Ansible would mask every
# occurrence of them, in any string); the structure of results hides them all the same.
_MASK_MIN = 8


def is_marker(value: Any) -> bool:
    """Whether ``value`` is a hidden marker."""
    return isinstance(value, str) and _MARKER.match(value) is not None


def is_pull_bootstrap(value: Any) -> bool:
    """Whether a startup-script (or its hidden marker) is the collection's pull bootstrap: its
    workers run ansible-pull of site.yml at every boot."""
    if not isinstance(value, str):
        return False
    found = _MARKER.match(value)
    if found:
        return found["pull"] is not None
    return any(line.startswith(PULL_MARK) for line in value.splitlines()[:3])


def marker(key: str, value: str) -> str:
    """The hidden marker of the value of ``key``: its length, and whether it is the pull
    bootstrap; never a part of it."""
    note = _PULL_NOTE if key == "startup-script" and is_pull_bootstrap(value) else ""
    return f"<hidden {key}, {len(value)} characters{note}>"


def hide(value: Any) -> Any:
    """A copy of ``value`` (mappings and lists walked) in which every string under a key of
    SECRET_KEYS is its hidden marker."""
    if isinstance(value, Mapping):
        return {
            key: (
                marker(key, item)
                if key in SECRET_KEYS and isinstance(item, str) and not is_marker(item)
                else hide(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [hide(item) for item in value]
    return value


def secret_values(value: Any) -> dict[str, str]:
    """Every secret string in ``value`` (mappings and lists walked), with its marker."""
    found: dict[str, str] = {}
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key in SECRET_KEYS and isinstance(item, str) and not is_marker(item):
                found[item] = marker(key, item)
            else:
                found.update(secret_values(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.update(secret_values(item))
    return found


def reveal(
    metadata: Mapping[str, Any] | None, sources: Sequence[tuple[str, Mapping[str, Any] | None]]
) -> tuple[dict[str, Any] | None, list[str]]:
    """``metadata`` with each hidden marker replaced by the value it stands for: the value of
    the same key, of the marker's length, in the first of ``sources`` (``(what, metadata)``
    pairs, such as the node's metadata and the journal's) that holds one. Returns the metadata
    and a problem per marker that no source resolves."""
    if metadata is None:
        return None, []
    revealed = dict(metadata)
    problems = []
    for key, value in metadata.items():
        found = _MARKER.match(value) if isinstance(value, str) else None
        if not found:
            continue
        if found["key"] != key:
            problems.append(f"metadata {key} is the hidden marker of {found['key']} ({value}).")
            continue
        for _what, source in sources:
            held = source.get(key) if isinstance(source, Mapping) else None
            if isinstance(held, str) and not is_marker(held) and len(held) == int(found["size"]):
                revealed[key] = held
                break
        else:
            looked = ", ".join(what for what, _source in sources) or "nothing"
            problems.append(
                f"metadata {key} is a hidden marker ({value}), which stands for a value that "
                f"only the node or the recovery journal holds; neither holds it (looked at: "
                f"{looked}). Give the value itself."
            )
    return revealed, problems


class HidingModule(AnsibleModule):
    """An AnsibleModule that keeps the values of SECRET_KEYS out of its results and its log:
    results (``invocation`` included) carry hidden markers, the text of messages has each
    secret value of the arguments replaced by its marker, and Ansible masks those values too
    (``no_log_values``) wherever they would still appear."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._secrets = secret_values(self.params)
        self.no_log_values.update(v for v in self._secrets if len(v) >= _MASK_MIN)

    def scrub(self, text: Any) -> Any:
        """``text`` with each secret value of the arguments replaced by its marker."""
        if not isinstance(text, str):
            return text
        for value, hidden in getattr(self, "_secrets", {}).items():
            if value:
                text = text.replace(value, hidden)
        return text

    def _log_invocation(self) -> None:
        # Called by AnsibleModule.__init__ (syslog or the journal of the machine it runs on).
        real = self.params
        self.params = hide(real)
        try:
            super()._log_invocation()
        finally:
            self.params = real

    def _hidden(self, result: dict[str, Any]) -> dict[str, Any]:
        result.setdefault("invocation", {"module_args": hide(self.params)})
        return {key: self.scrub(value) for key, value in hide(result).items()}

    def exit_json(self, **kwargs: Any) -> None:
        super().exit_json(**self._hidden(kwargs))

    def fail_json(self, msg: Any, **kwargs: Any) -> None:
        result = self._hidden(kwargs)
        super().fail_json(self.scrub(msg), **result)
