"""The sample notes that ship with prdigest, so `prdigest preview` shows a digest anywhere.

They are the repository's digests/ folder; the wheel carries the same files as
bot/sample_digests (see setup.py). Previews of them use a throwaway store: sample notes
never enter the configured database, and a preview outside a clone leaves no file behind.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

import bot


def bundled_notes_dir() -> Path:
    """The installed copy of the sample notes, or digests/ when running from a checkout."""
    package = Path(bot.__file__).parent
    installed = package / "sample_digests"
    return installed if installed.is_dir() else package.parent / "digests"


def missing_sqlite_file(database_url: str) -> bool:
    """True when the URL names a SQLite file that does not exist yet (opening it would
    create it)."""
    url = sa.engine.make_url(database_url)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return False
    return not Path(url.database).exists()
