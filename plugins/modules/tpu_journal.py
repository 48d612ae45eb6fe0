#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Keep, read or clear the specs of TPU nodes that recovery is about to delete."""
# Ansible modules keep DOCUMENTATION, EXAMPLES and RETURN above the imports.

from __future__ import annotations

DOCUMENTATION = r"""
module: tpu_journal
short_description: The controller's journal of TPU node specs that recovery deletes
version_added: 0.2.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - C(playbooks/recover.yml) deletes a lost node and creates it again from its spec. Before the
    delete it records the spec here, so that after an API error on the create, a crash or
    Ctrl-C, running the same command again creates the node from the journal; once the node is
    C(READY) again its entry is cleared.
  - One JSON file per project and zone, C(journal-PROJECT-ZONE.json), in O(state_dir). The
    folder is made with mode 0700, the file is written with mode 0600 through a temporary file
    that replaces it, so it is never half written.
  - A state folder or journal file that is a symbolic link (or goes through one), belongs to
    another user or is writable by others is refused, and so is a file that is not a journal.
  - Runs on the controller (C(localhost)); it makes no API call.
  - The file keeps the specs as they are, secret values included (the C(startup-script) and
    C(shutdown-script) metadata, where a pull node's access token and C(tpu_provision_pull_vars)
    are); RV(entries) and the module's own arguments show them as hidden markers, as
    M(cloudtpu.pod.tpu_node_info) does. M(cloudtpu.pod.tpu_node) with C(journal=true) writes a
    node's spec, secrets included, before deleting it, and takes the secrets back from here.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: O(state=read) only reads; O(state=record) and O(state=clear) report what would
      change and write nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  project:
    description: Google Cloud project ID of the nodes.
    type: str
    required: true
  zone:
    description: Zone of the nodes.
    type: str
    required: true
  state:
    description:
      - V(read) returns the entries; V(record) writes an entry per node of O(nodes) (replacing
        the node's earlier entry); V(clear) removes the entries of O(names) (the file too once
        it is empty).
    type: str
    choices: [read, record, clear]
    default: read
  nodes:
    description:
      - For O(state=record), the nodes, each with C(name) (the node ID) and C(spec) (the
        node's spec as M(cloudtpu.pod.tpu_node_info) returns it; it needs C(accelerator_type)).
      - A hidden marker in a spec's C(metadata) is replaced by the value of the node's entry
        already in the journal; one that the entry does not hold fails the task.
    type: list
    elements: dict
    default: []
  names:
    description: For O(state=clear), the node IDs whose entries are removed.
    type: list
    elements: str
    default: []
  step:
    description:
      - For O(state=record), how far recovery got; V(deleting) before the old node is deleted,
        V(creating) once it is gone and the create is next.
    type: str
    choices: [deleting, creating]
    default: deleting
  state_dir:
    description:
      - The state folder of the collection on the controller.
      - Falls back to the environment variable E(CLOUDTPU_STATE_DIR), else
        C(~/.local/state/cloudtpu.pod) (the folder C(playbooks/ssh_config.yml) records in).
      - C(~) is the home of the user running the task; the path may not go through a
        symbolic link.
    type: str
seealso:
  - module: cloudtpu.pod.tpu_node
  - module: cloudtpu.pod.tpu_node_info
"""

EXAMPLES = r"""
- name: Keep the spec of pod-a before deleting it
  cloudtpu.pod.tpu_journal:
    project: my-project
    zone: us-central2-b
    state: record
    nodes:
      - name: pod-a
        spec: "{{ info.nodes[0].spec }}"

- name: What the journal holds
  cloudtpu.pod.tpu_journal:
    project: my-project
    zone: us-central2-b
  register: journal

- name: Forget pod-a once it is READY again
  cloudtpu.pod.tpu_journal:
    project: my-project
    zone: us-central2-b
    state: clear
    names: [pod-a]
"""

RETURN = r"""
entries:
  description:
    - The journal's entries after the task (in check mode, as they would be), by node ID, with
      hidden markers for the secret metadata values.
  returned: always
  type: dict
  sample:
    pod-a:
      name: pod-a
      project: my-project
      zone: us-central2-b
      step: deleting
      time: "2024-05-01T12:00:00Z"
      spec:
        accelerator_type: v4-16
        runtime_version: tpu-ubuntu2204-base
        labels: {team: vision}
path:
  description: The journal file (it may not exist).
  returned: always
  type: str
  sample: /home/ana/.local/state/cloudtpu.pod/journal-my-project-us-central2-b.json
"""

from typing import Any

from ansible.module_utils.basic import env_fallback
from ansible_collections.cloudtpu.pod.plugins.module_utils import tpu_journal
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_secrets import HidingModule


def argument_spec() -> dict[str, Any]:
    return {
        "project": {"type": "str", "required": True},
        "zone": {"type": "str", "required": True},
        "state": {"type": "str", "choices": ["read", "record", "clear"], "default": "read"},
        "nodes": {"type": "list", "elements": "dict", "default": []},
        "names": {"type": "list", "elements": "str", "default": []},
        "step": {"type": "str", "choices": list(tpu_journal.STEPS), "default": "deleting"},
        "state_dir": {
            "type": "str",
            "fallback": (env_fallback, [tpu_journal.STATE_DIR_ENV]),
        },
    }


def main() -> None:
    module = HidingModule(argument_spec=argument_spec(), supports_check_mode=True)
    params = module.params
    project, zone, folder = params["project"], params["zone"], params["state_dir"]
    folder = folder or tpu_journal.state_dir()
    write = not module.check_mode
    changed = False
    try:
        path = tpu_journal.journal_path(project, zone, folder)
        if params["state"] == "record":
            changed, entries = tpu_journal.record(
                project, zone, params["nodes"], params["step"], folder, write=write
            )
        elif params["state"] == "clear":
            changed, entries = tpu_journal.clear(
                project, zone, params["names"], folder, write=write
            )
        else:
            entries = tpu_journal.read(project, zone, folder)
    except tpu_journal.JournalError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=changed, entries=entries, path=path)


if __name__ == "__main__":
    main()
