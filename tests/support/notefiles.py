"""The fixture files shared by several test modules: the sample notes, the same notes as a
team's own files, and the default roles."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from bot.classify.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# The repository line of the team's notes (`team_note_files`): the sample notes' identity is
# their repo and title, so under this line the same notes are the team's own.
TEAM_REPO = "our-team/vllm"

_KEPT: list[tempfile.TemporaryDirectory[str]] = []  # removed when the test process ends


def seed_files() -> list[Path]:
    """The four sample note files (32 notes) that also ship in `digests/`."""
    return sorted(FIXTURES.glob("0*.txt"))


def write_team_notes(folder: Path) -> list[Path]:
    """The seed notes as a team's own note files in `folder`, under the seed files' names.

    The bundled samples are refused as a notes folder and never posted, so a test that
    plays a team posting a realistic week uses these: the same titles and paragraphs,
    written under the team's repository line (TEAM_REPO).
    """
    written = []
    for path in seed_files():
        _, rest = path.read_text(encoding="utf-8").split("\n", 1)
        target = folder / path.name
        target.write_text(f"{TEAM_REPO}\n{rest}", encoding="utf-8")
        written.append(target)
    return written


@functools.cache
def team_note_files() -> list[Path]:
    """`write_team_notes` in a folder of their own (read-only use: ingest them by path)."""
    folder = tempfile.TemporaryDirectory(prefix="prdigest-team-notes-")
    _KEPT.append(folder)
    return write_team_notes(Path(folder.name))


# The default reader roles, in taxonomy order (bot/classify/data/roles.toml).
ROLE_SLUGS = load_taxonomy().slugs
