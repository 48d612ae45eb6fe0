# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Push or pull bootstrap for playbooks/provision.yml: the pull variables, checked and made safe
for the startup script (module_utils/tpu_pull_options.py) as a filter."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pull_options import pull_options

DOCUMENTATION = r"""
name: pull_options
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: Check provision.yml's pull-mode variables, quoted for the startup script
description:
  - Takes the raw values of provision.yml's C(tpu_provision_bootstrap) and C(tpu_provision_pull_*)
    variables (strings when they come from C(-e key=value)) and returns them typed, with every
    value the startup script uses already quoted for the shell, or C(ok=false) with a message
    that names each wrong variable, its value and what is allowed. It never fails itself, so the
    playbook can assert on it before any node is created.
  - With V(push) (the default) only C(bootstrap) is checked; the other variables are ignored.
  - The access token (C(access_token)) is never part of the message.
  - C(api_endpoint) must be C(https://), or C(http://) to a loopback address or to a host named
    in C(api_http_hosts) (C(tpu_provision_pull_api_http_hosts)), since the workers' inventory
    sends its token with every call; the named hosts reach the workers as
    E(CLOUDTPU_API_HTTP_HOSTS).
  - C(repo) must be C(https://), C(ssh://), C(user@host:path) (SSH) or C(file://) (a path on the
    worker); C(http://) and C(git://), which neither encrypt nor authenticate, only to a loopback
    address or to a host named in C(repo_http_hosts) (C(tpu_provision_pull_repo_http_hosts)),
    the same rule as the API's. A URL with credentials (a password or token before the C(@) of
    an C(http://) or C(https://) URL, a password in any) is refused, and the message does not
    show them.
  - C(version) is required, a full commit id (40 hex digits, 64 in a sha256 repository), which
    the script checks the checkout against before anything of it runs; a branch or tag only
    with C(unpinned) (C(tpu_provision_pull_unpinned)).
  - The workers install uv, Ansible and every dependency from the collection's hashed lock,
    C(playbooks/templates/pull_requirements.txt) (C(make pull-lock)), whose pins are the
    defaults of C(ansible), C(requirements) and C(uv_version); another value has no hashes and
    is taken only with C(unhashed) (C(tpu_provision_pull_unhashed)), which installs everything
    by name and version.
positional: _input
options:
  _input:
    description: The raw values (None or missing takes the default), keys C(bootstrap),
      C(repo), C(repo_http_hosts), C(version), C(unpinned), C(tags), C(ansible), C(requirements),
      C(installer), C(uv_version), C(unhashed), C(auth_kind), C(access_token), C(api_endpoint),
      C(api_http_hosts), C(vars), C(wait), C(timeout),
      C(login_user), C(project), C(zone), C(nodes), C(metadata) (the user's own node metadata).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the bootstrap mode
  ansible.builtin.assert:
    that: pull.ok
    fail_msg: "{{ pull.message }}"
  vars:
    pull: "{{ {'bootstrap': tpu_provision_bootstrap} | cloudtpu.pod.pull_options }}"
"""

RETURN = r"""
_value:
  description: C(ok), C(message), C(bootstrap), C(pull) (a boolean), C(wait), C(timeout),
    C(tags), C(pinned) and C(hashed) (booleans) and, for the template, C(quoted) (each value
    quoted for bash) and C(inventory), C(env), C(vars), C(lock) and C(uv_lock) (file texts; the
    locks empty when not hashed). The script holds C(env) (the access token) and C(vars),
    so the collection's modules keep every startup-script out of their output
    (module_utils/tpu_secrets.py).
  type: dict
"""


class FilterModule:
    """cloudtpu.pod.pull_options."""

    def filters(self) -> dict[str, Any]:
        return {"pull_options": pull_options}
