"""Imports point down only (docs/docsite/rst/architecture.rst): a plugin imports module_utils,
plugin_utils (shared controller code) and Ansible's own bases, never another plugin;
module_utils imports nothing of the collection but module_utils, and nothing of Ansible a target
lacks (it runs inside modules on any host)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
OWN = "ansible_collections.cloudtpu.pod.plugins."
CORE = ("module_utils",)
SHARED = (*CORE, "plugin_utils")


def under(name: str, folders: tuple[str, ...]) -> bool:
    return any(name == OWN + f or name.startswith(OWN + f + ".") for f in folders)


def imported(path: Path) -> list[str]:
    """The modules a file imports, by name (``from x import y`` counts as x and x.y)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def sources(folder: str) -> list[Path]:
    return sorted(p for p in (PLUGINS / folder).glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize(
    "folder",
    ["action", "filter", "inventory", "lookup", "modules", "test", "plugin_utils", "module_utils"],
)
def test_plugins_import_the_shared_code_never_one_another(folder: str) -> None:
    allowed = CORE if folder == "module_utils" else SHARED
    wrong = {
        f"{path.parent.name}/{path.name}": name
        for path in sources(folder)
        for name in imported(path)
        if name.startswith(OWN) and not under(name, allowed)
    }
    assert not wrong, f"imports of the collection outside {allowed}: {wrong}"


def test_module_utils_imports_only_what_a_target_has() -> None:
    wrong = {
        path.name: name
        for path in sources("module_utils")
        for name in imported(path)
        if name.split(".")[0] == "ansible" and not name.startswith("ansible.module_utils")
    }
    assert not wrong, f"module_utils import controller-only parts of Ansible: {wrong}"
