"""Every role's interface is complete: defaults, argument specs and README agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
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


def _names_set_by_tasks(role: Path) -> set[tuple[str, str]]:
    """(file, name) of every variable a role's tasks register, set_fact, or set in `vars:`,
    and of every variable of its vars/main.yml."""
    names: set[tuple[str, str]] = set()
    for path in sorted((role / "tasks").glob("*.yml")) + sorted((role / "handlers").glob("*.yml")):
        stack = list(_load_list(path))
        while stack:
            task = stack.pop()
            if not isinstance(task, dict):
                continue
            for key in ("block", "rescue", "always"):
                stack.extend(task.get(key) or [])
            if isinstance(task.get("register"), str):
                names.add((path.name, task["register"]))
            for module in ("ansible.builtin.set_fact", "set_fact"):
                if isinstance(task.get(module), dict):
                    names.update((path.name, k) for k in task[module] if k != "cacheable")
            if isinstance(task.get("vars"), dict):
                names.update((path.name, k) for k in task["vars"])
            loop_var = (task.get("loop_control") or {}).get("loop_var")
            if loop_var:
                names.add((path.name, loop_var))
    if (role / "vars" / "main.yml").exists():
        names.update(("vars/main.yml", k) for k in _load(role / "vars" / "main.yml"))
    return names


def _load_list(path: Path) -> list:
    return yaml.safe_load(path.read_text()) or []


# Options of the shared apt step, which other roles pass to it in the `vars:` of its import.
APT_OPTIONS = set(_load(ROLES / "apt" / "defaults" / "main.yml"))
# Inputs of the shared one-download-per-pod step, the python role's entry point pod_wheels, which
# other roles pass to it in the `vars:` of its include: the options of its argument spec.
POD_WHEELS_INPUTS = set(
    _load(ROLES / "python" / "meta" / "argument_specs.yml")["argument_specs"]["pod_wheels"][
        "options"
    ]
)


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_every_name_a_role_sets_carries_its_prefix(role: Path) -> None:
    """The collection's own rule instead of ansible-lint's var-naming[no-role-prefix]
    (skipped in .ansible-lint): everything a role sets starts with tpu_<role>_."""
    prefix = f"tpu_{role.name}_"
    bad = sorted(
        f"{where}: {name}"
        for where, name in _names_set_by_tasks(role)
        if not name.startswith(prefix) and name not in APT_OPTIONS | POD_WHEELS_INPUTS
    )
    assert not bad, f"{role.name}: names without the {prefix} prefix: {bad}"


def test_inline_noqa_comments_stay_rare() -> None:
    """One decision per rule (.ansible-lint, ruff.toml's per-file-ignores) instead of a noqa per
    line: fewer than 10 in the whole tree (YAML, Python and the extensionless tpu-unlock), each
    saying why."""
    repo = ROLES.parent
    skip = {".venv", ".venv-next", ".cache", ".git", "collections"}
    paths = [
        path
        for pattern in ("*.yml", "*.yaml", "*.py")
        for path in repo.rglob(pattern)
        if not skip.intersection(path.relative_to(repo).parts)
    ]
    paths.append(repo / "roles/libtpu/files/tpu-unlock")
    found, unexplained = [], []
    for path in sorted(paths):
        if path.name == Path(__file__).name:
            continue
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            if not re.search(r"#\s*(ruff:\s*)?noqa\b", line):
                continue
            where = f"{path.relative_to(repo)}:{number}: {line.strip()}"
            found.append(where)
            # The reason follows on the line itself, or is the comment right above it.
            said = re.search(r"noqa:[^#]*[-(]\s*\w", line) or (
                number > 1 and lines[number - 2].lstrip().startswith("#")
            )
            if not said:
                unexplained.append(where)
    assert len(found) < 10, "\n".join(found)
    assert not unexplained, f"a noqa without its reason: {unexplained}"
    assert not [f for f in found if "var-naming[no-role-prefix]" in f], found


def test_the_pod_wheels_inputs_are_listed() -> None:
    """The python role's entry point pod_wheels declares its options, and both callers (the
    framework, the python role's own uv) pass the required ones and nothing else: one home for
    the pod's wheel cache, the same interface for both."""
    spec = _load(ROLES / "python" / "meta" / "argument_specs.yml")["argument_specs"]["pod_wheels"]
    required = {name for name, opt in spec["options"].items() if opt.get("required")}
    install = _load_list(ROLES / "framework" / "tasks" / "install.yml")
    includes = [
        task
        for block in install
        for task in (block.get("block") or [])
        if (task.get("ansible.builtin.include_role") or {}).get("tasks_from") == "pod_wheels"
    ]
    assert len(includes) == 1, includes
    assert includes[0]["ansible.builtin.include_role"]["name"] == "cloudtpu.pod.python"
    uv = _load_list(ROLES / "python" / "tasks" / "uv.yml")
    own = [
        task
        for block in uv
        for task in (block.get("block") or [])
        if task.get("ansible.builtin.include_tasks") == "pod_wheels.yml"
    ]
    assert len(own) == 1, own
    for caller in (includes[0], own[0]):
        assert required <= set(caller["vars"]) <= POD_WHEELS_INPUTS, set(caller["vars"])
    header = (ROLES / "python" / "tasks" / "pod_wheels.yml").read_text()
    assert "tpu_python_wheels_args" in header
    assert "tpu_python_wheels_args" in (ROLES / "python" / "README.md").read_text()


@pytest.mark.parametrize("role", ROLE_DIRS, ids=lambda p: p.name)
def test_entry_points_document_their_options(role: Path) -> None:
    """Every entry point of a role (main and the ones other roles call) has options with a
    type and a description: its argument spec is the contract."""
    specs = _load(role / "meta" / "argument_specs.yml")["argument_specs"]
    bad = [
        f"{entry}: {name}"
        for entry, spec in specs.items()
        for name, opt in (spec.get("options") or {}).items()
        if "type" not in opt or not opt.get("description")
    ]
    assert not bad, f"{role.name}: options without type or description: {bad}"
