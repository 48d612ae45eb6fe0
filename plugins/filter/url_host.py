# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""A host as URLs and NFS sources write it: an IPv6 address in brackets."""

from __future__ import annotations

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import url_host

DOCUMENTATION = r"""
name: url_host
author: cloudtpu.pod maintainers
version_added: 0.2.0
short_description: A host as it goes before a port or an NFS path (an IPv6 address in brackets)
description:
  - Returns an IPv6 address in brackets (V(fd00::1) becomes V([fd00::1])), and a name, an IPv4
    address or an address already in brackets as it is.
  - The roles write the pod's package cache and wheel server URLs and the NFS mount source with
    it; JAX's coordinator address (the C(cloudtpu.pod.pod) lookup) uses the same rule.
positional: _input
options:
  _input:
    description: A host name or address.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The package cache's URL on the pod's coordinator
  ansible.builtin.set_fact:
    cache_url: "http://{{ coordinator_ip | cloudtpu.pod.url_host }}:3142"
"""

RETURN = r"""
_value:
  description: The host, an IPv6 address in brackets.
  type: str
"""


class FilterModule:
    def filters(self):
        return {"url_host": url_host}
