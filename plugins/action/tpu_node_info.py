# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The controller's half of cloudtpu.pod.tpu_node_info: the module runs as it would alone; while
it waits for a node to be back from maintenance (wait_healthy=true) on the controller, the state
and health it reads at every poll are shown as a line
(plugins/plugin_utils/tpu_progress_action.py)."""

from __future__ import annotations

from ansible_collections.cloudtpu.pod.plugins.plugin_utils.tpu_progress_action import (
    ProgressAction,
)


class ActionModule(ProgressAction):
    """cloudtpu.pod.tpu_node_info with progress lines while it waits for a node's health."""

    WAIT_OPTION = "wait_healthy"
    WAIT_DEFAULT = False
