"""The docs site's page of every playbook, rendered from its spec (playbooks/specs/<name>.yml).

Each spec file holds one variable, ``_tpu_playbook_spec``: ``short_description``,
``description`` (paragraphs), ``examples`` (the arguments after the playbook's name on a
command line), ``options`` (argument-spec form: type, elements, default, choices, required,
description; the playbook's first play gives them to ansible.builtin.validate_argument_spec),
``data_options`` (the same form, for the user's text that the playbook reads as data and never
gives to that check) and ``roles`` (the collection's roles the playbook runs, in order: the page
links each role's own page, where its variables are, which the role checks against its
argument spec when it starts). Descriptions use Ansible's markup: C(), V(), O(), E() are code,
I() is emphasis.

The pages go to docs/docsite/rst/playbook_<name>.rst, which docs/docsite/extra-docs.yml lists
so the site's index links them; tests/unit/playbooks/test_playbook_docs.py checks that they are
current.

Usage: python tools/playbook_docs.py           (write the pages)
       python tools/playbook_docs.py --check   (exit 1 when a page is missing or stale)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "playbooks" / "specs"
ROLES = REPO / "roles"
PAGES = REPO / "docs" / "docsite" / "rst"
SPEC_VARIABLE = "_tpu_playbook_spec"
COLLECTION = "cloudtpu.pod"
INVENTORY = "pods.tpu_vm.yml"
WIDTH = 100

_MARKUP = re.compile(r"\b([CVOEI])\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
# rst's inline markup characters, escaped in plain text (a word ending in _ is a reference).
_SPECIALS = re.compile(r"([\\*`|])|_(?=\W|$)")


def load(path: Path) -> dict[str, Any]:
    """The spec of one playbook, from its file."""
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or set(data) != {SPEC_VARIABLE}:
        raise ValueError(f"{path}: must hold one variable, {SPEC_VARIABLE}")
    spec = data[SPEC_VARIABLE]
    for key in ("short_description", "description", "options"):
        if key not in spec:
            raise ValueError(f"{path}: {SPEC_VARIABLE} has no {key}")
    return spec


def specs(folder: Path = SPECS) -> dict[str, dict[str, Any]]:
    """Every playbook's spec, by the playbook's name."""
    return {path.stem: load(path) for path in sorted(folder.glob("*.yml"))}


def all_options(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The data options (the command and the like come first) and the options of a spec."""
    return {**spec.get("data_options", {}), **spec.get("options", {})}


def _escape(text: str) -> str:
    return _SPECIALS.sub(lambda m: "\\" + (m.group(1) or "_"), text)


def inline(text: str) -> str:
    """One paragraph of spec text as rst: Ansible's markup turned into rst's, the rest escaped."""
    out, last = [], 0
    for match in _MARKUP.finditer(text):
        out.append(_escape(text[last : match.start()]))
        kind, value = match.groups()
        out.append(f"*{_escape(value)}*" if kind == "I" else f"``{value}``")
        last = match.end()
    out.append(_escape(text[last:]))
    return " ".join("".join(out).split())


def paragraphs(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def wrap(text: str, indent: int = 0) -> list[str]:
    """A paragraph in lines that fit the page's width (breaks only at spaces)."""
    return textwrap.wrap(text, WIDTH - indent, break_long_words=False, break_on_hyphens=False) or [
        ""
    ]


def role_summary(role: str) -> str:
    """The short description of a role's main entry point (roles/<role>/meta/argument_specs.yml)."""
    data = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    return data["argument_specs"]["main"]["short_description"]


def _roles(spec: dict[str, Any], options: bool) -> list[str]:
    """The page's section on the roles the playbook runs, each a link to the role's page."""
    roles = spec.get("roles") or []
    if not roles:
        return []
    lines = ["Roles", "-----", ""]
    lines += wrap(
        "The roles it runs, in this order. Their variables are on each role's page; every role"
        " checks its own against its argument spec when it starts, before it changes anything."
        + (
            ""
            if options
            else " Give them with ``-e name=value`` (or ``-e @vars.yml``) or in the"
            " inventory's ``group_vars``."
        )
    )
    lines.append("")
    for role in roles:
        link = f":ref:`{COLLECTION}.{role} <ansible_collections.{COLLECTION}.{role}_role>`"
        first, *rest = wrap(f"{link} -- {inline(role_summary(role))}", indent=2)
        lines += [f"* {first}", *(f"  {line}" for line in rest)]
    return [*lines, ""]


def _value(value: Any) -> str:
    return f"``{json.dumps(value)}``"


def _type(option: dict[str, Any]) -> str:
    kind = option.get("type", "str")
    if kind == "list" and "elements" in option:
        kind = f"list of {option['elements']}"
    return kind


def _default(option: dict[str, Any]) -> str:
    if option.get("required"):
        return "required"
    return _value(option["default"]) if "default" in option else ""


def _cell(lines: list[str]) -> list[str]:
    """The lines of one list-table cell (the first after '* -' or '  -')."""
    return [lines[0], *(f"       {line}" if line else "" for line in lines[1:])] if lines else [""]


def _row(cells: list[list[str]]) -> list[str]:
    rows = []
    for number, cell in enumerate(cells):
        lead = "   * - " if number == 0 else "     - "
        first, *rest = _cell(cell)
        rows.append(f"{lead}{first}".rstrip())
        rows.extend(rest)
    return rows


def render(name: str, spec: dict[str, Any]) -> str:
    """The rst page of playbook ``name``."""
    fqcn = f"{COLLECTION}.{name}"
    title = f"{fqcn} playbook -- {inline(spec['short_description'])}"
    lines = [
        f".. _ansible_collections.{COLLECTION}.docsite.playbook_{name}:",
        "",
        f".. Rendered by tools/playbook_docs.py from playbooks/specs/{name}.yml; edit the spec.",
        "",
        title,
        "=" * len(title),
        "",
    ]
    for paragraph in paragraphs(spec["description"]):
        lines += [*wrap(inline(paragraph)), ""]
    lines += ["Usage", "-----", "", ".. code-block:: console", ""]
    for example in spec.get("examples") or [""]:
        command = f"ansible-playbook -i {INVENTORY} {fqcn} {example}".rstrip()
        lines.append(f"   $ {command}")
    lines.append("")
    options = all_options(spec)
    if not options:
        lines += ["This playbook takes no variables of its own.", "", *_roles(spec, False)]
        return "\n".join(lines).rstrip() + "\n"
    lines += [
        *wrap(
            "Every variable is checked before the playbook changes anything; the types, choices"
            " and defaults below are the ones its check reads"
            f" (``playbooks/specs/{name}.yml`` in the collection). Give them with"
            " ``-e name=value`` (or ``-e @vars.yml``); most may also live in the inventory's"
            " ``group_vars``."
        ),
        "",
        *_roles(spec, True),
    ]
    lines += [
        "Options",
        "-------",
        "",
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 22 10 10 14 44",
        "",
        *_row([["Option"], ["Type"], ["Default"], ["Choices"], ["Description"]]),
    ]
    data = spec.get("data_options", {})
    for option_name, option in options.items():
        text: list[str] = []
        notes = [inline(paragraph) for paragraph in paragraphs(option.get("description", ""))]
        if option_name in data:
            notes.append(
                "Read as data: it reaches the workers as given, and nothing in it is evaluated on"
                " this machine (not even ``{{ }}``)."
            )
        if option.get("no_log"):
            notes.append("Secret: never shown in the output.")
        for note in notes:
            text += [*wrap(note, indent=7), ""]
        choices = ", ".join(_value(choice) for choice in option.get("choices", []))
        lines += _row(
            [[f"``{option_name}``"], [_type(option)], [_default(option)], [choices], text[:-1]]
        )
    return "\n".join(lines).rstrip() + "\n"


def pages(folder: Path = SPECS) -> dict[Path, str]:
    """Every page, by its path."""
    return {
        PAGES / f"playbook_{name}.rst": render(name, spec) for name, spec in specs(folder).items()
    }


def stale(expected: dict[Path, str]) -> list[Path]:
    """The pages that are missing or differ from what their spec renders."""
    return [
        path for path, text in expected.items() if not path.exists() or path.read_text() != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a page is stale")
    args = parser.parse_args(argv)
    expected = pages()
    old = stale(expected)
    if args.check:
        for path in old:
            print(f"stale: {path} (run python tools/playbook_docs.py)")
        return 1 if old else 0
    for path in old:
        path.write_text(expected[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
