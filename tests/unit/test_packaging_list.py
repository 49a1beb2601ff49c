"""The wheel's packages, listed in pyproject.toml, are every folder of bot/ on disk (code or
data), plus the sample notes; the repository's top level is the one the project keeps."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

ROOT = Path(__file__).resolve().parents[2]
TOP_LEVEL = {
    ".ci",
    ".gitignore",
    "README.md",
    "bot",
    "deploy",
    "digests",
    "pyproject.toml",
    "tests",
}


def setuptools_table() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        table: dict[str, object] = tomllib.load(f)["tool"]["setuptools"]
    return table


def test_the_wheel_lists_every_package_of_bot() -> None:
    listed = set(setuptools_table()["packages"])  # type: ignore[call-overload]
    on_disk = set(
        find_namespace_packages(str(ROOT), include=["bot", "bot.*"], exclude=["*.__pycache__"])
    )
    assert listed - on_disk == {"bot.sample_digests"}, "a listed package is not on disk"
    assert on_disk - listed == set(), "a package of bot/ is missing from pyproject.toml"


def test_the_sample_notes_ship_from_digests() -> None:
    assert setuptools_table()["package-dir"] == {"bot.sample_digests": "digests"}
    assert any((ROOT / "digests").glob("*.txt"))


def test_the_top_level_holds_only_the_project_files() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {path.split("/")[0] for path in tracked} <= TOP_LEVEL
