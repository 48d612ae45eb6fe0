# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The workers' addresses in nodes and module results (module_utils/tpu_resources.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_resources import worker_addresses

DOCUMENTATION = r"""
name: worker_addresses
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: The addresses of the workers in nodes and module results, each once
description:
  - Collects the internal and external addresses of every worker found in the input, in the
    order found, each once, for example to forget their old host keys after nodes are created.
  - The input is a worker (C(internal_ip), C(external_ip)), something that holds workers (a node
    or a C(cloudtpu.pod.tpu_node) result, in C(workers); a C(cloudtpu.pod.tpu_queued_resource)
    result, in C(nodes)), or a list of those, nested as deep as need be. Anything else is
    skipped.
options:
  _input:
    description: The workers, nodes or module results.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Forget the host keys of the new workers
  ansible.builtin.known_hosts:
    name: "{{ item }}"
    state: absent
  loop: "{{ created.results | cloudtpu.pod.worker_addresses }}"
"""

RETURN = r"""
_value:
  description: The addresses, internal before external for each worker.
  type: list
  elements: str
"""


class FilterModule:
    """cloudtpu.pod.worker_addresses."""

    def filters(self) -> dict[str, Any]:
        return {"worker_addresses": worker_addresses}
