"""Load the collection's accelerator facts (a standard-library-only module) without Ansible.

The emulator validates accelerator types and sizes node worker counts with the same table the
inventory plugin uses, so the two cannot disagree.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

_FACTS_PATH = Path(__file__).resolve().parents[2] / "plugins" / "module_utils" / "tpu_facts.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cloudtpu_pod_tpu_facts", _FACTS_PATH)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load accelerator facts from {_FACTS_PATH}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tpu_facts = _load()
