# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The value of one ssh -o option in the argument strings Ansible passes to ssh."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

DOCUMENTATION = r"""
name: status_ssh_option
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The value of an ssh C(-o) option in Ansible's ssh argument strings
description:
  - Reads C(-o Name=value), C(-oName=value) and C(-o "Name value") from
    strings such as C(ansible_ssh_common_args), C(ANSIBLE_SSH_COMMON_ARGS) or C(ssh_args), as
    ssh itself reads them (option names without regard to case).
  - The strings are read in the order given and the first value found wins, as in ssh.
  - Used by C(playbooks/ssh_config.yml) to write the C(UserKnownHostsFile) that Ansible uses.
positional: _input, option
options:
  _input:
    description: Argument strings (empty and missing ones are skipped).
    type: list
    elements: str
    required: true
  option:
    description: The option name, such as C(UserKnownHostsFile).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The known_hosts file Ansible's ssh uses
  ansible.builtin.debug:
    msg: >-
      {{ [ansible_ssh_common_args | default('')]
         | cloudtpu.pod.status_ssh_option('UserKnownHostsFile') }}
"""

RETURN = r"""
_value:
  description: The value, or an empty string when no string sets the option.
  type: str
"""


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _option(text: str) -> tuple[str, str]:
    """(name, value) of one ``Name=value`` or ``Name value`` option text."""
    text = text.strip()
    for index, char in enumerate(text):
        if char in "= \t":
            return text[:index], text[index + 1 :].lstrip("= \t")
    return text, ""


def status_ssh_option(strings: Sequence[Any], option: str) -> str:
    """The first value of ``-o option`` in the strings, or ''."""
    if isinstance(strings, str):
        strings = [strings]
    wanted = str(option).lower()
    for text in strings or []:
        if not text:
            continue
        words = _split(str(text))
        index = 0
        while index < len(words):
            word = words[index]
            if word == "-o" and index + 1 < len(words):
                opt = words[index + 1]
                index += 2
            elif word.startswith("-o") and len(word) > 2:
                opt = word[2:]
                index += 1
            else:
                index += 1
                continue
            name, value = _option(opt)
            if name.lower() == wanted and value:
                return value
    return ""


class FilterModule:
    """cloudtpu.pod.status_ssh_option."""

    def filters(self) -> dict[str, Any]:
        return {"status_ssh_option": status_ssh_option}
