"""Daily-log parsing and duplicate detection: what becomes an entry, what is skipped, what
counts as the same fact."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.migrate.dedupe import Index, Record, near, normalise, order_ratio
from engine.migrate.parse import parse_markdown

LOG = """\
---
title: not an entry
---
# 2024-03-05

## Work
- Deploys go through CI
- Staging server is 10.0.0.5
  - runs Ubuntu 22.04
  - has 8 GB of memory
* [x] Fixed the cache bug
  that showed up on Mondays

```bash
make deploy
- not a bullet, inside code
```

| service | state |
|---------|-------|
| api     | ok    |

### Decisions
1. Use blue-green deploys
2) Keep the old cluster for a week

A paragraph that wraps
over two lines.

> A quote worth keeping
> across lines

    indented code is skipped

---

Setext heading
--------------
Text under the setext heading.
<!-- hidden comment stays in the text -->
"""


def texts(source: str) -> list[str]:
    return [b.text for b in parse_markdown(source).blocks]


def test_bullets_paragraphs_and_quotes_become_entries_with_their_heading_path() -> None:
    parsed = parse_markdown(LOG)
    got = [(b.text, b.headings, b.line, b.kind) for b in parsed.blocks]
    assert got == [
        ("Deploys go through CI", ("2024-03-05", "Work"), 7, "bullet"),
        (
            "Staging server is 10.0.0.5\n  - runs Ubuntu 22.04\n  - has 8 GB of memory",
            ("2024-03-05", "Work"),
            8,
            "bullet",
        ),
        ("Fixed the cache bug that showed up on Mondays", ("2024-03-05", "Work"), 11, "bullet"),
        ("Use blue-green deploys", ("2024-03-05", "Work", "Decisions"), 24, "bullet"),
        ("Keep the old cluster for a week", ("2024-03-05", "Work", "Decisions"), 25, "bullet"),
        ("A paragraph that wraps over two lines.", ("2024-03-05", "Work", "Decisions"), 27,
         "paragraph"),
        ("A quote worth keeping across lines", ("2024-03-05", "Work", "Decisions"), 30, "quote"),
        (
            "Text under the setext heading. <!-- hidden comment stays in the text -->",
            ("2024-03-05", "Setext heading"),  # a level-2 heading replaces Work
            39,
            "paragraph",
        ),
    ]  # fmt: skip
    assert parsed.code_blocks == 2
    assert parsed.tables == 1


def test_a_heading_replaces_its_level_and_everything_below() -> None:
    parsed = parse_markdown("# A\n## B\n### C\n- one\n## D\n- two\n# E\n- three\n")
    assert [b.headings for b in parsed.blocks] == [("A", "B", "C"), ("A", "D"), ("E",)]


def test_an_unclosed_fence_swallows_the_rest_and_nothing_leaks() -> None:
    assert texts("- before\n```\n- inside\nplain inside\n") == ["before"]


def test_code_inside_a_list_item_is_dropped_but_the_item_stays() -> None:
    assert texts("- run this:\n  ```\n  rm -rf build\n  ```\n- next\n") == ["run this:", "next"]


def test_tables_without_a_delimiter_row_are_still_tables() -> None:
    parsed = parse_markdown("| a | b |\n| 1 | 2 |\n\nafter\n")
    assert [b.text for b in parsed.blocks] == ["after"]
    assert parsed.tables == 1


def test_files_in_the_bounded_format_are_split_on_the_delimiter() -> None:
    parsed = parse_markdown("first\nline two\n§\n# not a heading here\n§\nthird")
    assert [(b.text, b.line, b.kind) for b in parsed.blocks] == [
        ("first\nline two", 1, "entry"),
        ("# not a heading here", 4, "entry"),
        ("third", 6, "entry"),
    ]
    assert parse_markdown("§\nonly\n").blocks[0].text == "only"


@pytest.mark.parametrize("text", ["", "\n\n", "# Only\n## Headings\n", "---\n", "```\ncode\n"])
def test_files_without_statements_have_no_entries(text: str) -> None:
    assert parse_markdown(text).blocks == []


def test_crlf_and_cr_line_endings_parse_like_lf() -> None:
    assert texts("# H\r\n- a\r\n- b\r\n") == texts("# H\r- a\r- b\r") == ["a", "b"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab -*#>|`~\n\t1.)[]x§=")), max_size=300))
def test_any_text_parses_into_stripped_nonempty_blocks_with_valid_lines(text: str) -> None:
    parsed = parse_markdown(text)
    lines = text.replace("\r\n", "\n").split("\n")
    for block in parsed.blocks:
        assert block.text == block.text.strip() and block.text
        assert 1 <= block.line <= len(lines) + 1


# -- duplicates ----------------------------------------------------------------------------------


def test_normalisation_ignores_case_space_emphasis_and_trailing_punctuation() -> None:
    assert normalise("  **Deploys**  go through\tCI!! ") == normalise("deploys go through ci.")
    assert normalise("Deploys go through CI") != normalise("Deploys go through CD")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Deploys go through CI", "Deploys go through the CI."),
        ("The user prefers short answers with the command first",
         "The user really prefers short answers with the command first"),
        ("Python code is formatted with ruff at line length",
         "python code is formatted with ruff at line length"),
    ],
)  # fmt: skip
def test_near_duplicates(a: str, b: str) -> None:
    assert near(Record.of(a), Record.of(b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # a different number is a different fact, however long the rest
        ("The staging server at 10.0.0.5 runs Ubuntu with nginx and a cache in front of it",
         "The staging server at 10.0.0.6 runs Ubuntu with nginx and a cache in front of it"),
        # polarity flips the meaning
        ("Always run the full test suite before pushing to the main branch",
         "Never run the full test suite before pushing to the main branch"),
        # same words, different order, different instruction
        ("Run lint before tests", "Run tests before lint"),
        # two new words in five is new information
        ("Prefers concise answers", "Prefers concise answers, no fluff"),
    ],
)  # fmt: skip
def test_not_near_duplicates(a: str, b: str) -> None:
    assert not near(Record.of(a), Record.of(b))


def test_index_finds_exact_and_near_duplicates_of_kept_records_only() -> None:
    kept = ["Deploys go through the CI pipeline", "User likes tea", "Server port is 8080"]
    queries = {
        "deploys go through the CI pipeline.": (0, True),
        "Deploys go through the CI pipeline today": (0, False),
        "User likes coffee": None,
        "Server port is 9090": None,
    }
    records = [Record.of(t) for t in [*kept, *queries]]
    index = Index(Index.count(records))
    for number, text in enumerate(kept):
        index.add(Record.of(text), number)
    for text, expected in queries.items():
        assert index.find(Record.of(text)) == expected, text


def test_prefix_filtered_search_agrees_with_comparing_every_pair() -> None:
    rng = random.Random(3)
    # Few words, so many pairs overlap; "not" and "v2" exercise the significant-word groups.
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "the", "a", "not", "v2"]
    texts_: list[str] = []
    for _ in range(600):
        if texts_ and rng.random() < 0.6:  # an edited copy of an earlier text
            edited = rng.choice(texts_).split()
            edited.insert(rng.randrange(len(edited) + 1), rng.choice(words))
            if rng.random() < 0.3:
                del edited[rng.randrange(len(edited))]
            texts_.append(" ".join(edited))
        else:
            texts_.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))))
    records = [Record.of(t) for t in texts_]
    index = Index(Index.count(records))
    kept: list[Record] = []
    found = 0
    for number, record in enumerate(records):
        slow = next((i for i, k in enumerate(kept) if k.key == record.key or near(record, k)), None)
        hit = index.find(record)
        assert (hit is None) == (slow is None), texts_[number]
        if hit is None:
            index.add(record, len(kept))
            kept.append(record)
        elif not hit[1]:
            found += 1
    assert found > 50  # the comparison is not vacuous


def test_order_ratio_is_the_longest_common_subsequence_share() -> None:
    assert order_ratio(["a", "b", "c", "d"], ["a", "b", "c", "d"]) == 1.0
    assert (
        order_ratio(["run", "lint", "before", "tests"], ["run", "tests", "before", "lint"]) == 0.5
    )
    assert order_ratio(["a", "b", "c"], ["a", "x", "b", "c"]) == pytest.approx(6 / 7)
    assert order_ratio([], []) == 1.0 and order_ratio(["a"], []) == 0.0
    long_a = [f"w{i}" for i in range(300)]
    assert order_ratio(long_a, long_a[::-1]) < 0.1  # the long path agrees on the extremes
    assert order_ratio(long_a, long_a) == 1.0


def _lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), min_size=1, max_size=12),
    st.lists(st.sampled_from("abcde"), min_size=1, max_size=12),
)
def test_order_ratio_with_trimmed_ends_equals_the_full_table(a: list[str], b: list[str]) -> None:
    assert order_ratio(a, b) == pytest.approx(2 * _lcs(a, b) / (len(a) + len(b)))
