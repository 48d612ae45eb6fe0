"""The README block extractor, and the README itself: every journey step has its block."""

from __future__ import annotations

import pytest

from tests.journey.harness import README, STEPS
from tests.journey.readme_blocks import Block, ReadmeBlockError, extract

GOOD = """# Title

Some prose.

<!-- journey: first -->
```sh
echo "one 'quoted' thing"   # a comment stays in the text
```

<!-- journey: second -->
```bash
cat > f.txt <<'END'
inside a heredoc
END

wc -l f.txt
```
"""


def test_blocks_keep_their_text_verbatim() -> None:
    blocks = extract(GOOD, ["first", "second"])
    assert list(blocks) == ["first", "second"]
    assert blocks["first"] == Block(
        "first", "echo \"one 'quoted' thing\"   # a comment stays in the text\n", 5
    )
    assert blocks["second"].text == "cat > f.txt <<'END'\ninside a heredoc\nEND\n\nwc -l f.txt\n"
    assert blocks["second"].commands == [
        "cat > f.txt <<'END'",
        "inside a heredoc",
        "END",
        "wc -l f.txt",
    ]


def test_blocks_come_in_the_order_of_the_steps() -> None:
    assert list(extract(GOOD, ["second", "first"])) == ["second", "first"]


MISMATCHES = [
    ("missing", GOOD, ["first", "second", "third"], "no block marked for journey step(s) third"),
    ("unknown", GOOD, ["first"], "README.md:10: unknown journey step 'second'"),
    (
        "empty",
        "<!-- journey: a -->\n```sh\n\n# only a comment\n```\n",
        ["a"],
        "README.md:1: the code block of journey step 'a' is empty",
    ),
    ("no-lines", "<!-- journey: a -->\n```sh\n```\n", ["a"], "is empty"),
    (
        "twice",
        "<!-- journey: a -->\n```sh\nls\n```\n<!-- journey: a -->\n```sh\nls\n```\n",
        ["a"],
        "README.md:5: journey step 'a' is marked twice (first at README.md:1)",
    ),
    ("gap", "<!-- journey: a -->\n\n```sh\nls\n```\n", ["a"], "followed at once by a ```sh fence"),
    ("not-shell", "<!-- journey: a -->\n```python\nls\n```\n", ["a"], "followed at once"),
    ("unclosed", "<!-- journey: a -->\n```sh\nls\n", ["a"], "never closes"),
    ("inline", "see <!-- journey: a --> here\n```sh\nls\n```\n", ["a"], "malformed journey marker"),
    ("nameless", "<!-- journey: -->\n```sh\nls\n```\n", ["a"], "unknown journey step ''"),
]


def test_a_marker_quoted_in_prose_is_no_marker() -> None:
    readme = "Blocks marked `<!-- journey: a -->` run.\n<!-- journey: b -->\n```sh\nls\n```\n"
    assert list(extract(readme, ["b"])) == ["b"]


@pytest.mark.parametrize(
    ("readme", "steps", "message"),
    [pytest.param(*case[1:], id=case[0]) for case in MISMATCHES],
)
def test_mismatches_fail_loudly(readme: str, steps: list[str], message: str) -> None:
    with pytest.raises(ReadmeBlockError) as error:
        extract(readme, steps)
    assert message in str(error.value)


def test_the_readme_has_a_block_for_every_journey_step() -> None:
    blocks = extract(README.read_text(encoding="utf-8"), STEPS)
    assert list(blocks) == list(STEPS)


def test_a_named_journey_reads_only_its_own_markers() -> None:
    text = (
        "<!-- journey: first -->\n```sh\necho main\n```\n"
        "<!-- journey babysit: first -->\n```sh\necho babysit\n```\n"
    )
    assert extract(text, ["first"])["first"].text == "echo main\n"
    assert extract(text, ["first"], journey="babysit")["first"].text == "echo babysit\n"
    with pytest.raises(ReadmeBlockError, match="journey other: STEP"):
        extract(text, ["first"], journey="other")
