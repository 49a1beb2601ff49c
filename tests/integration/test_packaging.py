"""What an installed prdigest carries: the version, and sample notes for a preview anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli.app import app
from bot.notes.ingest import find_note_files, parse_note_file
from bot.notes.sample_notes import bundled_notes_dir
from bot.store import Store
from tests.support.notefiles import write_team_notes

ROOT = Path(__file__).parents[2]
runner = CliRunner()


def sample_note_count() -> int:
    return sum(len(parse_note_file(p)) for p in find_note_files([ROOT / "digests"]))


def test_version_option_prints_the_installed_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"prdigest {version('prdigest')}"


def test_bundled_notes_are_the_repository_digests_in_a_checkout() -> None:
    assert bundled_notes_dir().resolve() == (ROOT / "digests").resolve()


def test_preview_without_a_notes_folder_shows_the_samples_and_keeps_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a clone, with the default SQLite URL: the samples, one line saying so, and
    neither a database nor anything else left in the working directory."""
    work = tmp_path / "empty"
    work.mkdir()
    monkeypatch.chdir(work)
    result = runner.invoke(app, ["preview"])
    assert result.exit_code == 0, result.output
    notice = [line for line in result.stderr.splitlines() if "PRDIGEST_DIGESTS_DIR" in line]
    assert len(notice) == 1 and "is not set" in notice[0]
    assert "sample notes bundled with prdigest" in notice[0]
    assert f"{sample_note_count()} new" in result.stderr
    assert "精读推荐" in result.stdout and f"{sample_note_count()} notes" in result.stdout
    assert list(work.iterdir()) == []


def test_samples_never_enter_the_configured_store(
    store: Store, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", db_url)
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(tmp_path / "no-such-folder"))
    result = runner.invoke(app, ["preview"])
    assert result.exit_code == 0 and "does not exist" in result.stderr
    assert "精读推荐" in result.stdout
    assert store.count_notes() == 0


def test_a_store_with_notes_is_previewed_as_it_is(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only an empty store falls back to the samples: a missing folder on a machine whose
    database already holds notes previews those notes."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for path in write_team_notes(notes)[1:]:
        path.unlink()
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", db_url)
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(notes))
    assert runner.invoke(app, ["ingest"]).exit_code == 0
    stored = len(parse_note_file(next(notes.iterdir())))
    shutil.rmtree(notes)
    result = runner.invoke(app, ["preview"])
    assert result.exit_code == 0
    assert "does not exist" not in result.stderr and "ingested" not in result.stderr
    assert f"{stored} notes" in result.stdout


@pytest.mark.slow
def test_built_wheel_previews_its_samples_in_an_empty_directory(tmp_path: Path) -> None:
    """Build the wheel, install it into a fresh venv, run it where there is no clone."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    for folder in ("bot", "digests"):
        shutil.copytree(
            ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)], check=True)
    (wheel,) = wheels.glob("prdigest-*.whl")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], check=True)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import bot; print(bot.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in installed  # the wheel, not this checkout

    work, scratch = tmp_path / "empty", tmp_path / "tmp"
    work.mkdir()
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))}
    env["TMPDIR"] = str(scratch)
    script = str(venv / "bin" / "prdigest")
    shown = subprocess.run(
        [script, "--version"], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0 and shown.stdout.strip() == f"prdigest {version('prdigest')}"
    done = subprocess.run(
        [script, "preview"], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "sample notes bundled with prdigest" in done.stderr
    assert f"{sample_note_count()} new" in done.stderr
    assert "精读推荐" in done.stdout and f"{sample_note_count()} notes" in done.stdout
    assert list(work.iterdir()) == [], "preview left files behind"
    assert list(scratch.iterdir()) == [], "preview left its temporary store behind"
