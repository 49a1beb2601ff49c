"""Reading note files: bytes in, `ParsedNote`s or one clear `NoteFileError` out.

A note file is a repo line (`owner/repo`), then blocks separated by blank lines that
alternate title / paragraph. Chinese or English; UTF-8 (with or without BOM) or GB18030.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from pathlib import Path

from bot.domain import ParsedNote

log = logging.getLogger(__name__)

MAX_BLOCK_CHARS = 10_000
MAX_FILE_BYTES = 50 * 1024 * 1024
NOTE_SUFFIXES = (".txt", ".md")

_REPO = re.compile(r"^(?:https?://github\.com/)?([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+?)/?$")
_PR_URL = re.compile(r"https?://github\.com/([\w.-]+/[\w.-]+)/pull/(\d+)\S*", re.IGNORECASE)
_PR_SUFFIX = re.compile(r"\s*[(（]\s*#(\d+)\s*[)）]\s*$")
_SPACES = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


class NoteFileError(Exception):
    """A note file that cannot be read; names the file and the line (0: the whole file)."""

    def __init__(self, source_file: str, line: int, reason: str) -> None:
        super().__init__(source_file, line, reason)
        self.source_file = source_file
        self.line = line
        self.reason = reason

    def __str__(self) -> str:
        if self.line == 0:
            return f"{self.source_file}: {self.reason}"
        return f"{self.source_file}:{self.line}: {self.reason}"


def decode_note_bytes(data: bytes, source_file: str) -> str:
    """UTF-8 (BOM optional) first, GB18030 as a fallback; binary data is refused."""
    if not data.strip():
        raise NoteFileError(source_file, 1, "file is empty")
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise NoteFileError(source_file, line, "binary data (NUL byte), not a note file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as utf8_error:
        try:
            text = data.decode("gb18030")
        except UnicodeDecodeError:
            line = data[: utf8_error.start].count(b"\n") + 1
            raise NoteFileError(source_file, line, "not text: neither UTF-8 nor GB18030") from None
        log.info("%s: not UTF-8, decoded as GB18030", source_file)
    bad = _CONTROL.search(text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        raise NoteFileError(
            source_file, line, f"binary data (control character {bad[0]!r}), not a note file"
        )
    return text


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """Blank-line separated blocks, each with its first line number."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            if current:
                blocks.append((start, current))
                current = []
            continue
        if not current:
            start = number
        current.append(line)
    if current:
        blocks.append((start, current))
    return blocks


def split_title(title: str, repo: str) -> tuple[str, int | None, str | None]:
    """Take a PR reference off a title: `(#123)` at the end or a GitHub pull URL."""
    pr: int | None = None
    url: str | None = None
    url_match = _PR_URL.search(title)
    if url_match:
        pr = int(url_match[2])
        url = f"https://github.com/{url_match[1]}/pull/{pr}"
        title = (title[: url_match.start()] + title[url_match.end() :]).strip(" -–—:|")
    suffix = _PR_SUFFIX.search(title)
    if suffix:
        if pr is None:
            pr = int(suffix[1])
        title = title[: suffix.start()]
    if pr is not None and url is None:
        url = f"https://github.com/{repo}/pull/{pr}"
    return _SPACES.sub(" ", title).strip(), pr, url


def parse_note_text(text: str, source_file: str) -> list[ParsedNote]:
    """Parse decoded text; raises NoteFileError for the first problem found."""
    blocks = _blocks(text.replace("\r\n", "\n").replace("\r", "\n"))
    if not blocks:
        raise NoteFileError(source_file, 1, "file is empty")
    for line, lines in blocks:
        size = sum(len(x) for x in lines)
        if size > MAX_BLOCK_CHARS:
            raise NoteFileError(
                source_file, line, f"block of {size} characters (limit {MAX_BLOCK_CHARS})"
            )
    repo_line, repo_lines = blocks[0]
    repo_match = _REPO.match(repo_lines[0]) if len(repo_lines) == 1 else None
    if repo_match is None:
        raise NoteFileError(
            source_file,
            repo_line,
            f"expected a repo line such as 'vllm-project/vllm', got {repo_lines[0][:60]!r}",
        )
    repo = repo_match[1]
    notes: list[ParsedNote] = []
    first_line: dict[str, int] = {}  # identity key -> line of its first title
    body = blocks[1:]
    if not body:
        raise NoteFileError(source_file, repo_line, "no notes after the repo line")
    index = 0
    while index < len(body):
        line, title_lines = body[index]
        if len(title_lines) > 1:
            # A title followed by its paragraph without a blank line between them.
            title_text, paragraph = title_lines[0], "\n".join(title_lines[1:])
            index += 1
        elif index + 1 < len(body):
            title_text, paragraph = title_lines[0], "\n".join(body[index + 1][1])
            index += 2
        else:
            raise NoteFileError(
                source_file, line, f"title without a paragraph: {title_lines[0][:60]!r}"
            )
        title, pr, pr_url = split_title(title_text, repo)
        if not title:
            raise NoteFileError(source_file, line, "title is empty once the PR link is removed")
        key = note_key(repo, title)
        if key in first_line:
            # A note is its repo plus its title: a second block with the same title would
            # silently replace the first, so the file is refused instead.
            raise NoteFileError(
                source_file,
                line,
                f"title {title[:60]!r} repeats the title on line {first_line[key]}; "
                "a title may appear once per file",
            )
        first_line[key] = line
        notes.append(
            ParsedNote(
                repo=repo,
                title=title,
                paragraph=paragraph,
                pr=pr,
                pr_url=pr_url,
                source_file=source_file,
                line=line,
            )
        )
    return notes


def parse_note_bytes(data: bytes, source_file: str) -> list[ParsedNote]:
    return parse_note_text(decode_note_bytes(data, source_file), source_file)


def parse_note_file(path: Path) -> list[ParsedNote]:
    """Read and parse one file; I/O problems become NoteFileError too."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise NoteFileError(str(path), 1, f"file of {size} bytes is too large")
        data = path.read_bytes()
    except OSError as exc:
        raise NoteFileError(str(path), 1, f"cannot read: {exc.strerror or exc}") from None
    return parse_note_bytes(data, str(path))


def find_note_files(paths: list[Path]) -> list[Path]:
    """Files named on the command line, and note files under named folders, sorted."""
    return scan_note_paths(paths)[0]


def scan_note_paths(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(note files, skipped files): files named on the command line and note files under
    named folders, sorted; and the files under those folders with another suffix."""
    found: list[Path] = []
    skipped: list[Path] = []
    seen: set[Path] = set()  # a file named twice (or also under a named folder) is read once

    def add(path: Path, into: list[Path]) -> None:
        real = path.resolve()
        if real not in seen:
            seen.add(real)
            into.append(path)

    for path in paths:
        if path.is_dir():
            for p in sorted(path.rglob("*")):
                if not p.is_file() or p.name.startswith("."):
                    continue
                add(p, found if p.suffix.lower() in NOTE_SUFFIXES else skipped)
        else:
            add(path, found)
    return found, skipped


def normalise_title(title: str) -> str:
    """The identity form of a title: NFKC, case-folded, single spaces, no end punctuation."""
    text = _SPACES.sub(" ", unicodedata.normalize("NFKC", title)).strip().casefold()
    return text.rstrip("。.!！ ")


def note_key(repo: str, title: str) -> str:
    """A note's identity: repo plus normalised title."""
    raw = f"{repo.casefold()}\x1f{normalise_title(title)}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def content_hash(note: ParsedNote) -> str:
    raw = f"{note.title}\x1f{note.paragraph}\x1f{note.pr}\x1f{note.pr_url}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]
