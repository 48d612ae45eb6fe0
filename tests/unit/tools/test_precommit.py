"""The pre-commit hooks run exactly the commands of `make lint`, with the tools of .venv."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]


def lint_commands() -> list[str]:
    """The recipe lines of the Makefile's lint target."""
    text = (REPO / "Makefile").read_text()
    match = re.search(r"^lint:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.MULTILINE)
    assert match, "no lint target in the Makefile"
    return [line.strip() for line in match.group(1).splitlines()]


def hook_entries() -> list[str]:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert all(repo["repo"] == "local" for repo in config["repos"]), "hooks must not download"
    return [hook["entry"] for hook in hooks]


def test_every_lint_command_is_a_hook_and_nothing_else() -> None:
    entries = hook_entries()
    assert all(entry.startswith(".venv/bin/") for entry in entries), entries
    assert sorted(e.removeprefix(".venv/bin/") for e in entries) == sorted(lint_commands())


def test_hooks_do_not_pass_file_names_to_whole_tree_commands() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    for hook in config["repos"][0]["hooks"]:
        assert hook.get("pass_filenames") is False, hook["id"]
        assert hook["language"] == "system", hook["id"]
