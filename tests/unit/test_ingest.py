"""The note-file parser: formats it accepts, errors it names, and that it never crashes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.notes.ingest import (
    MAX_BLOCK_CHARS,
    NoteFileError,
    normalise_title,
    note_key,
    parse_note_bytes,
    parse_note_file,
    parse_note_text,
)
from tests.support.notefiles import seed_files

GOOD = "vllm-project/vllm\n\n标题一 (#123)\n\n第一段，值得精读。\n\nSecond title\n\nA paragraph.\n"


def test_seed_files_parse_with_repo_lines_and_sources() -> None:
    total = 0
    for path in seed_files():
        notes = parse_note_file(path)
        total += len(notes)
        assert all(n.repo == "vllm-project/vllm" for n in notes)
        lines = path.read_text(encoding="utf-8").split("\n")
        for note in notes:
            assert lines[note.line - 1].strip().startswith(note.title[:10])
            assert note.paragraph
    assert total == 32


def test_pr_suffix_and_url_become_the_pr_link() -> None:
    text = (
        "vllm-project/vllm\n\nFix the thing (#4567)\n\np1\n\n"
        "Other fix https://github.com/vllm-project/vllm/pull/890\n\np2\n\n"
        "全角（#12）\n\np3\n\nNo PR here\n\np4\n"
    )
    notes = parse_note_text(text, "f.txt")
    assert [(n.title, n.pr) for n in notes] == [
        ("Fix the thing", 4567),
        ("Other fix", 890),
        ("全角", 12),
        ("No PR here", None),
    ]
    assert notes[0].pr_url == "https://github.com/vllm-project/vllm/pull/4567"
    assert notes[1].pr_url == "https://github.com/vllm-project/vllm/pull/890"
    assert notes[3].pr_url is None


@pytest.mark.parametrize(
    "data",
    [
        GOOD.encode("utf-8"),
        b"\xef\xbb\xbf" + GOOD.encode("utf-8"),
        GOOD.replace("\n", "\r\n").encode("utf-8"),
        GOOD.replace("\n", "  \n").encode("utf-8"),
        GOOD.rstrip("\n").encode("utf-8"),
        GOOD.encode("gb18030"),
    ],
    ids=["utf8", "bom", "crlf", "trailing-spaces", "no-final-newline", "gb18030"],
)
def test_accepted_encodings_and_line_endings(data: bytes) -> None:
    notes = parse_note_bytes(data, "f.txt")
    assert [(n.title, n.paragraph, n.pr, n.line) for n in notes] == [
        ("标题一", "第一段，值得精读。", 123, 3),
        ("Second title", "A paragraph.", None, 7),
    ]


def test_gb18030_fallback_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    parse_note_bytes(GOOD.encode("gb18030"), "legacy.txt")
    assert "legacy.txt" in caplog.text and "GB18030" in caplog.text


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        (b"", 1, "empty"),
        (b"   \n\n  ", 1, "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00", 3, "binary"),
        (b"vllm-project/vllm\n\ntitle\n\npara\x01graph\n", 5, "control character"),
        ("不是仓库行\n\n标题\n\n段落\n".encode(), 1, "repo line"),
        (b"vllm-project/vllm\n\nT1\n\nP1\n\nLonely title\n", 7, "title without a paragraph"),
        (b"vllm-project/vllm\n", 1, "no notes"),
        (b"vllm-project/vllm\n\n(#12)\n\nbody\n", 3, "title is empty"),
    ],
    ids=["empty", "blank", "binary", "control", "no-repo", "lonely-title", "no-notes", "no-title"],
)
def test_malformed_files_name_file_and_line(data: bytes, line: int, words: str) -> None:
    with pytest.raises(NoteFileError) as caught:
        parse_note_bytes(data, "bad.txt")
    assert caught.value.line == line
    assert words in caught.value.reason
    assert str(caught.value).startswith(f"bad.txt:{line}:")


def test_oversized_block_is_refused_with_its_line() -> None:
    text = "vllm-project/vllm\n\nT\n\n" + "长" * (MAX_BLOCK_CHARS + 1) + "\n"
    with pytest.raises(NoteFileError) as caught:
        parse_note_text(text, "big.txt")
    assert caught.value.line == 5 and "limit" in caught.value.reason
    ok = "vllm-project/vllm\n\nT\n\n" + "长" * MAX_BLOCK_CHARS + "\n"
    assert len(parse_note_text(ok, "ok.txt")) == 1


def test_undecodable_bytes_are_refused() -> None:
    with pytest.raises(NoteFileError) as caught:
        parse_note_bytes(b"vllm-project/vllm\n\n\xff\xff\xff\xff\n", "junk.txt")
    assert "UTF-8" in caught.value.reason


def test_title_and_paragraph_without_blank_line_between() -> None:
    notes = parse_note_text("o/r\n\nTitle\nParagraph line\n", "x.txt")
    assert (notes[0].title, notes[0].paragraph) == ("Title", "Paragraph line")


def test_unreadable_path_is_a_clean_error(tmp_path: Path) -> None:
    with pytest.raises(NoteFileError) as caught:
        parse_note_file(tmp_path / "missing.txt")
    assert "cannot read" in caught.value.reason


def test_identity_ignores_case_width_and_spacing() -> None:
    assert normalise_title("  KV  Cache ＦＰ８。") == "kv cache fp8"
    assert note_key("vllm-project/vllm", "KV Cache") == note_key("VLLM-project/vllm", "kv  cache")
    assert note_key("a/b", "x") != note_key("a/c", "x")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_parser_never_crashes_on_bytes(data: bytes) -> None:
    try:
        notes = parse_note_bytes(data, "fuzz.txt")
    except NoteFileError as exc:
        assert exc.source_file == "fuzz.txt" and exc.line >= 0 and exc.reason
    else:
        assert notes and all(n.title and n.paragraph for n in notes)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=40).filter(lambda s: s.strip() and "\n" not in s),
            st.text(min_size=1, max_size=200),
        ),
        max_size=5,
    )
)
def test_parser_never_crashes_on_text(blocks: list[tuple[str, str]]) -> None:
    text = "owner/repo\n\n" + "\n\n".join(f"{t}\n\n{p}" for t, p in blocks)
    try:
        parse_note_text(text, "gen.txt")
    except NoteFileError as exc:
        assert exc.reason


def test_a_title_repeated_in_one_file_is_an_error_naming_both_lines() -> None:
    text = "vllm-project/vllm\n\nSame title (#1)\n\np1\n\nOther\n\np2\n\nsame  TITLE (#2)\n\np3\n"
    with pytest.raises(NoteFileError) as caught:
        parse_note_text(text, "dup.txt")
    assert caught.value.line == 11
    assert "line 3" in caught.value.reason and "once per file" in caught.value.reason
    assert str(caught.value).startswith("dup.txt:11:")
