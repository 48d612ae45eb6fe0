# Copyright: (c) cloudtpu.pod contributors
# SPDX-License-Identifier: Apache-2.0
"""The controller's half of cloudtpu.pod.tpu_queued_resource: the module runs as it would
alone; while it waits on the controller, the request's state it reads at every poll is shown as
a line (plugins/plugin_utils/tpu_progress_action.py)."""

from __future__ import annotations

from ansible_collections.cloudtpu.pod.plugins.plugin_utils.tpu_progress_action import (
    ProgressAction,
)


class ActionModule(ProgressAction):
    """cloudtpu.pod.tpu_queued_resource with progress lines while it waits."""
