"""Reading state files and choosing a backend."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from .backends import Backend, InMemoryBackend

BACKENDS: dict[str, str] = {
    "memory": "tools.tpu_emulator.backends:InMemoryBackend",
    "docker": "tools.tpu_emulator.docker_backend:DockerBackend",
}


def load_state(path: str | Path | None) -> dict[str, Any]:
    """A state file as a dict: JSON, or YAML when PyYAML is installed. None gives an empty state."""
    if path is None:
        return {}
    text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith(".json"):
        data = json.loads(text)
    else:
        try:
            import yaml
        except ImportError as exc:  # pragma: no cover - PyYAML is in requirements.txt
            raise SystemExit(f"reading {path} needs PyYAML (or give a .json state file)") from exc
        data = yaml.safe_load(text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the state must be a mapping with settings/projects/faults keys")
    return data


def load_backend(spec: str) -> Backend:
    """A backend by short name (``memory``) or as ``package.module:Class``."""
    target = BACKENDS.get(spec, spec)
    if ":" not in target:
        raise ValueError(f"unknown backend {spec!r}; use one of {sorted(BACKENDS)} or module:Class")
    module_name, class_name = target.split(":", 1)
    backend_class = getattr(importlib.import_module(module_name), class_name)
    backend = backend_class()
    if not isinstance(backend, Backend):
        raise TypeError(f"{target} is not a tools.tpu_emulator.backends.Backend")
    return backend


__all__ = ["BACKENDS", "InMemoryBackend", "load_backend", "load_state"]
