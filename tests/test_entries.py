"""The file format and prompt block of REFERENCE §1, and its round-trip properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.memory.entries import (
    DELIMITER,
    EntryError,
    Target,
    clean_entry,
    header,
    is_canonical,
    parse,
    prompt_block,
    render,
    usage,
)


def test_usage_counts_delimiters() -> None:
    entries = ["abc", "de"]
    assert render(entries) == "abc\n§\nde"
    assert usage(entries) == 3 + 3 + 2


def test_parse_splits_on_full_delimiter_only() -> None:
    text = "price is 5 § per unit\n§\nsecond\n§\n\n§\n  third  "
    assert parse(text) == ["price is 5 § per unit", "second", "third"]


def test_parse_accepts_crlf_files() -> None:
    assert parse("one\r\n§\r\ntwo\r\n") == ["one", "two"]


def test_header_thousands_and_floored_percent() -> None:
    assert (
        header(Target.MEMORY, 1474, 2200)
        == "MEMORY (your personal notes) [67% — 1,474/2,200 chars]"
    )
    assert header(Target.USER, 1374, 1375).startswith(
        "USER PROFILE (who the user is) [99% — 1,374/1,375 chars]"
    )


def test_header_hints_consolidation_above_80_percent() -> None:
    assert "consolidate" not in header(Target.MEMORY, 1760, 2200)  # exactly 80%
    assert "consolidate" in header(Target.MEMORY, 1761, 2200)


def test_header_marks_over_budget() -> None:
    line = header(Target.MEMORY, 2420, 2200)
    assert "OVER BUDGET 110% — 2,420/2,200 chars" in line


def test_prompt_block_shape_and_empty_store() -> None:
    assert prompt_block(Target.MEMORY, [], 2200) == ""
    lines = prompt_block(Target.MEMORY, ["a", "b"], 2200).split("\n")
    assert lines[0] == lines[2] and set(lines[0]) == {"═"}
    assert lines[1] == "MEMORY (your personal notes) [0% — 5/2,200 chars]"
    assert "\n".join(lines[3:]) == "a\n§\nb"


@pytest.mark.parametrize(
    "content",
    ["", "   ", "\n\t\n", "§", " § \n § ", "a\n§\nb", "x\x00y", "bell\x07"],
)
def test_clean_entry_refuses_what_breaks_the_format(content: str) -> None:
    with pytest.raises(EntryError):
        clean_entry(content)


def test_canonical_allows_one_trailing_newline() -> None:
    assert is_canonical("a\n§\nb")
    assert is_canonical("a\n§\nb\n")
    assert not is_canonical("a\n§\n\n§\nb")
    assert not is_canonical("a\r\n§\r\nb")
    assert not is_canonical("  a\n§\nb")


entry_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=80,
).filter(lambda s: _storable(s))


def _storable(text: str) -> bool:
    try:
        return clean_entry(text) == text
    except EntryError:
        return False


@given(st.lists(entry_text, max_size=12))
def test_parse_render_round_trip(entries: list[str]) -> None:
    assert parse(render(entries)) == entries
    assert is_canonical(render(entries))
    assert usage(entries) == len(DELIMITER.join(entries))
