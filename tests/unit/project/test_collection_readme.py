"""The README that ships: written for those who install the collection, and whole in the tarball.

The collection is built with ansible-galaxy from this working tree, as a user gets it. Its
README (galaxy.yml's ``readme``, README.rst at the top of the tarball, what Galaxy shows) must:

- be the only README at the top of the tarball (galaxy-importer shows README.md before
  README.rst, and README.md is the README of a clone);
- parse as reStructuredText without a warning (an unknown internal target is one);
- link only to files inside the tarball (a heading's anchor, when a link names one, must exist)
  or to the collection's documentation site named in galaxy.yml;
- show every playbook of the collection as ``ansible-playbook ... cloudtpu.pod.<name>``, every
  role, module and the inventory plugin by its FQCN;
- not send its reader to what only a clone has (make targets, tools/, benchmarks, playbooks run
  by their paths in the repository).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import pytest
import yaml
from docutils import nodes
from docutils.core import publish_doctree

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
COLLECTION = "cloudtpu.pod"
README = "README.rst"

# Text that sends a collection user to what only a clone of the repository has.
CLONE_ONLY = {
    "a make target": re.compile(r"\bmake\s+[a-z][a-z-]*\b"),
    "tools/": re.compile(r"\btools/"),
    "the benchmarks": re.compile(r"BENCHMARKS|\bbench/"),
    "the clone's venv": re.compile(r"\.venv\b"),
    "the repository's inventories": re.compile(r"\binventories/"),
    "a playbook run by its path": re.compile(
        r"ansible-playbook\b[^`\n]*?(?:\bplaybooks/|(?<![\w.])site\.yml)"
    ),
    "a placeholder for a git host": re.compile(r"<your git host>"),
}


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (lower case, punctuation dropped, spaces to
    hyphens)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _markdown_anchors(text: str) -> set[str]:
    anchors: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            anchors.add(_anchor(match[1]))
    return anchors


def link_problems(text: str, shipped: dict[str, str], docs_hosts: set[str]) -> list[str]:
    """What is wrong with the links of README text ``text``: ``shipped`` maps every file of the
    tarball to its text ("" where it is not text), ``docs_hosts`` are the hosts of the
    collection's documentation site."""
    problems: list[str] = []
    warnings: list[str] = []

    class _Stream:
        def write(self, message: str) -> None:
            warnings.append(message.strip())

    doctree = publish_doctree(
        text,
        settings_overrides={
            "report_level": 2,
            "halt_level": 5,
            "warning_stream": _Stream(),
            "file_insertion_enabled": False,
            "raw_enabled": False,
        },
    )
    problems += [f"reStructuredText: {w}" for w in warnings if w]
    for reference in doctree.findall(nodes.reference):
        uri = reference.get("refuri")
        if uri is None:
            continue  # an internal reference; an unknown one is a warning above
        parts = urlsplit(uri)
        if parts.scheme or parts.netloc:
            if parts.scheme != "https" or parts.hostname not in docs_hosts:
                allowed = ", ".join(sorted(docs_hosts)) or "none named in galaxy.yml"
                problems.append(f"{uri}: not the collection's docs site ({allowed})")
            continue
        path = PurePosixPath(parts.path)
        if path.is_absolute() or ".." in path.parts or str(path) not in shipped:
            problems.append(f"{uri}: no such file in the tarball")
            continue
        if parts.fragment:
            if path.suffix != ".md":
                problems.append(f"{uri}: an anchor into a file that is not Markdown")
            elif parts.fragment not in _markdown_anchors(shipped[str(path)]):
                problems.append(f"{uri}: {path} has no heading #{parts.fragment}")
    return problems


def clone_only_mentions(text: str) -> list[str]:
    return [
        f"line {number}: {what}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        for what, pattern in CLONE_ONLY.items()
        if pattern.search(line)
    ]


def shown_by_name(text: str, playbooks: list[str], names: list[str]) -> list[str]:
    """Playbooks not shown as ``ansible-playbook ... cloudtpu.pod.<name>`` and other content not
    named by its FQCN in ``text``."""
    missing = [
        f"ansible-playbook {COLLECTION}.{name}"
        for name in playbooks
        if not re.search(rf"ansible-playbook\b[^`\n]*\b{COLLECTION}\.{name}(?![\w.])", text)
    ]
    missing += [
        f"{COLLECTION}.{name}"
        for name in names
        if not re.search(rf"\b{COLLECTION}\.{name}(?![\w])", text)
    ]
    return missing


# -- the tarball ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("collection")
    config = out / "ansible.cfg"
    config.write_text("[defaults]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_LOCAL_TEMP=str(out / ".tmp"))
    result = subprocess.run(
        [str(BIN / "ansible-galaxy"), "collection", "build", str(REPO), "--output-path", str(out)],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = out.glob("cloudtpu-pod-*.tar.gz")
    return built


@pytest.fixture(scope="module")
def shipped(tarball: Path) -> dict[str, str]:
    """Every file of the tarball, with its text (or "" when it is not UTF-8 text)."""
    files: dict[str, str] = {}
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            if member.isfile():
                data = archive.extractfile(member)
                assert data is not None
                try:
                    files[member.name] = data.read().decode("utf-8")
                except UnicodeDecodeError:
                    files[member.name] = ""
    return files


@pytest.fixture(scope="module")
def readme(shipped: dict[str, str]) -> str:
    manifest = json.loads(shipped["MANIFEST.json"])
    assert manifest["collection_info"]["readme"] == README
    return shipped[README]


def _docs_hosts() -> set[str]:
    galaxy = yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))
    url = galaxy.get("documentation") or ""
    return {urlsplit(url).hostname} if url else set()


def _top(shipped: dict[str, str], folder: str, suffix: str) -> list[str]:
    """Names of ``folder/<name><suffix>`` (files) or ``folder/<name>/`` (suffix "/") shipped."""
    names = set()
    for path in shipped:
        if not path.startswith(f"{folder}/"):
            continue
        parts = path[len(folder) + 1 :].split("/")
        if suffix == "/" and len(parts) > 1:
            names.add(parts[0])
        elif suffix != "/" and len(parts) == 1 and parts[0].endswith(suffix):
            names.add(parts[0][: -len(suffix)])
    return sorted(names)


def test_the_collections_readme_is_the_only_readme_at_the_top(shipped: dict[str, str]) -> None:
    tops = sorted(p for p in shipped if "/" not in p and p.upper().startswith("README"))
    assert tops == [README], tops


def test_every_link_resolves_inside_the_tarball_or_to_the_docs_site(
    readme: str, shipped: dict[str, str]
) -> None:
    assert "docs/docsite/rst/install.rst" in readme, "the README links no guide"
    assert not link_problems(readme, shipped, _docs_hosts())


def test_every_playbook_role_and_module_is_shown_by_its_name(
    readme: str, shipped: dict[str, str]
) -> None:
    playbooks = _top(shipped, "playbooks", ".yml")
    roles = _top(shipped, "roles", "/")
    modules = [n for n in _top(shipped, "plugins/modules", ".py") if n != "__init__"]
    inventory = [n for n in _top(shipped, "plugins/inventory", ".py") if n != "__init__"]
    assert {"provision", "site", "status", "teardown"} <= set(playbooks), playbooks
    assert {"python", "framework"} <= set(roles) and "tpu_vm" in inventory, (roles, inventory)
    assert not shown_by_name(readme, playbooks, [*roles, *modules, *inventory])


def test_nothing_only_a_clone_has(readme: str) -> None:
    assert not clone_only_mentions(readme)


# -- the checks themselves fail on what they are there to catch ---------------------------------

SHIPPED = {"README.rst": "", "LICENSE": "", "roles/base/README.md": "# base\n\n## Variables\n"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`licence <LICENSE>`_", []),
        ("`vars <roles/base/README.md#variables>`_", []),
        ("`gone <roles/base/README.txt>`_", ["roles/base/README.txt: no such file in the tarball"]),
        ("`up <../LICENSE>`_", ["../LICENSE: no such file in the tarball"]),
        ("`bench <BENCHMARKS.md>`_", ["BENCHMARKS.md: no such file in the tarball"]),
        (
            "`anchor <roles/base/README.md#nothing>`_",
            ["roles/base/README.md#nothing: roles/base/README.md has no heading #nothing"],
        ),
        (
            "`web <https://example.org/page>`_",
            ["https://example.org/page: not the collection's docs site (none named in galaxy.yml)"],
        ),
    ],
)
def test_link_problems_names_each_broken_link(text: str, expected: list[str]) -> None:
    assert link_problems(text, SHIPPED, set()) == expected


def test_link_problems_allows_the_docs_site_and_reports_rst_warnings() -> None:
    site = "`site <https://docs.example.org/x>`_"
    assert link_problems(site, SHIPPED, {"docs.example.org"}) == []
    problems = link_problems("see `nowhere`_", SHIPPED, set())
    assert len(problems) == 1 and "nowhere" in problems[0], problems


def test_clone_only_mentions_and_missing_names_are_reported() -> None:
    text = "make demo\n``ansible-playbook playbooks/run.yml``\n``ansible-playbook site.yml``\n"
    assert len(clone_only_mentions(text)) == 3
    assert clone_only_mentions("``ansible-playbook -i pods.tpu_vm.yml cloudtpu.pod.site``") == []
    assert shown_by_name("ansible-playbook cloudtpu.pod.status", ["status", "run"], []) == [
        "ansible-playbook cloudtpu.pod.run"
    ]
    assert shown_by_name("cloudtpu.pod.python_x", [], ["python"]) == ["cloudtpu.pod.python"]
