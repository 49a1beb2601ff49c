"""The fixture files shared by several test modules: the sample notes and the default roles."""

from __future__ import annotations

from pathlib import Path

from bot.classify.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def seed_files() -> list[Path]:
    """The four sample note files (32 notes) that also ship in `digests/`."""
    return sorted(FIXTURES.glob("0*.txt"))


# The default reader roles, in taxonomy order (bot/classify/data/roles.toml).
ROLE_SLUGS = load_taxonomy().slugs
