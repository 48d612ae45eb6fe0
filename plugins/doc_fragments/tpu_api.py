# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""Options every module of this collection that talks to the TPU v2 API accepts.

DOCUMENTATION (``cloudtpu.pod.tpu_api``) mirrors ``auth_argument_spec()`` in
``plugins/module_utils/tpu_api.py`` and carries the same names as the tpu_vm inventory plugin's
options, so one set of settings serves both. PROJECT (``cloudtpu.pod.tpu_api.project``) and
ZONE (``cloudtpu.pod.tpu_api.zone``) document the options that say where the nodes are, written
once here for the modules that take them; NODE_FILTERS (``cloudtpu.pod.tpu_api.node_filters``)
the filters on labels, accelerator types and names that the tpu_vm inventory plugin and
the tpu_node_info module share.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  auth_kind:
    description:
      - How to get Google credentials.
      - V(application) uses application default credentials (C(gcloud auth application-default
        login) or C(GOOGLE_APPLICATION_CREDENTIALS)); V(serviceaccount) a key file or its
        contents; V(machineaccount) the service account of the Google Cloud VM Ansible runs on;
        V(accesstoken) an OAuth2 access token.
      - Falls back to the environment variable E(GCP_AUTH_KIND).
    type: str
    choices: [application, serviceaccount, machineaccount, accesstoken]
    default: application
  service_account_email:
    description:
      - Service account of the VM to act as, with O(auth_kind=machineaccount).
      - Falls back to E(GCP_SERVICE_ACCOUNT_EMAIL).
    type: str
  service_account_file:
    description:
      - Service account JSON key file, with O(auth_kind=serviceaccount).
      - Falls back to E(GCP_SERVICE_ACCOUNT_FILE).
    type: path
  service_account_contents:
    description:
      - Service account JSON key as a string, with O(auth_kind=serviceaccount).
      - Falls back to E(GCP_SERVICE_ACCOUNT_CONTENTS).
    type: jsonarg
  access_token:
    description:
      - OAuth2 access token, with O(auth_kind=accesstoken).
      - Falls back to E(GCP_ACCESS_TOKEN).
    type: str
  scopes:
    description:
      - OAuth2 scopes to request.
      - Falls back to E(GCP_SCOPES).
    type: list
    elements: str
    default: [https://www.googleapis.com/auth/cloud-platform]
  base_url:
    description:
      - Root of the TPU v2 API, C(https://tpu.googleapis.com/v2) when not set. Point it at a
        private endpoint, a proxy or the collection's local emulator.
      - Falls back to E(CLOUDTPU_API_ENDPOINT), like the tpu_vm inventory plugin.
      - Every call carries the access token, so the URL must be C(https://), or C(http://) to a
        loopback address of this machine (C(127.0.0.1) and the rest of C(127.0.0.0/8),
        C(::1), C(localhost)), as the local emulator is, or to a host named in O(http_hosts);
        a user name or password in it is refused too.
    type: str
  http_hosts:
    description:
      - Hosts that O(base_url) may reach over plain C(http://) although they are not this
        machine, such as C(host.docker.internal) for the local emulator seen from its Docker
        workers. Each one is named alone, exactly as the host of the URL (a name or an
        address; no wildcard, port or URL). Empty, the default, allows none.
      - Plain http sends the access token across the network unencrypted, where anyone on the
        way can read it and use it; name a host only on a network you trust.
      - Falls back to E(CLOUDTPU_API_HTTP_HOSTS) (a comma-separated list), like the tpu_vm
        inventory plugin.
    type: list
    elements: str
  retries:
    description: Attempts per API call when it answers 429 or 5xx or cannot be reached.
    type: int
    default: 5
  retry_max_sleep:
    description: Upper bound, in seconds, of one wait between retries.
    type: float
    default: 16.0
  request_timeout:
    description: Seconds to wait for one API answer.
    type: float
    default: 60.0
requirements:
  - requests
  - google-auth
  - the google.cloud collection (bundled with the ansible package)
notes:
  - The API calls run on the machine that runs the module, normally the control machine (a
    play on C(localhost), or a task delegated to it).
"""

    PROJECT = r"""
options:
  project:
    description:
      - Google Cloud project ID.
      - Falls back to the environment variable E(GCP_PROJECT).
    type: str
    required: true
"""

    ZONE = r"""
options:
  zone:
    description: Zone, for example C(us-central2-b).
    type: str
    required: true
"""

    NODE_FILTERS = r"""
options:
  labels:
    description:
      - Keep only nodes that carry all these labels. Values are shell-style patterns, so C('*')
        only asks for the label to be present.
    type: dict
    default: {}
  accelerator_types:
    description: Keep only nodes whose accelerator type matches one of these shell-style patterns.
    type: list
    elements: str
    default: []
  names:
    description: Keep only nodes whose name (node ID) matches one of these shell-style patterns.
    type: list
    elements: str
    default: []
"""
