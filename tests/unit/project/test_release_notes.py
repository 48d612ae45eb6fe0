"""Release notes that add up.

The collection's documentation, as ``ansible-doc --metadata-dump`` reports it (what
antsibull-changelog reads to list new plugins, and galaxy-importer to show their pages), agrees
with galaxy.yml and changelogs/:

- every ``version_added`` (plugins, modules, role entry points and their options) is a major or
  minor version (X.Y.0) no newer than galaxy.yml's version;
- every plugin, module and role is listed once in the changelog, under the version its
  ``version_added`` names: in changelogs/changelog.yaml when that version is released, or
  nowhere yet when it is galaxy.yml's unreleased version (``antsibull-changelog release`` then
  adds every plugin whose ``version_added`` lies after the last release, up to that version);
- the unreleased version has a release summary among the fragments;
- every filter has documentation of its own, and every filter file is named after a documented
  filter (galaxy-importer shows one entry per file and looks up its docs by the file's name);
- every ansible-core the toolchains pin (requirements.txt, requirements-next.txt), and every
  core between them that ``requires_ansible`` admits, has its tests/sanity/ignore-X.Y.txt.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

REPO = Path(__file__).resolve().parents[3]
COLLECTION = "cloudtpu.pod"
CHANGELOG = REPO / "changelogs" / "changelog.yaml"
FRAGMENTS = REPO / "changelogs" / "fragments"
FILTERS = REPO / "plugins" / "filter"
# Collection versions are X.Y.Z; a new plugin, module, role or option comes with a major or
# minor release only (ansible-test's validate-modules rule for collections).
VERSION_RE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\Z")
CORE_PIN_RE = re.compile(r"^ansible-core==([0-9]+)\.([0-9]+)\.[0-9]+\s*(?:#.*)?$", re.MULTILINE)


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def galaxy_version() -> str:
    return str(_yaml(REPO / "galaxy.yml")["version"])


def releases() -> dict[str, dict[str, Any]]:
    """changelog.yaml's releases, by version."""
    return {str(v): r or {} for v, r in (_yaml(CHANGELOG).get("releases") or {}).items()}


def ansible_doc() -> str:
    """The ansible-doc of the toolchain that runs the tests."""
    found = Path(sys.executable).parent / "ansible-doc"
    if found.exists():
        return str(found)
    which = shutil.which("ansible-doc")
    assert which, "ansible-doc not found next to the test's Python nor on PATH"
    return which


@functools.cache
def metadata() -> dict[str, dict[str, Any]]:
    """``ansible-doc --metadata-dump cloudtpu.pod``, by plugin type."""
    proc = run_ansible_doc("--metadata-dump", "--no-fail-on-errors", COLLECTION)
    assert proc.returncode == 0, f"ansible-doc --metadata-dump failed:\n{proc.stderr}"
    return json.loads(proc.stdout)["all"]


def run_ansible_doc(*args: str) -> subprocess.CompletedProcess[str]:
    """ansible-doc with the repository's ansible.cfg (its collections path resolves cloudtpu.pod
    to this checkout)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [ansible_doc(), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def documented() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(type, short name, docs) of every plugin, module and role of the collection; for a role,
    the docs of its main entry point (what antsibull-changelog reads)."""
    for plugin_type, plugins in sorted(metadata().items()):
        if plugin_type == "keyword":
            continue
        for fqcn, data in sorted(plugins.items()):
            if not fqcn.startswith(COLLECTION + "."):
                continue
            name = fqcn[len(COLLECTION) + 1 :]
            if plugin_type == "role":
                docs = (data.get("entry_points") or {}).get("main") or {}
            else:
                docs = data.get("doc") or {}
            yield plugin_type, name, docs


def _options_version_added(where: str, options: Any) -> Iterator[tuple[str, Any]]:
    for key, option in (options or {}).items():
        if not isinstance(option, dict):
            continue
        # Options from another collection's doc fragment (constructed, inventory_cache) carry
        # that collection's versions.
        theirs = option.get("version_added_collection") not in (None, COLLECTION)
        if "version_added" in option and not theirs:
            yield f"{where} option {key}", option["version_added"]
        yield from _options_version_added(f"{where} option {key}", option.get("suboptions"))


def every_version_added() -> Iterator[tuple[str, Any]]:
    """(what, version_added) of every plugin, module, role entry point and option that has one;
    plugins, modules and main entry points must have one."""
    for plugin_type, name, docs in documented():
        yield f"{plugin_type} {name}", docs.get("version_added")
        yield from _options_version_added(f"{plugin_type} {name}", docs.get("options"))
    for fqcn, data in sorted((metadata().get("role") or {}).items()):
        for entry, docs in sorted((data.get("entry_points") or {}).items()):
            if entry == "main":
                continue
            where = f"role {fqcn[len(COLLECTION) + 1 :]} entry point {entry}"
            if "version_added" in docs:
                yield where, docs["version_added"]
            yield from _options_version_added(where, docs.get("options"))


def listed_in_changelog() -> dict[tuple[str, str], list[str]]:
    """(type, name) -> the releases of changelog.yaml that list it as new, as
    antsibull-changelog records them (modules under modules:, other plugins under plugins:,
    roles and playbooks under objects:)."""
    listed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for version, release in releases().items():
        for module in release.get("modules") or []:
            name = ".".join(p for p in (module.get("namespace"), module["name"]) if p)
            listed[("module", name)].append(version)
        for section in ("plugins", "objects"):
            for plugin_type, entries in (release.get(section) or {}).items():
                for entry in entries or []:
                    listed[(plugin_type, entry["name"])].append(version)
    return listed


def test_metadata_dump_has_no_errors() -> None:
    broken = [
        f"{plugin_type} {fqcn}: {data['error']}"
        for plugin_type, plugins in metadata().items()
        for fqcn, data in plugins.items()
        if isinstance(data, dict) and data.get("error")
    ]
    assert not broken, "ansible-doc cannot read the documentation of:\n" + "\n".join(broken)


def _text_problems(where: str, docs: dict[str, Any]) -> Iterator[str]:
    """Descriptions that are not text: a ``: `` in a plain YAML scalar makes a mapping of it,
    which the metadata dump passes on and ansible-doc then fails to show."""

    def is_text(value: Any) -> bool:
        return isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        )

    if not isinstance(docs.get("short_description"), str):
        yield f"{where}: short_description is not a string"
    if "description" in docs and not is_text(docs["description"]):
        yield f"{where}: description is not a string or a list of strings"
    for key, option in (docs.get("options") or {}).items():
        if isinstance(option, dict):
            if not is_text(option.get("description")):
                yield f"{where} option {key}: description is not a string or a list of strings"
            for sub_key, sub in (option.get("suboptions") or {}).items():
                if isinstance(sub, dict) and not is_text(sub.get("description")):
                    yield f"{where} option {key}.{sub_key}: description is not text"


def test_documentation_is_text() -> None:
    problems = [
        problem
        for plugin_type, name, docs in documented()
        for problem in _text_problems(f"{plugin_type} {name}", docs)
    ]
    assert not problems, "\n".join(problems)


def test_galaxy_version_is_not_older_than_a_release() -> None:
    version = galaxy_version()
    assert VERSION_RE.match(version), f"galaxy.yml version {version!r} is not X.Y.Z"
    newer = [v for v in releases() if Version(v) > Version(version)]
    assert not newer, f"changelog.yaml has releases {newer} newer than galaxy.yml's {version}"


def test_version_added_is_released_or_next() -> None:
    limit = Version(galaxy_version())
    problems = []
    for what, version_added in every_version_added():
        text = "" if version_added is None else str(version_added)
        if not VERSION_RE.match(text):
            problems.append(f"{what}: version_added {version_added!r} is not a version X.Y.Z")
        elif not text.endswith(".0"):
            problems.append(
                f"{what}: version_added {text} is a patch release; new things come "
                "in a major or minor release (X.Y.0)"
            )
        elif Version(text) > limit:
            problems.append(
                f"{what}: version_added {text} is newer than galaxy.yml's version "
                f"{limit}, so no release will ever list it"
            )
    assert not problems, "\n".join(problems)


def test_changelog_lists_each_plugin_once_under_its_version_added() -> None:
    version = galaxy_version()
    released = releases()
    listed = listed_in_changelog()
    problems = []
    for plugin_type, name, docs in documented():
        version_added = str(docs.get("version_added"))
        where = listed.get((plugin_type, name), [])
        what = f"{plugin_type} {name} (version_added {version_added})"
        if version_added in released:
            if where != [version_added]:
                problems.append(
                    f"{what}: changelog.yaml lists it under {where or 'no release'}, "
                    f"not once under {version_added}"
                )
        elif version_added != version:
            problems.append(
                f"{what}: {version_added} is neither a release of changelog.yaml "
                f"nor galaxy.yml's next version {version}, so no release lists it"
            )
        elif where:
            problems.append(
                f"{what}: changelog.yaml already lists it under {where}, before "
                f"{version} is released"
            )
    assert not problems, "\n".join(problems)


def test_next_release_is_after_the_last_one() -> None:
    """antsibull-changelog adds to a release the plugins whose version_added lies after the
    previous release; the unreleased version must come after every released one."""
    version = galaxy_version()
    if version in releases():
        pytest.skip(f"{version} is released")
    last = max((Version(v) for v in releases()), default=None)
    assert last is None or Version(version) > last, (
        f"galaxy.yml's {version} is not after the last release {last}"
    )


def test_unreleased_version_has_one_release_summary() -> None:
    version = galaxy_version()
    released = releases()
    if version in released:
        summary = (released[version].get("changes") or {}).get("release_summary")
        assert summary, f"release {version} in changelog.yaml has no release_summary"
        return
    with_summary = sorted(
        path.name for path in FRAGMENTS.glob("*.yml") if (_yaml(path) or {}).get("release_summary")
    )
    assert len(with_summary) == 1, (
        f"{version} is unreleased: one fragment in changelogs/fragments/ should hold its "
        f"release_summary, found {with_summary or 'none'}"
    )


def filter_files() -> list[Path]:
    return sorted(p for p in FILTERS.glob("*.py") if p.name != "__init__.py")


def exported_filters() -> dict[str, str]:
    """filter name -> the file that defines it, from each file's FilterModule."""
    exported = {}
    for path in filter_files():
        module = importlib.import_module(
            f"ansible_collections.cloudtpu.pod.plugins.filter.{path.stem}"
        )
        for name in module.FilterModule().filters():
            exported[name] = path.name
    return exported


def test_every_filter_renders_its_own_documentation() -> None:
    docs = {
        fqcn[len(COLLECTION) + 1 :]: (data or {}).get("doc") or {}
        for fqcn, data in (metadata().get("filter") or {}).items()
    }
    problems = []
    for name, filename in sorted(exported_filters().items()):
        doc = docs.get(name)
        if not doc:
            problems.append(f"filter {name} ({filename}): no documentation")
        elif doc.get("name") != name:
            problems.append(
                f"filter {name} ({filename}): ansible-doc shows the documentation "
                f"of {doc.get('name')!r}"
            )
        elif not doc.get("short_description"):
            problems.append(f"filter {name} ({filename}): no short_description")
    assert not problems, "\n".join(problems)


def test_ansible_doc_shows_every_filter() -> None:
    """``ansible-doc -t filter cloudtpu.pod.<name>`` for every filter and every filter file, in
    one call."""
    names = sorted(set(exported_filters()) | {path.stem for path in filter_files()})
    proc = run_ansible_doc("-t", "filter", *(f"{COLLECTION}.{name}" for name in names))
    shown = set(re.findall(r"^> FILTER cloudtpu\.pod\.(\w+) ", proc.stdout, re.MULTILINE))
    assert proc.returncode == 0 and "[ERROR]" not in proc.stderr, proc.stderr
    assert shown == set(names), f"not shown: {sorted(set(names) - shown)}"


@pytest.mark.parametrize("path", filter_files(), ids=lambda p: p.name)
def test_filter_file_is_named_after_its_documented_filter(path: Path) -> None:
    names = set(exported_filters())
    docs = (metadata().get("filter") or {}).get(f"{COLLECTION}.{path.stem}") or {}
    assert path.stem in names and (docs.get("doc") or {}).get("name") == path.stem, (
        f"{path.name}: galaxy-importer shows a filter file as {COLLECTION}.{path.stem} with the "
        f"documentation of the filter of that name, and there is none; one filter per file, "
        f"named after it"
    )


def pinned_cores() -> dict[str, str]:
    """ansible-core X.Y -> the requirements file that pins it."""
    cores = {}
    for name in ("requirements.txt", "requirements-next.txt"):
        for major, minor in CORE_PIN_RE.findall((REPO / name).read_text(encoding="utf-8")):
            cores[f"{major}.{minor}"] = name
    return cores


def test_every_tested_core_is_admitted_and_has_its_sanity_ignore_file() -> None:
    cores = pinned_cores()
    assert cores, "requirements.txt and requirements-next.txt pin no ansible-core"
    admitted = SpecifierSet(str(_yaml(REPO / "meta" / "runtime.yml")["requires_ansible"]))
    versions = sorted(Version(core) for core in cores)
    between = [
        f"{versions[0].major}.{minor}"
        for minor in range(versions[0].minor, versions[-1].minor + 1)
        if versions[0].major == versions[-1].major
        and Version(f"{versions[0].major}.{minor}.0") in admitted
    ]
    problems = [
        f"ansible-core {core} ({cores[core]}) is outside requires_ansible {admitted}"
        for core in sorted(cores)
        if Version(f"{core}.0") not in admitted
    ]
    for core in sorted(set(cores) | set(between), key=Version):
        if not (REPO / "tests" / "sanity" / f"ignore-{core}.txt").is_file():
            why = f"pinned in {cores[core]}" if core in cores else "admitted by requires_ansible"
            problems.append(
                f"tests/sanity/ignore-{core}.txt is missing (ansible-core {core}, {why})"
            )
    assert not problems, "\n".join(problems)
