# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Inventory of Cloud TPU VM workers, read from the TPU v2 API."""
# Ansible plugins keep DOCUMENTATION and EXAMPLES above the imports.

from __future__ import annotations

DOCUMENTATION = r"""
name: tpu_vm
short_description: Cloud TPU VM workers from the TPU v2 API
version_added: 0.1.0
description:
  - Lists the TPU nodes of one or more Google Cloud projects through the TPU v2 API and adds one
    host per worker (one per entry of the node's C(networkEndpoints); worker 0 is the coordinator).
  - Every host gets the variables C(tpu_project), C(tpu_zone), C(tpu_node), C(tpu_worker_id),
    C(tpu_worker_count), C(tpu_accelerator_type), C(tpu_generation), C(tpu_chips_per_host),
    C(tpu_device_glob), C(tpu_internal_ip), C(tpu_external_ip), C(tpu_state), C(tpu_health),
    C(tpu_runtime_version), C(tpu_labels), C(tpu_spot) and C(ansible_host).
  - The pod of each worker is published once, on every worker of the node
    C(tpu_pod_coordinator) (the inventory name of worker 0), C(tpu_pod_coordinator_ip) (its
    internal address), C(tpu_pod_hosts) and C(tpu_pod_ips) (every worker of the node, in
    worker order). Roles and playbooks read them through the C(cloudtpu.pod.pod) lookup.
  - Multislice. The nodes of one queued resource with more than one node (or that the API marks
    C(multisliceNode)) form one multislice job, each node a slice. Every host gets
    C(tpu_queued_resource) (the request's short ID, empty for a node made without one),
    C(tpu_slice_id) and C(tpu_num_slices), and the job's coordinator, worker 0 of slice 0, as
    C(tpu_pod_job_coordinator) and C(tpu_pod_job_coordinator_ip); C(tpu_pod_hosts) and
    C(tpu_pod_ips) stay the node's own. A single node is slice 0 of 1 and coordinates its job.
  - The slice ID is the number the API puts at the end of a multislice node's ID
    (C(<nodeIdPrefix>-<i>)); nodes whose IDs do not follow that rule are numbered in the order of
    their IDs. The job is worked out from every node the API listed, before O(states) and the
    other filters, so a filtered-out slice does not renumber the others.
  - Hosts are put in the groups C(tpu), C(tpu_node_<node>), C(tpu_type_<accelerator type>),
    C(tpu_zone_<zone>), C(tpu_gen_<generation>) and C(tpu_coordinator) (worker 0 of each node),
    and the workers of a multislice job in C(tpu_multislice_<queued resource>) and
    C(tpu_slice_<queued resource>_<slice id>),
    with every character other than letters, digits and underscores replaced by an underscore.
    O(compose), O(groups) and O(keyed_groups) add more.
  - Values that come from the API are marked unsafe, so they are never templated.
  - The inventory source file name must end in C(tpu_vm.yml) or C(tpu_vm.yaml).
  - The source is checked before any API call; unknown keys, unknown states, a host name template
    that gives invalid host names and out-of-range numbers (O(page_size), O(retries),
    O(retry_backoff), O(retry_max_sleep), O(request_timeout)) are refused with what is allowed.
requirements:
  - requests
  - google-auth
  - the google.cloud collection (bundled with the ansible package)
extends_documentation_fragment:
  - constructed
  - inventory_cache
  - cloudtpu.pod.tpu_api.node_filters
options:
  plugin:
    description: Marks the file as a source for this plugin.
    required: true
    type: str
    choices: [cloudtpu.pod.tpu_vm]
  projects:
    description:
      - Google Cloud project IDs to list TPU nodes from.
      - From the environment, a comma-separated list. When both are set, E(CLOUDTPU_PROJECT)
        wins over E(GCP_PROJECT) (which an AWX credential sets), as in the playbooks.
    type: list
    elements: str
    env:
      # the last one set wins
      - name: GCP_PROJECT
      - name: CLOUDTPU_PROJECT
  zones:
    description:
      - Zones to list nodes in. Empty means every zone, read in one call per page through the
        C(locations/-) wildcard (or zone by zone when the API refuses the wildcard).
      - From the environment, a comma-separated list.
    type: list
    elements: str
    default: []
    env:
      - name: CLOUDTPU_ZONES
  states:
    description:
      - Keep only nodes in these states (C(READY), C(CREATING), C(STOPPED), C(PREEMPTED),
        C(TERMINATED), C(REPAIRING), ...). An empty list keeps every state.
      - Only the API's node states are accepted (a running node is C(READY), not C(RUNNING)); any
        other value is refused with the list of states.
    type: list
    elements: str
    default: [READY]
  hostname:
    description:
      - Python format string for inventory host names. Fields C(node), C(worker_id), C(zone),
        C(project), C(accelerator_type) and C(generation) are available.
      - Two workers that end up with the same name are an error; add C({zone}) or C({project})
        when node names repeat across zones or projects.
    type: str
    default: "{node}-w{worker_id}"
  use_internal_ip:
    description:
      - Set C(ansible_host) to the worker's internal IP even when it has an external one.
      - By default the external IP is used when the worker has one, else the internal IP.
    type: bool
    default: false
  auth_kind:
    description: How to get Google credentials.
    type: str
    choices: [application, serviceaccount, machineaccount, accesstoken]
    default: application
    env:
      - name: GCP_AUTH_KIND
  service_account_file:
    description: Service account JSON key file, with O(auth_kind=serviceaccount).
    type: path
    env:
      - name: GCP_SERVICE_ACCOUNT_FILE
  service_account_contents:
    description: Service account JSON key as a string, with O(auth_kind=serviceaccount).
    type: str
    env:
      - name: GCP_SERVICE_ACCOUNT_CONTENTS
  service_account_email:
    description: Service account of the VM to act as, with O(auth_kind=machineaccount).
    type: str
    env:
      - name: GCP_SERVICE_ACCOUNT_EMAIL
  access_token:
    description: OAuth2 access token, with O(auth_kind=accesstoken).
    type: str
    env:
      - name: GCP_ACCESS_TOKEN
  scopes:
    description: OAuth2 scopes to request.
    type: list
    elements: str
    default: [https://www.googleapis.com/auth/cloud-platform]
    env:
      - name: GCP_SCOPES
  base_url:
    description:
      - Root of the TPU v2 API. Point it at a private endpoint, a proxy or the local emulator.
      - Every call carries the access token, so the URL must be C(https://), or C(http://) to a
        loopback address of this machine (C(127.0.0.1) and the rest of C(127.0.0.0/8),
        C(::1), C(localhost)), as the local emulator is, or to a host named in O(http_hosts).
    type: str
    default: https://tpu.googleapis.com/v2
    env:
      - name: CLOUDTPU_API_ENDPOINT
  http_hosts:
    description:
      - Hosts that O(base_url) may reach over plain C(http://) although they are not this
        machine, such as C(host.docker.internal) for the local emulator seen from its Docker
        workers (provision.yml's pull mode sets it on the workers from
        C(tpu_provision_pull_api_http_hosts)). Each one is named alone, exactly as the host of
        the URL (a name or an address; no wildcard, port or URL). Empty, the default, allows none.
      - Plain http sends the access token across the network unencrypted, where anyone on the
        way can read it and use it; name a host only on a network you trust.
      - From the environment, a comma-separated list.
    type: list
    elements: str
    default: []
    env:
      - name: CLOUDTPU_API_HTTP_HOSTS
  page_size:
    description: Nodes asked for per list call; the API may answer with fewer.
    type: int
    default: 500
  retries:
    description: Attempts per API call when it answers 429 or 5xx or cannot be reached.
    type: int
    default: 5
  retry_backoff:
    description: Seconds before the first retry; each further retry doubles it (with jitter).
    type: float
    default: 1.0
  retry_max_sleep:
    description: Upper bound, in seconds, of one wait between retries.
    type: float
    default: 16.0
  request_timeout:
    description: Seconds to wait for one API answer.
    type: float
    default: 60.0
"""

EXAMPLES = r"""
# inventories/gcp/tpu_vm.yml: every READY TPU worker of the projects named in CLOUDTPU_PROJECT,
# using application default credentials (gcloud auth application-default login).
plugin: cloudtpu.pod.tpu_vm

---
# Two projects, two zones, spot v5e slices only, reached on their internal addresses.
plugin: cloudtpu.pod.tpu_vm
projects: [research-a, research-b]
zones: [us-west4-a, europe-west4-b]
accelerator_types: ["v5litepod-*"]
labels:
  team: vision
use_internal_ip: true

---
# Include preempted nodes (for a recover playbook) and group workers by their health.
plugin: cloudtpu.pod.tpu_vm
projects: [research-a]
states: [READY, PREEMPTED, REPAIRING]
keyed_groups:
  - key: tpu_health
    prefix: health
groups:
  big_slices: tpu_worker_count >= 8
compose:
  ansible_user: "'researcher'"

---
# Local emulator, cached for an hour.
plugin: cloudtpu.pod.tpu_vm
projects: [demo-project]
base_url: http://127.0.0.1:8470/v2
auth_kind: accesstoken
access_token: demo-token
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: .cache/tpu_inventory
cache_timeout: 3600
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.unsafe_proxy import wrap_var
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_api import TpuApiError, TpuClient
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_checks import (
    config_problems,
)

# The hosts, groups and variables of the inventory and the data it caches are pure functions of
# the API's JSON, in module_utils/tpu_inventory_hosts.py; this plugin reads the source, calls
# the API and fills Ansible's inventory.
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_inventory_hosts import (
    api_warnings,
    build_hosts,
    cache_matches,
    fetched_data,
    source_query,
)


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "cloudtpu.pod.tpu_vm"

    def verify_file(self, path: str) -> bool:
        """Only files named ``*tpu_vm.yml`` or ``*tpu_vm.yaml``."""
        return super().verify_file(path) and str(path).endswith(("tpu_vm.yml", "tpu_vm.yaml"))

    def _client(self) -> TpuClient:
        params = {
            key: self.get_option(key)
            for key in (
                "auth_kind",
                "service_account_file",
                "service_account_contents",
                "service_account_email",
                "access_token",
                "scopes",
            )
        }
        return TpuClient.from_params(
            params,
            base_url=self.get_option("base_url"),
            http_hosts=self.get_option("http_hosts"),
            retries=self.get_option("retries"),
            backoff=self.get_option("retry_backoff"),
            max_sleep=self.get_option("retry_max_sleep"),
            timeout=self.get_option("request_timeout"),
        )

    def fetch(self, projects: Iterable[str], zones: Sequence[str]) -> dict[str, Any]:
        """Read the nodes of every project from the API: the only method that does I/O."""
        client = self._client()
        page_size = self.get_option("page_size")
        return fetched_data(
            projects, lambda project: client.collect_nodes(project, zones or None, page_size)
        )

    def populate(self, data: Mapping[str, Any], cached: bool = False) -> None:
        """Add hosts, groups and variables for fetched (or cached) API data."""
        for warning in api_warnings(data, cached):
            self.display.warning(warning)
        try:
            hosts, warnings = build_hosts(
                data,
                states=self.get_option("states") or [],
                labels=self.get_option("labels") or {},
                accelerator_types=self.get_option("accelerator_types") or [],
                names=self.get_option("names") or [],
                hostname=self.get_option("hostname"),
                use_internal_ip=self.get_option("use_internal_ip"),
                wrap=wrap_var,
            )
        except ValueError as exc:
            raise AnsibleParserError(f"tpu_vm inventory: {exc}") from None
        for warning in warnings:
            self.display.warning(warning)

        strict = self.get_option("strict")
        compose = self.get_option("compose")
        groups = self.get_option("groups")
        keyed_groups = self.get_option("keyed_groups")
        inventory = self.inventory
        known_groups: set[str] = set()
        for name, hostvars, host_groups in hosts:
            for group in host_groups:
                if group not in known_groups:
                    inventory.add_group(group)
                    known_groups.add(group)
            inventory.add_host(name, group=host_groups[0])
            for group in host_groups[1:]:
                inventory.add_child(group, name)
            for key, value in hostvars.items():
                inventory.set_variable(name, key, value)
            if compose:
                self._set_composite_vars(compose, hostvars, name, strict=strict)
            if groups:
                self._add_host_to_composed_groups(groups, hostvars, name, strict=strict)
            if keyed_groups:
                self._add_host_to_keyed_groups(keyed_groups, hostvars, name, strict=strict)

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        config = self._read_config_data(path)
        problems = config_problems(config, self._options)
        if problems:
            raise AnsibleParserError(f"tpu_vm inventory {path}: " + " ".join(problems))

        try:
            query = source_query(*(self.get_option(k) for k in ("projects", "zones", "base_url")))
        except ValueError as exc:
            raise AnsibleParserError(f"tpu_vm inventory {path}: {exc}") from None
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        data = None
        if use_cache:
            try:
                data = self._cache[cache_key]
            except KeyError:
                update_cache = True
            if data is not None and not cache_matches(data, query):
                data = None
                update_cache = True
        cached = data is not None
        if data is None:
            try:
                data = self.fetch(query["projects"], query["zones"])
            except TpuApiError as exc:
                raise AnsibleError(f"tpu_vm inventory {path}: {exc}") from None
            data["query"] = query
        if update_cache:
            self._cache[cache_key] = data
        self.populate(data, cached=cached)
