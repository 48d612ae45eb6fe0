"""The test plugin cloudtpu.pod.fullmatch, and no check of a playbook or role left on ``match``.

Jinja's ``match`` test is Python's re.match: ``$`` also matches before a final "\\n", so a check
``x is match('^[a-z-]+$')`` lets "pod-a\\n" through to a shell, a config file or the API. The
playbooks and roles check values with ``cloudtpu.pod.fullmatch`` (the whole string, never a
non-string) instead; the scan below fails on any ``match`` test, ``select``/``reject`` or
``selectattr``/``rejectattr`` with ``'match'`` whose pattern holds a ``$`` anchor or is not a
literal (a pattern in a variable cannot be read here: use fullmatch). A ``match`` on a prefix
(``'^crash /'``, no ``$``) stays: it reads program output, line by line. The Python checks have
their own table: tests/unit/checks/test_trailing_newlines.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.cloudtpu.pod.plugins.test import fullmatch as plugin

REPO = Path(__file__).resolve().parents[3]
NODE_ID = "[a-z]([-a-z0-9]{0,61}[a-z0-9])?"

# A Jinja string literal, single- or double-quoted, with backslash escapes.
_LITERAL = r"""(?P<q>['"])(?P<pattern>(?:\\.|(?!(?P=q)).)*)(?P=q)"""
# The match test (`is match(`, `is not match(`, `is ansible.builtin.match(`) and the filters that
# take a test by name (`select('match', `, `rejectattr('key', 'match', `).
_MATCH_USES = re.compile(
    r"""\bis\s+(?:not\s+)?(?:ansible\.builtin\.)?match\s*\(\s*"""
    r"""|\b(?:select|reject)\s*\(\s*['"](?:ansible\.builtin\.)?match['"]\s*,\s*"""
    r"""|\b(?:select|reject)attr\s*\(\s*['"][^'"]*['"]\s*,\s*['"](?:ansible\.builtin\.)?match['"]\s*,\s*"""
)
_ANCHOR = re.compile(r"(?<!\\)(?:\\\\)*\$")


def render(expression: str, **variables: object) -> object:
    templar = Templar(loader=DataLoader(), variables=variables)
    return templar.template(trust_as_template("{{ " + expression + " }}"))


def test_a_whole_value_matches() -> None:
    assert plugin.fullmatch("pod-a", NODE_ID)
    assert plugin.fullmatch("", "([a-z]+)?")
    assert plugin.fullmatch("TPU", "[a-z]+", ignorecase=True)


@pytest.mark.parametrize("value", ["pod-a\n", "pod-a\r\n", "\npod-a", "pod-a\nrm -rf /", "pod-a "])
def test_a_line_break_or_anything_around_the_value_is_refused(value: str) -> None:
    assert re.match(f"^{NODE_ID}$", "pod-a\n"), "re.match's $ no longer lets a final \\n in"
    assert not plugin.fullmatch(value, NODE_ID)


@pytest.mark.parametrize("value", [None, 5, 5.0, True, ["pod-a"], ("pod-a",), {"pod-a": 1}, b"a"])
def test_a_value_that_is_not_a_string_never_matches(value: object) -> None:
    assert not plugin.fullmatch(value, ".*")


def test_a_bad_pattern_is_an_error_that_says_so() -> None:
    with pytest.raises(AnsibleError, match="bad pattern"):
        plugin.fullmatch("a", "(")
    with pytest.raises(AnsibleError, match="must be a string"):
        plugin.fullmatch("a", None)  # type: ignore[arg-type]


def test_the_collection_exports_it_as_a_test() -> None:
    assert plugin.TestModule().tests() == {"fullmatch": plugin.fullmatch}


def test_it_works_in_jinja_by_its_full_name() -> None:
    names = ["pod-a", "pod-b\n", 7, "Pod-C"]
    assert render("v is cloudtpu.pod.fullmatch('[a-z-]+')", v="pod-a") is True
    assert render("v is cloudtpu.pod.fullmatch('[a-z-]+')", v="pod-a\n") is False
    assert render("v is not cloudtpu.pod.fullmatch('[0-9]+')", v=7) is True
    assert render("v | string is cloudtpu.pod.fullmatch('[0-9]+')", v=7) is True
    got = render("v | select('cloudtpu.pod.fullmatch', '[a-z-]+') | list", v=names)
    assert got == ["pod-a"]
    got = render(
        "v | map('string') | reject('cloudtpu.pod.fullmatch', '[a-z0-9-]+') | list", v=names
    )
    assert got == ["pod-b\n", "Pod-C"]


def match_problems(text: str) -> list[str]:
    """The uses of the match test in ``text`` that a trailing line break gets through, or whose
    pattern cannot be read (not a literal)."""
    found = []
    for use in _MATCH_USES.finditer(text):
        line = text.count("\n", 0, use.start()) + 1
        literal = re.compile(_LITERAL).match(text, use.end())
        if literal is None:
            found.append(f"line {line}: the pattern is not a literal (use cloudtpu.pod.fullmatch)")
        elif _ANCHOR.search(literal["pattern"]):
            found.append(f"line {line}: {literal['pattern']!r} anchors with $ (use fullmatch)")
    return found


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("x is match('^[a-z]+$')", True),
        ("x is not match('^[a-z]+$')", True),
        ('x is ansible.builtin.match("^[a-z]+$")', True),
        ("xs | select('match', '^[a-z]+$') | list", True),
        ("xs | reject( 'match' , '^(#|$)')", True),
        ("xs | selectattr('name', 'match', '^a$')", True),
        ("x is match(tpu_role__name_re)", True),
        ("xs | reject('match', tpu_role__name_re)", True),
        ("xs | select('match', '^crash /')", False),
        ("xs | select('match', '^\\\\{')", False),
        ("x is match('^[0-9]+\\$')", False),
        ("x is cloudtpu.pod.fullmatch('[a-z]+')", False),
        ("xs | select('cloudtpu.pod.fullmatch', tpu_role__name_re)", False),
        ("x is search('(^|/)\\.\\.?(/|$)')", False),
    ],
)
def test_the_scan_tells_a_hole_from_a_prefix(text: str, bad: bool) -> None:
    assert bool(match_problems(text)) == bad, match_problems(text)


def checked_files() -> list[Path]:
    files = [
        path
        for folder in ("playbooks", "roles")
        for path in sorted((REPO / folder).rglob("*"))
        if path.suffix in (".yml", ".yaml", ".j2") and "files" not in path.relative_to(REPO).parts
    ]
    assert len(files) > 50, files
    return files


def test_no_playbook_or_role_checks_with_match_anchored_by_dollar() -> None:
    problems = [
        f"{path.relative_to(REPO)} {problem}"
        for path in checked_files()
        for problem in match_problems(path.read_text(encoding="utf-8"))
    ]
    assert not problems, (
        "Jinja's match is re.match: $ also matches before a final line break, so these let a "
        "value ending in \\n through. Use cloudtpu.pod.fullmatch (without ^ and $):\n"
        + "\n".join(problems)
    )


def test_the_checks_that_were_converted_use_the_plugin() -> None:
    """The scan would pass on a tree without checks: the plugin is what the files use (fewer as
    checks move into module_utils, which use re.fullmatch themselves). The
    roles' preflight checks live in Python (plugins/module_utils/tpu_role_rules*.py), where
    every pattern goes through tpu_role_checks.matches (re.fullmatch)."""
    uses = sum(
        path.read_text(encoding="utf-8").count("cloudtpu.pod.fullmatch") for path in checked_files()
    )
    assert uses >= 5, uses
    rules = sorted((REPO / "plugins" / "module_utils").glob("tpu_role_*.py"))
    text = "".join(path.read_text(encoding="utf-8") for path in rules)
    assert text.count("matches(") >= 20
    assert "re.match(" not in text
