#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Look at, or record, a role's whole converged state on a worker in one call."""
# Ansible modules keep DOCUMENTATION, EXAMPLES and RETURN above the imports.

from __future__ import annotations

DOCUMENTATION = r"""
module: tpu_state
short_description: A role's converged state on a worker, looked at or recorded in one call
version_added: 0.2.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - The collection's roles end their tasks with O(state=record). It keeps, in
    C(/var/lib/cloudtpu/state/ROLE.json) (root, mode 0600), the O(digest) of the role's inputs
    and what the role manages as it is then. The files and links of O(paths) (content sha256,
    owner, mode, link target, or absent), the dpkg status of O(packages), the systemd states of
    O(units) and the exit code and output digest of read-only O(commands).
  - The next run starts with O(state=check). RV(converged) is true only when the record exists,
    its digest equals O(digest), every item of the record and of the check's own options looks
    as recorded, and, with O(dpkg_clean), no dpkg run was left half done. Items that only the
    worker decides (packages from the source apt offers) can so be named at record time alone.
    The role then skips its tasks; otherwise it runs them.
  - Nothing is looked at, and no command runs, when the digest differs from the record's. So
    paths and commands from inputs that have not passed the role's checks are never touched.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: O(state=check) only reads; O(state=record) and O(state=forget) write nothing in
      check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  role:
    description: The role's short name (lower-case letters, digits and C(_)); names the record.
    type: str
    required: true
  state:
    description:
      - V(check) compares the worker with the record; V(record) writes the record; V(forget)
        removes it.
    type: str
    choices: [check, record, forget]
    default: check
  digest:
    description:
      - The digest of the role's inputs (the C(cloudtpu.pod.state_digest) filter). Required
        for V(check) and V(record).
    type: str
  paths:
    description: Absolute paths the role manages (files, links, folders, or paths it removes).
    type: list
    elements: path
    default: []
  packages:
    description: Packages the role installs; each must be installed for a record.
    type: list
    elements: str
    default: []
  units:
    description: systemd units whose load, enablement and activity the role decides.
    type: list
    elements: str
    default: []
  commands:
    description:
      - Read-only commands whose exit code and output prove a state no file shows (a venv's
        interpreter and packages). Each must exit with 0 for a record.
    type: list
    elements: dict
    default: []
    suboptions:
      argv:
        description: The command and its arguments, run without a shell.
        type: list
        elements: str
        required: true
      user:
        description: Run as this user (its groups and home), not as the module's user.
        type: str
        default: ""
  dpkg_clean:
    description: Also require that no dpkg run was left half done (journal or C(dpkg --audit)).
    type: bool
    default: false
  notes:
    description:
      - With V(record), what the role worked out on the worker during its tasks and needs again
        when it skips them (what the kernel can do, a user's id). Kept in the record as given, and
        returned as RV(notes) by a check that finds the worker converged. Notes are not compared, so
        the record must also name what proves them (a path or a command).
    type: dict
    default: {}
  problems:
    description:
      - The role's input problems, one message per item (empty items are ignored), from its
        checks on the control machine. When any is left, the task fails with them, on the
        control machine, and nothing runs on the worker (the collection's action plugin of the
        same name). So a role checks its variables and looks at its state in one task.
    type: list
    elements: str
    default: []
  enabled:
    description:
      - With V(false) a check answers RV(converged=false) without looking, so the role runs
        all its tasks (the roles pass the inventory variable C(tpu_fast_path)).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Look at the role's whole state in one call
  cloudtpu.pod.tpu_state:
    role: base
    digest: "{{ tpu_base__digest }}"
    paths: [/etc/timezone, /etc/localtime]
    packages: [htop, git]
    dpkg_clean: true
  register: tpu_base__state

- name: Run the role's tasks where the state differs
  ansible.builtin.include_tasks: converge.yml
  when: not tpu_base__state.converged
"""

RETURN = r"""
converged:
  description: Whether the worker is as recorded, with the same inputs (O(state=check)).
  type: bool
  returned: always
differences:
  description: Why the worker is not converged, one line per reason.
  type: list
  elements: str
  returned: always
notes:
  description: The O(notes) of the record when RV(converged) is true; empty otherwise.
  type: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_state


def _spec(params: dict) -> dict:
    return {key: params[key] for key in ("paths", "packages", "units", "commands")}


def _check(module: AnsibleModule) -> dict:
    params = module.params
    if not params["enabled"]:
        return {"converged": False, "differences": ["the fast path is off (tpu_fast_path)"]}
    record = tpu_state.read_record(params["role"])
    if record is None:
        return {"converged": False, "differences": ["no record of an earlier complete run"]}
    if record.get("digest") != params["digest"]:
        return {"converged": False, "differences": ["the role's inputs or code changed"]}
    run = tpu_state.runner(module)
    seen = tpu_state.observe(tpu_state.recorded_spec(record, _spec(params)), run)
    found = tpu_state.differences(record, seen)
    if params["dpkg_clean"]:
        found += tpu_state.dpkg_problems(run)
    notes = record.get("notes", {}) if not found else {}
    return {"converged": not found, "differences": found, "notes": notes}


def _record(module: AnsibleModule) -> dict:
    params = module.params
    if module.check_mode:
        # the tasks before only said what they would change; there is nothing to record
        return {"converged": False, "differences": ["not recorded in check mode"]}
    seen = tpu_state.observe(_spec(params), tpu_state.runner(module))
    problems = tpu_state.unhealthy(seen)
    if problems:
        module.fail_json(
            msg=f"the {params['role']} role's tasks finished, yet: " + "; ".join(problems),
            differences=problems,
        )
    notes = {"notes": params["notes"]} if params["notes"] else {}
    tpu_state.write_record(params["role"], dict(seen, digest=params["digest"], **notes))
    return {"converged": True, "differences": []}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "role": {"type": "str", "required": True},
            "state": {"type": "str", "choices": ["check", "record", "forget"], "default": "check"},
            "digest": {"type": "str"},
            "paths": {"type": "list", "elements": "path", "default": []},
            "packages": {"type": "list", "elements": "str", "default": []},
            "units": {"type": "list", "elements": "str", "default": []},
            "commands": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "argv": {"type": "list", "elements": "str", "required": True},
                    "user": {"type": "str", "default": ""},
                },
            },
            "dpkg_clean": {"type": "bool", "default": False},
            "notes": {"type": "dict", "default": {}},
            "enabled": {"type": "bool", "default": True},
            "problems": {"type": "list", "elements": "str", "default": []},
        },
        required_if=[("state", "check", ["digest"]), ("state", "record", ["digest"])],
        supports_check_mode=True,
    )
    params = module.params
    # Found on the control machine by the action plugin; here only when it was bypassed.
    problems = [item.strip() for item in params["problems"] if item and item.strip()]
    if problems:
        module.fail_json(msg=" ".join(problems), problems=problems, converged=False)
    bad = [path for path in params["paths"] if not path.startswith("/") or ".." in path.split("/")]
    if bad:
        module.fail_json(msg=f"paths must be absolute, without '..': {bad}")
    try:
        tpu_state.record_path(params["role"])
        if params["state"] == "forget":
            gone = False if module.check_mode else tpu_state.forget_record(params["role"])
            module.exit_json(
                changed=False, converged=False, differences=[], notes={}, forgotten=gone
            )
        result = _check(module) if params["state"] == "check" else _record(module)
    except tpu_state.StateError as error:
        module.fail_json(msg=str(error))
    # A record is the collection's own bookkeeping, not a change of the worker's configuration.
    module.exit_json(changed=False, **dict({"notes": {}}, **result))


if __name__ == "__main__":
    main()
