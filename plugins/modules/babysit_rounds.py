#!/usr/bin/python
# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Documentation of the action plugin cloudtpu.pod.babysit_rounds (plugins/action/)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: babysit_rounds
short_description: Run the rounds of playbooks/babysit.yml until the watch is over
version_added: 0.2.0
author: cloudtpu.pod maintainers (@cloudtpu)
description:
  - The loop of C(playbooks/babysit.yml). Plays cannot loop, so each round (wait for the run to
    end or a worker to be lost, ask the TPU API, recover the lost nodes, restart the run) is an
    C(ansible-playbook) of its own, O(playbook), started with the options this run was given
    (inventory, C(--limit), C(-e), C(--tags) and C(--skip-tags), the connection and C(become)
    options, the verbosity) and with the environment variable E(CLOUDTPU_BABYSIT_STATE) naming
    O(state).
  - The vault passwords this run holds, however they were given (a password file, a script,
    C(--ask-vault-pass)), reach each round through a pipe it reads as its C(--vault-id) file,
    never through a file on disk or the command line.
  - O(state) is the babysitter's state of the run, which babysit.yml keeps next to its log and
    every round reads and writes back. Rounds start until it says the watch is over, so the
    number of recoveries is not bounded by the size of the playbook, and babysit.yml stopped at
    any point (Ctrl-C ends the round too) and run again goes on from it.
  - Refuses to start a round when this run was given C(--ask-pass) or C(--ask-become-pass),
    which a round running unattended cannot answer (use an SSH key, and
    C(ansible_become_password) in a vault file).
  - A round that fails before the watch is over fails this task, with the round's own output
    above it.
  - An action plugin; it runs on the controller.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: none
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  state:
    description: The file of the babysitter's state of the run (a JSON object, the user's own,
      mode 0600), as C(playbooks/babysit_steps/event.yml) writes it.
    type: path
    required: true
  playbook:
    description: The playbook of one round (C(playbooks/babysit_steps/round.yml)).
    type: path
    required: true
  max_rounds:
    description: Rounds at most, a guard against a watch that never ends; the run's own limits
      are C(tpu_babysit_max_recoveries) and C(tpu_babysit_timeout).
    type: int
    default: 10000
"""

EXAMPLES = r"""
- name: Watch, recover and restart until the watch is over
  cloudtpu.pod.babysit_rounds:
    state: /home/me/project/.cache/babysit/20261123T143000Z-ab12.json
    playbook: "{{ playbook_dir }}/babysit_steps/round.yml"
  register: babysit_rounds
"""

RETURN = r"""
rounds:
  description: How many rounds were started.
  returned: always
  type: int
  sample: 3
state:
  description: The babysitter's state of the run after the last round.
  returned: when the state could be read
  type: dict
"""
