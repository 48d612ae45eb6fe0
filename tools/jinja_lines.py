#!/usr/bin/env python3
"""Count the lines of multi-line Jinja in the collection's YAML (roles, playbooks, site.yml).

A YAML scalar that holds a template (``{{`` or ``{%``) and spans more than one line counts
with all its lines. Logic of that size belongs in a filter plugin or module_utils, where it is
tested; the steps stay in YAML. tests/unit/tools/test_jinja_lines.py keeps the total under a
ceiling.

Usage: python3 tools/jinja_lines.py [--top N]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def scalar_lines(node: yaml.Node) -> list[int]:
    """The line counts of every multi-line templated scalar under one YAML node."""
    if isinstance(node, yaml.ScalarNode):
        text = node.value
        if "{{" not in text and "{%" not in text:
            return []
        source = node.start_mark.buffer[node.start_mark.index : node.end_mark.index].rstrip()
        lines = source.count("\n") + 1
        if node.style in ("|", ">"):
            lines -= 1  # the indicator's line holds no template
        return [lines] if lines > 1 else []
    if isinstance(node, yaml.SequenceNode):
        return [n for child in node.value for n in scalar_lines(child)]
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for child in pair for n in scalar_lines(child)]
    return []


def count_text(text: str) -> int:
    """Lines of multi-line Jinja in one YAML document stream."""
    return sum(
        sum(scalar_lines(doc))
        for doc in yaml.compose_all(text, Loader=yaml.SafeLoader)
        if doc is not None
    )


def yaml_files(root: Path = ROOT) -> list[Path]:
    files = sorted(root.glob("roles/*/*/**/*.yml")) + sorted(root.glob("playbooks/**/*.yml"))
    return [*files, root / "site.yml"]


def per_file(root: Path = ROOT) -> Counter:
    counts: Counter = Counter()
    for path in yaml_files(root):
        lines = count_text(path.read_text())
        if lines:
            counts[str(path.relative_to(root))] = lines
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=20, help="files to list, most lines first")
    args = parser.parse_args()
    counts = per_file()
    print(f"multi-line Jinja: {sum(counts.values())} lines in {len(counts)} files")
    for name, lines in counts.most_common(args.top):
        print(f"{lines:6d}  {name}")


if __name__ == "__main__":
    main()
