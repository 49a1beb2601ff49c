"""The sample notes that ship with prdigest, and the team's notes folder that is never them.

The samples are the repository's digests/ folder; the wheel carries the same files as
bot/sample_digests (see pyproject.toml). They are for trying prdigest: `prdigest preview` shows
them from a throwaway store, and `prdigest ingest PATH` stores them when PATH names them.
`PRDIGEST_DIGESTS_DIR` names the team's own notes folder and has no default, so `post`,
`serve`, scheduled runs and `ingest` without a path never read the samples: a folder that
is unset, or that is (or holds a copy of) the samples, is refused with one line.

A note is a sample when its identity (repo and normalised title) and its content match a
bundled sample note: a team note that happens to share a sample's title but says something
else is the team's.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

import sqlalchemy as sa

import bot
from bot.notes.ingest import (
    NOTE_SUFFIXES,
    content_hash,
    find_note_files,
    note_key,
    parse_note_file,
)

NOTES_SETTING = "PRDIGEST_DIGESTS_DIR"


class NotesFolderError(ValueError):
    """The team's notes folder is unset or holds the bundled samples; the message is the
    one line that says so and what to set."""


def bundled_notes_dir() -> Path:
    """The installed copy of the sample notes, or digests/ when running from a checkout."""
    package = Path(bot.__file__).parent
    installed = package / "sample_digests"
    return installed if installed.is_dir() else package.parent / "digests"


@functools.cache
def _bundled_files(folder: Path) -> dict[str, Path]:
    """sha256 of each bundled sample file -> the file."""
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in find_note_files([folder])}


@functools.cache
def _bundled_identities(folder: Path) -> dict[str, str]:
    """Identity key -> content hash of every bundled sample note."""
    return {
        note_key(n.repo, n.title): content_hash(n)
        for path in find_note_files([folder])
        for n in parse_note_file(path)
    }


def sample_identities() -> dict[str, str]:
    """The bundled sample notes as the store knows notes: identity key -> content hash."""
    return dict(_bundled_identities(bundled_notes_dir().resolve()))


def sample_files_in(paths: Iterable[Path]) -> list[Path]:
    """The files under `paths` that are bundled sample files: the bundled folder itself, or
    note files with the same bytes as a sample file (a copy of digests/, say)."""
    bundled = bundled_notes_dir().resolve()
    digests = _bundled_files(bundled)
    sizes = {p.stat().st_size for p in digests.values()}
    found: list[Path] = []
    for path in find_note_files([p for p in paths if p.exists()]):
        real = path.resolve()
        if real.parent == bundled and real.suffix.lower() in NOTE_SUFFIXES:
            found.append(path)
            continue
        try:
            if path.stat().st_size not in sizes:
                continue
            same = hashlib.sha256(path.read_bytes()).hexdigest() in digests
        except OSError:
            continue  # unreadable: ingesting it reports the file
        if same:
            found.append(path)
    return found


def team_notes_dir(folder: Path | None) -> Path:
    """The team's notes folder named by PRDIGEST_DIGESTS_DIR, for `post`, `serve`, scheduled
    runs and `ingest` without a path.

    Raises NotesFolderError when it is not set, or when it is the bundled samples or holds
    one of their files. A folder that is set but empty (or does not exist yet) is returned:
    what to do with it is the caller's (nothing is ingested from it).
    """
    if folder is None:
        raise NotesFolderError(
            f"{NOTES_SETTING} is not set: set it to your team's folder of note files "
            "(`prdigest preview` shows the bundled sample notes without it)"
        )
    samples = sample_files_in([folder])
    if samples:
        shown = f"{folder} is prdigest's sample notes folder"
        if samples[0].resolve().parent != bundled_notes_dir().resolve():
            names = ", ".join(p.name for p in samples[:3])
            more = f" and {len(samples) - 3} more" if len(samples) > 3 else ""
            shown = f"{folder} holds prdigest's bundled sample notes ({names}{more})"
        raise NotesFolderError(
            f"{NOTES_SETTING}: {shown}, not your team's notes: set it to your team's folder "
            "of note files (or move the sample files out)"
        )
    return folder


def missing_sqlite_file(database_url: str) -> bool:
    """True when the URL names a SQLite file that does not exist yet (opening it would
    create it)."""
    url = sa.engine.make_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return False
    return not Path(url.database).exists()
