"""The fixture files shared by several test modules: the sample notes and the default roles."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def seed_files() -> list[Path]:
    """The four sample note files (32 notes) that also ship in `digests/`."""
    return sorted(FIXTURES.glob("0*.txt"))


# The nine default reader roles, in taxonomy order.
ROLE_SLUGS = (
    "release-infra",
    "moe-quant",
    "multimodal",
    "kv-cache",
    "spec-decode",
    "kernels",
    "models",
    "frontend",
    "hardware",
)
