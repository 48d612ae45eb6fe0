"""Playbook options as data: playbooks/specs/<name>.yml, its check and its docs page.

Each spec is the one home of a playbook's variables: the playbook's check play gives its
options to ansible.builtin.validate_argument_spec, and tools/playbook_docs.py renders it into
docs/docsite/rst/playbook_<name>.rst. These tests keep the three together: the pages are
current and linked from the site's index, every variable the playbook reads from the user is
in its spec (and every option of the spec is read), the defaults fit their types, and the
header comment points to the page instead of listing the variables again.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from tools import playbook_docs

REPO = playbook_docs.REPO
PLAYBOOKS = REPO / "playbooks"
SPECS = playbook_docs.specs()
# Playbooks without a spec, and why (none: a new playbook comes with its spec).
WITHOUT_SPEC: dict[str, str] = {}
# The playbooks with options of their own, which their check validates. The others (preflight,
# reset, site) read no variable of their own: their roles check theirs (the `roles` of the spec).
VALIDATED = sorted(name for name in SPECS if SPECS[name]["options"])
# The values a play may read as the user's text, without templating them (vars/run.yml).
AS_DATA = re.compile(r"lookup\('cloudtpu\.pod\.as_data', '([a-z_]+)'")


def test_every_playbook_has_a_spec_or_a_reason() -> None:
    playbooks = {path.name for path in PLAYBOOKS.glob("*.yml")}
    with_spec = {f"{name}.yml" for name in SPECS}
    assert with_spec <= playbooks, with_spec - playbooks
    assert with_spec | set(WITHOUT_SPEC) == playbooks, playbooks - with_spec - set(WITHOUT_SPEC)
    assert not with_spec & set(WITHOUT_SPEC), "a playbook with a spec is still listed as without"
    for name in ("provision", "recover", "teardown", "run", "sync", "logs", "status", "verify"):
        assert name in SPECS, name
    for name in ("babysit", "bootstrap", "reset", "site", "preflight"):
        assert name in SPECS, name
    assert {"babysit", "bootstrap", "run"} <= set(VALIDATED)


def test_the_pages_are_current() -> None:
    stale = playbook_docs.stale(playbook_docs.pages())
    assert not stale, f"run python tools/playbook_docs.py: {[str(p) for p in stale]}"


def test_the_pages_are_linked_from_the_sites_index() -> None:
    extra = yaml.safe_load((REPO / "docs" / "docsite" / "extra-docs.yml").read_text())
    listed = {page for section in extra["sections"] for page in section["toctree"]}
    for name in SPECS:
        assert f"playbook_{name}" in listed, name


def test_a_stale_page_is_found_and_written_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(playbook_docs, "PAGES", tmp_path)
    assert playbook_docs.main(["--check"]) == 1
    assert playbook_docs.main([]) == 0
    assert playbook_docs.main(["--check"]) == 0
    page = tmp_path / "playbook_run.rst"
    page.write_text(page.read_text().replace("tpu_run_timeout", "tpu_run_time"))
    assert playbook_docs.stale(playbook_docs.pages()) == [page]


def test_the_page_shows_the_command_and_every_option() -> None:
    page = playbook_docs.render("run", SPECS["run"])
    assert ".. _ansible_collections.cloudtpu.pod.docsite.playbook_run:" in page
    assert "$ ansible-playbook -i pods.tpu_vm.yml cloudtpu.pod.run -e tpu_run_script=" in page
    for option, spec in playbook_docs.all_options(SPECS["run"]).items():
        assert f"* - ``{option}``" in page, option
        assert spec.get("type", "str") in page
    # the data options say that they are data; the type, default and choices are in the table
    assert "nothing in it is evaluated" in page
    provision = playbook_docs.render("provision", SPECS["provision"])
    assert '``"queued_resource"``' in provision
    assert "list of str" in provision
    assert "Secret: never shown" in provision


def test_markup_becomes_rst_and_the_rest_is_escaped() -> None:
    assert playbook_docs.inline("C(a_b) and I(x) in E(HOME)") == "``a_b`` and *x* in ``HOME``"
    assert playbook_docs.inline("C(f(x)) costs") == "``f(x)`` costs"
    assert playbook_docs.inline("tpu_sync_* and *stars* `x` a|b") == (
        "tpu_sync\\_\\* and \\*stars\\* \\`x\\` a\\|b"
    )
    assert playbook_docs.inline("a word_ ends") == "a word\\_ ends"


def test_a_spec_file_holds_one_variable(tmp_path: Path) -> None:
    bad = tmp_path / "x.yml"
    bad.write_text("other: {}\n")
    with pytest.raises(ValueError, match="_tpu_playbook_spec"):
        playbook_docs.load(bad)
    bad.write_text("_tpu_playbook_spec: {short_description: x, options: {}}\n")
    with pytest.raises(ValueError, match="description"):
        playbook_docs.load(bad)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_spec_is_plain_text(name: str) -> None:
    """The check renders the spec as a template: a brace pair in it would be evaluated."""
    text = (PLAYBOOKS / "specs" / f"{name}.yml").read_text()
    assert "{{" not in text and "{%" not in text and "{#" not in text, name


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_defaults_fit_their_types_and_choices(name: str) -> None:
    options = SPECS[name]["options"]
    for option, spec in playbook_docs.all_options(SPECS[name]).items():
        assert spec.get("description"), f"{name}: {option} has no description"
        assert spec.get("type", "str") in {"str", "int", "float", "bool", "list", "dict", "path"}
    required = {key: "x" for key, spec in options.items() if spec.get("required")}
    result = ArgumentSpecValidator(options).validate(required)
    assert not result.error_messages, (name, result.error_messages)


def _plays(path: Path) -> list[dict[str, Any]]:
    return yaml.safe_load(path.read_text()) or []


def _check_tasks(name: str) -> list[tuple[dict, dict]]:
    """The (play, task) pairs of the playbook that call validate_argument_spec, in its plays or
    in the task files they include."""
    found = []
    for play in _plays(PLAYBOOKS / f"{name}.yml"):
        tasks = [(PLAYBOOKS, task) for task in play.get("tasks", [])]
        for folder, task in tasks:
            for key in ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks"):
                if isinstance(task.get(key), str):
                    path = (folder / task[key]).resolve()
                    tasks += [(path.parent, task) for task in _plays(path)]
            if "ansible.builtin.validate_argument_spec" in task:
                found.append((play, task))
    return found


@pytest.mark.parametrize("name", VALIDATED)
def test_the_check_reads_the_spec(name: str) -> None:
    checks = _check_tasks(name)
    assert len(checks) >= 1, f"{name}.yml calls no validate_argument_spec"
    play, task = checks[-1]
    assert f"specs/{name}.yml" in play.get("vars_files", []), name
    spec = task["ansible.builtin.validate_argument_spec"]["argument_spec"]
    assert spec == "{{ _tpu_playbook_spec['options'] }}", (name, spec)
    assert task["name"].startswith("Check"), task["name"]


# What a playbook reads from the user, found in its text: names with its own prefix
# (tpu_<playbook>_), and what vars/run.yml reads as data, that the playbook does not set itself
# (register, set_fact, a task's vars, a vars file, a play's vars that are templates).
def _files(path: Path, seen: set[Path], top: Path) -> None:
    """The playbook and the files it loads below playbooks/ (not other top-level playbooks)."""
    if path in seen or not path.exists():
        return
    seen.add(path)
    text = path.read_text()
    for match in re.finditer(
        r"(?:import_tasks|include_tasks|import_playbook):\s*(\S+\.yml)|^\s*-\s*(\S+/\S+\.yml)\s*$",
        text,
        re.M,
    ):
        target = (path.parent / (match.group(1) or match.group(2))).resolve()
        if target.parent != top or path.parent != top or target == path:
            _files(target, seen, top)
    for match in re.finditer(r"vars_files:\s*\[([^\]]*)\]", text):
        for entry in match.group(1).split(","):
            _files((path.parent / entry.strip()).resolve(), seen, top)


def _set_inside(node: Any, names: set[str], play_level: bool = False) -> None:
    if isinstance(node, list):
        for item in node:
            _set_inside(item, names, play_level=play_level)
        return
    if not isinstance(node, dict):
        return
    if isinstance(node.get("register"), str):
        names.add(node["register"])
    for key in ("ansible.builtin.set_fact", "set_fact"):
        if isinstance(node.get(key), dict):
            names.update(node[key])
    if isinstance(node.get("loop_control"), dict) and "loop_var" in node["loop_control"]:
        names.add(node["loop_control"]["loop_var"])
    if isinstance(node.get("vars"), dict):
        for key, value in node["vars"].items():
            if not (play_level and "hosts" in node) or "{{" in str(value):
                names.add(key)
    for key, value in node.items():
        if key != "vars":
            _set_inside(value, names, play_level=play_level)


def user_variables(name: str, top: Path = PLAYBOOKS) -> tuple[set[str], set[str]]:
    """The names the playbook reads from the user, and every own-prefix name in its text."""
    files: set[Path] = set()
    _files((top / f"{name}.yml").resolve(), files, top.resolve())
    prefix = f"tpu_{name}_"
    used: set[str] = set()
    internal: set[str] = set()
    for path in files:
        if "specs" in path.parts:
            continue
        text = path.read_text()
        used.update(re.findall(rf"(?<![\w.&*]){prefix}[a-z0-9_]*[a-z0-9]", text))
        used.update(n for n in AS_DATA.findall(text) if not n.startswith("_"))
        data = yaml.safe_load(text)
        if path.parent.name == "vars":
            internal.update(data or {})
        else:
            _set_inside(data, internal, play_level=True)
    return used - internal, used


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_variable_the_playbook_reads_is_in_its_spec(name: str) -> None:
    read, _ = user_variables(name)
    documented = set(playbook_docs.all_options(SPECS[name]))
    assert read or name not in VALIDATED, f"{name}.yml: no variable found; the scan is broken"
    assert read <= documented, f"{name}.yml reads these, its spec lacks them: {read - documented}"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_option_of_the_spec_is_read(name: str) -> None:
    _, mentioned = user_variables(name)
    own = {o for o in playbook_docs.all_options(SPECS[name]) if o.startswith(f"tpu_{name}_")}
    unread = own - mentioned
    assert not unread, f"specs/{name}.yml names what {name}.yml never reads: {unread}"


def test_the_scan_finds_what_each_playbook_reads() -> None:
    assert user_variables("verify")[0] == {
        "tpu_verify_require_tpu",
        "tpu_verify_multihost",
        "tpu_verify_timeout",
        "tpu_verify_start_delay",
    }
    run = user_variables("run")[0]
    assert {"cmd", "tpu_run_script", "tpu_run_env", "tpu_run_timeout"} <= run
    assert "tpu_run_report" not in run  # a YAML anchor's name
    assert "tpu_provision_pull_vars" in user_variables("provision")[0]


def test_the_scan_finds_a_new_variable(tmp_path: Path) -> None:
    """A variable added to a playbook but not to its spec is found."""
    (tmp_path / "status.yml").write_text(
        (PLAYBOOKS / "status.yml").read_text()
        + "\n- name: More\n  hosts: localhost\n  tasks:\n    - ansible.builtin.debug:\n"
        + "        msg: \"{{ tpu_status_colour | default('red') }}\"\n"
    )
    read, _ = user_variables("status", tmp_path)
    assert "tpu_status_colour" in read
    assert "tpu_status_colour" not in playbook_docs.all_options(SPECS["status"])


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_header_points_to_the_page_and_lists_no_variable(name: str) -> None:
    header = []
    for line in (PLAYBOOKS / f"{name}.yml").read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        header.append(line)
    text = "\n".join(header)
    assert f"playbook_{name}" in text, f"{name}.yml's header does not name its docs page"
    heading = re.search(r"^#\s+(Other )?[Vv]ariables\b(?!: docs/docsite/)", text, re.M)
    assert not heading, f"{name}.yml's header lists variables: {heading}"
    listed = re.findall(r"^#\s{2,}(tpu_[a-z0-9_]+)\s{2,}", text, re.M)
    assert not listed, f"{name}.yml's header lists {listed}"


def roles_run(path: Path) -> list[str]:
    """The collection's roles a playbook runs, in order, with those of the playbooks it imports
    and of the rounds cloudtpu.pod.babysit_rounds starts."""
    found: list[str] = []
    for play in _plays(path):
        target = play.get("ansible.builtin.import_playbook")
        if isinstance(target, str):
            found += roles_run((path.parent / target).resolve())
        for role in play.get("roles", []):
            name = role["role"] if isinstance(role, dict) else role
            found.append(name.removeprefix("cloudtpu.pod."))
        for task in play.get("tasks", []):
            rounds = task.get("cloudtpu.pod.babysit_rounds")
            if rounds:
                found += roles_run(path.parent / rounds["playbook"].split("}}/")[-1])
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_spec_names_the_roles_the_playbook_runs(name: str) -> None:
    """The page links the roles whose variables the playbook takes, every one of them."""
    assert SPECS[name].get("roles", []) == roles_run(PLAYBOOKS / f"{name}.yml"), name
    page = playbook_docs.render(name, SPECS[name])
    for role in SPECS[name].get("roles", []):
        # the role checks its own variables: it has an argument spec, whose summary the page shows
        summary = playbook_docs.role_summary(role)
        assert f"<ansible_collections.cloudtpu.pod.{role}_role>`" in page, (name, role)
        assert playbook_docs.inline(summary).split()[0] in page, (name, role)


def test_the_scan_finds_the_roles() -> None:
    assert roles_run(PLAYBOOKS / "reset.yml") == ["libtpu"]
    assert roles_run(PLAYBOOKS / "site.yml")[:2] == ["base", "python"]
    assert roles_run(PLAYBOOKS / "recover.yml") == roles_run(PLAYBOOKS / "bootstrap.yml")
    assert roles_run(PLAYBOOKS / "babysit.yml") == roles_run(PLAYBOOKS / "bootstrap.yml")
    assert roles_run(PLAYBOOKS / "status.yml") == []


@pytest.mark.parametrize("name", sorted(set(SPECS) - set(VALIDATED)))
def test_a_playbook_without_options_reads_no_variable_of_its_own(name: str) -> None:
    """No check to give a spec to: the playbook reads nothing the user gives it but its roles'
    variables (which the roles check)."""
    read, mentioned = user_variables(name)
    assert not read and not mentioned, (name, read, mentioned)
    page = playbook_docs.render(name, SPECS[name])
    assert "This playbook takes no variables of its own." in page


def test_a_role_page_is_linked_with_its_summary() -> None:
    page = playbook_docs.render("reset", SPECS["reset"])
    assert ":ref:`cloudtpu.pod.libtpu <ansible_collections.cloudtpu.pod.libtpu_role>`" in page
    assert "Roles\n-----" in page and "Options\n-------" not in page
    bootstrap = playbook_docs.render("bootstrap", SPECS["bootstrap"])
    assert bootstrap.index("Roles\n-----") < bootstrap.index("``tpu_bootstrap_hosts``")
