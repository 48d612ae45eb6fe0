"""The README's journey blocks: shell code blocks marked for the journey test.

A block is marked by an HTML comment on the line right before its opening fence::

    <!-- journey: run-quoted -->
    ```sh
    ansible-playbook playbooks/run.yml -e "cmd='python train.py --steps 3'"
    ```

The journey test runs each block's text verbatim in bash. Everything that would let the README
and the test drift apart fails loudly: a step the test needs with no marked block, a marker
naming a step the test does not know, a marker used twice, a marker not followed by a ``sh``
fence, a fence that never closes, a block with no command in it. A marker quoted in an inline
code span (`<!-- journey: x -->` in backquotes) is prose, not a marker.

The README holds more than one journey. ``<!-- journey: STEP -->`` marks a step of the main
walkthrough ("Day two"); ``<!-- journey NAME: STEP -->`` a step of journey NAME (for example
``<!-- journey babysit: watch -->``). Each journey's test reads only its own markers; a marker of
another journey is still checked for its form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_MARKER = re.compile(
    r"^<!--\s*journey(?:\s+(?P<journey>[a-z][a-z0-9-]*))?:\s*(?P<name>\S*?)\s*-->\s*$"
)
_LOOSE_MARKER = re.compile(r"<!--\s*journey\b")
_CODE_SPAN = re.compile(r"`[^`]*`")  # a marker quoted in prose is no marker
_OPEN = re.compile(r"^```(?:sh|bash|shell)\s*$")
_CLOSE = re.compile(r"^```\s*$")


class ReadmeBlockError(ValueError):
    """The README's marked blocks do not match the steps the journey needs."""


@dataclass(frozen=True)
class Block:
    """One marked block: its step name, its text (ending with a newline) and where it starts."""

    name: str
    text: str
    line: int  # 1-based line of the marker in the README

    @property
    def commands(self) -> list[str]:
        """The block's lines that do something (neither blank nor only a comment)."""
        return [
            line
            for line in self.text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]


def extract(
    text: str, steps: Iterable[str], source: str = "README.md", journey: str = ""
) -> dict[str, Block]:
    """Every block of ``journey`` ("" for the main walkthrough) marked with one of ``steps``;
    raise ReadmeBlockError on any mismatch."""
    wanted = list(steps)
    lines = text.splitlines()
    found: dict[str, Block] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        match = _MARKER.match(line.strip())
        if match is None:
            if _LOOSE_MARKER.search(_CODE_SPAN.sub("", line)):
                raise ReadmeBlockError(
                    f"{source}:{index + 1}: malformed journey marker {line.strip()!r}; "
                    "write it alone on its line as <!-- journey: STEP --> or "
                    "<!-- journey NAME: STEP -->"
                )
            index += 1
            continue
        if (match["journey"] or "") != journey:
            index += 1
            continue
        name = match["name"]
        where = f"{source}:{index + 1}"
        if name not in wanted:
            raise ReadmeBlockError(
                f"{where}: unknown journey step {name!r}; the journey knows {', '.join(wanted)}"
            )
        if name in found:
            raise ReadmeBlockError(
                f"{where}: journey step {name!r} is marked twice (first at "
                f"{source}:{found[name].line})"
            )
        if index + 1 >= len(lines) or not _OPEN.match(lines[index + 1].strip()):
            raise ReadmeBlockError(
                f"{where}: the journey marker {name!r} must be followed at once by a ```sh fence"
            )
        body: list[str] = []
        end = index + 2
        while end < len(lines) and not _CLOSE.match(lines[end].strip()):
            body.append(lines[end])
            end += 1
        if end >= len(lines):
            raise ReadmeBlockError(f"{where}: the code block of journey step {name!r} never closes")
        block = Block(name, "".join(f"{b}\n" for b in body), index + 1)
        if not block.commands:
            raise ReadmeBlockError(f"{where}: the code block of journey step {name!r} is empty")
        found[name] = block
        index = end + 1
    missing = [name for name in wanted if name not in found]
    if missing:
        raise ReadmeBlockError(
            f"{source} has no block marked for journey step(s) {', '.join(missing)} "
            f"(<!-- journey{' ' + journey if journey else ''}: STEP --> on the line before a "
            "```sh block)"
        )
    return {name: found[name] for name in wanted}
