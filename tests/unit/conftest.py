"""Unit test setup shared by every test under tests/unit.

The repository root is the collection cloudtpu.pod; collections/ansible_collections/cloudtpu/pod
links back to it. Installing Ansible's collection loader with that path makes
``ansible_collections.cloudtpu.pod...`` importable and ``plugin: cloudtpu.pod.tpu_vm`` resolvable,
as it is for the ansible-* commands.
"""

from __future__ import annotations

from pathlib import Path

from ansible.plugins.loader import init_plugin_loader

init_plugin_loader([str(Path(__file__).resolve().parents[2] / "collections")])
