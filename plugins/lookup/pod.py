# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The pod of the current host: its coordinator, its workers and their addresses."""

from __future__ import annotations

DOCUMENTATION = r"""
name: pod
author: cloudtpu.pod maintainers (@cloudtpu)
version_added: 0.2.0
short_description: The pod of the current host (coordinator, workers, addresses)
description:
  - With the C(cloudtpu.pod.tpu_vm) inventory the answer is what the inventory published on
    the host (C(tpu_pod_coordinator), C(tpu_pod_coordinator_ip), C(tpu_pod_hosts),
    C(tpu_pod_ips)).
  - With a static inventory, the pod is every host of group C(tpu) (else of the play) with the
    same C(tpu_node), ordered by C(tpu_worker_id); the first coordinates. A worker's address is
    C(tpu_internal_ip), else the default IPv4 address it reported in gathered facts, else
    C(ansible_host), else its inventory name.
  - Returns C(node), C(worker_id) (the host's place in C(hosts)), C(coordinator),
    C(coordinator_ip), C(jax_coordinator_address) (C(coordinator_ip:8476), an IPv6 address in
    brackets), C(hosts) and C(ips), all of the host's node, which is one slice of a multislice
    job.
  - And the host's multislice job, C(slice_id), C(num_slices), C(queued_resource),
    C(job_coordinator) and C(job_coordinator_ip) (worker 0 of slice 0), from the inventory's
    C(tpu_slice_id), C(tpu_num_slices), C(tpu_queued_resource), C(tpu_pod_job_coordinator) and
    C(tpu_pod_job_coordinator_ip). A single node is slice 0 of 1 and coordinates its own job.
  - A static inventory may set C(tpu_slice_id) and C(tpu_num_slices) (and
    C(tpu_queued_resource) to tell two jobs apart) by hand; the job's coordinator is then the
    first host of slice 0 with the same C(tpu_queued_resource). Wrong values are refused.
options:
  _terms:
    description: Keys to return; without keys the whole mapping is returned.
    required: false
    type: list
    elements: str
  host:
    description: The host whose pod is wanted (default the current host).
    required: false
    type: str
"""

EXAMPLES = r"""
- name: Talk to the coordinator of this worker's pod
  ansible.builtin.debug:
    msg: "{{ lookup('cloudtpu.pod.pod', 'coordinator_ip') }}"

- name: The pod of another host
  ansible.builtin.debug:
    msg: "{{ lookup('cloudtpu.pod.pod', 'ips', host='pod-a-w0') }}"

- name: Where this worker is in its multislice job
  ansible.builtin.debug:
    msg: "{{ lookup('cloudtpu.pod.pod', 'slice_id', 'num_slices', 'job_coordinator_ip') }}"
"""

RETURN = r"""
_raw:
  description: The values of the keys asked for, or the whole mapping.
  type: raw
"""

from typing import Any

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_pod import (
    JOB_VARS,
    POD_VARS,
    pod_of,
)

_HOST_KEYS = ("tpu_node", "tpu_worker_id", "tpu_internal_ip", "ansible_host", *POD_VARS, *JOB_VARS)
KEYS = (
    "node",
    "worker_id",
    "coordinator",
    "coordinator_ip",
    "jax_coordinator_address",
    "hosts",
    "ips",
    "slice_id",
    "num_slices",
    "queued_resource",
    "job_coordinator",
    "job_coordinator_ip",
)


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list:
        variables = variables or {}
        host = kwargs.get("host") or variables.get("inventory_hostname")
        if not host:
            raise AnsibleError("cloudtpu.pod.pod: no current host (inventory_hostname)")
        groups = variables.get("groups") or {}
        candidates = list(groups.get("tpu") or variables.get("ansible_play_hosts_all") or [])
        hostvars_all = variables.get("hostvars") or {}
        if host not in hostvars_all:
            raise AnsibleError(f"cloudtpu.pod.pod: {host!r} is not a host of the inventory")
        wanted = list(dict.fromkeys([*candidates, host]))
        own = hostvars_all.get(host) or {}
        published = all(own.get(k) for k in POD_VARS) and own.get("tpu_pod_job_coordinator")
        views: dict[str, dict[str, Any]] = {}
        for name in [host] if published else wanted:
            source = hostvars_all.get(name) or {}
            views[name] = {k: self._templar.template(source[k]) for k in _HOST_KEYS if k in source}
            facts = source.get("ansible_facts") or {}
            default_ipv4 = (facts.get("default_ipv4") or {}).get("address")
            if default_ipv4:
                views[name]["default_ipv4"] = str(default_ipv4)
        try:
            pod = pod_of(host, views, wanted)
        except ValueError as exc:
            raise AnsibleError(f"cloudtpu.pod.pod: {exc}") from None
        if not terms:
            return [pod]
        unknown = [t for t in terms if t not in KEYS]
        if unknown:
            raise AnsibleError(
                f"cloudtpu.pod.pod: unknown key(s) {unknown}; use any of {list(KEYS)}"
            )
        return [pod[t] for t in terms]
