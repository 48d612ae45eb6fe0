# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The value checks of module_utils/tpu_checks.py and tpu_network_checks.py as filters:
path_problem, network_problem, address_problem, number_problem, device_glob_problem,
gcp_name_problem. Each returns '' when the value is fine, else a message that names the
variable, the value and what is allowed, for a Check task to fail with (documentation:
path_problem.yml and its siblings).
"""

from __future__ import annotations

from typing import Any

from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_checks import (
    device_glob_problem,
    gcp_name_problem,
    number_problem,
    path_problem,
)
from ansible_collections.cloudtpu.pod.plugins.module_utils.tpu_network_checks import (
    address_problem,
    network_problem,
)


class FilterModule:
    """path_problem, network_problem, address_problem, number_problem, device_glob_problem,
    gcp_name_problem."""

    def filters(self) -> dict[str, Any]:
        return {
            "path_problem": path_problem,
            "network_problem": network_problem,
            "address_problem": address_problem,
            "number_problem": number_problem,
            "device_glob_problem": device_glob_problem,
            "gcp_name_problem": gcp_name_problem,
        }
