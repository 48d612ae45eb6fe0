"""Every role's interface is complete: defaults, argument specs and README agree."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"
ROLE_DIRS = sorted(p for p in ROLES.iterdir() if (p / "tasks" / "main.yml").exists())


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _main_spec(role: Path) -> dict:
    spec = _load(role / "meta" / "argument_specs.yml")
    return spec["argument_specs"]["main"]["options"]


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_defaults_match_argument_specs(role: Path) -> None:
    defaults = set(_load(role / "defaults" / "main.yml"))
    options = set(_main_spec(role))
    assert defaults == options, (
        f"{role.name}: only in defaults: {sorted(defaults - options)}; "
        f"only in argument_specs: {sorted(options - defaults)}"
    )


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_every_option_has_a_type_and_description(role: Path) -> None:
    bad = [
        name
        for name, opt in _main_spec(role).items()
        if "type" not in opt or not opt.get("description")
    ]
    assert not bad, f"{role.name}: options without type or description: {bad}"


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_variables_carry_the_role_prefix(role: Path) -> None:
    prefix = f"tpu_{role.name}_"
    bad = [name for name in _load(role / "defaults" / "main.yml") if not name.startswith(prefix)]
    assert not bad, f"{role.name}: variables without the {prefix} prefix: {bad}"


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_readme_names_every_option(role: Path) -> None:
    readme = (role / "README.md").read_text()
    missing = [name for name in _main_spec(role) if name not in readme]
    assert not missing, f"{role.name}/README.md does not mention: {missing}"


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_meta_declares_no_dependencies(role: Path) -> None:
    meta = _load(role / "meta" / "main.yml")
    assert meta.get("dependencies", []) == [], f"{role.name}: playbooks say what runs"
