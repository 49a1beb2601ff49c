"""Ingestion as a use case: batches, worker processes, fallbacks, revisions and search."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.services import PARALLEL_MIN_FILES, Services, ingest_paths, lookup
from tests.bench.corpus import write_corpus
from tests.support.notefiles import write_team_notes


def stored(services: Services) -> dict[str, tuple[object, ...]]:
    return {
        n.title: (n.roles, n.primary_role, n.verdict, n.role_verdicts, n.excerpt, n.pr)
        for n in services.store.list_notes()
    }


def test_worker_processes_store_what_the_sequential_path_stores(
    services: Services, tmp_path: Path
) -> None:
    files = write_corpus(tmp_path / "many", 300, per_file=10)
    assert len(files) >= PARALLEL_MIN_FILES
    report = ingest_paths(services, files)  # parallel: many files
    assert (report.new, report.failed, report.files) == (300, 0, len(files))
    parallel = stored(services)
    services.store.engine.dispose()

    other = Services(
        settings=services.settings.model_copy(
            update={"database_url": f"sqlite:///{tmp_path / 'seq.db'}"}
        ),
        store=type(services.store).open(f"sqlite:///{tmp_path / 'seq.db'}"),
        taxonomy=services.taxonomy,
    )
    for path in files:  # sequential: one file at a time
        ingest_paths(other, [path])
    assert stored(other) == parallel
    other.close()
    again = ingest_paths(services, files)
    assert (again.new, again.updated, again.unchanged) == (0, 0, 300)


def test_bad_files_among_many_are_reported_and_the_rest_land(
    services: Services, tmp_path: Path
) -> None:
    files = write_corpus(tmp_path / "many", 200, per_file=10)
    (tmp_path / "many" / "zz_bad.txt").write_text("no repo line here\n\ntitle\n\nparagraph\n")
    report = ingest_paths(services, [tmp_path / "many", tmp_path / "missing"])
    assert report.new == 200 and report.failed == 2
    reasons = sorted(str(e) for e in report.errors)
    assert any("zz_bad.txt:1: expected a repo line" in r for r in reasons)
    assert any("missing: not found" in r for r in reasons)
    assert len(files) + 1 == report.files


def test_a_file_the_database_refuses_fails_alone(services: Services, tmp_path: Path) -> None:
    folder = services.settings.digests_dir
    assert folder is not None
    write_team_notes(folder)
    long_repo = "o/" + "r" * 250  # over the column size: PostgreSQL refuses it
    (folder / "long.txt").write_text(f"{long_repo}\n\nT\n\nP 值得精读。\n", encoding="utf-8")
    report = ingest_paths(services, [folder])
    if services.store.dialect == "postgresql":
        assert report.new == 32 and [e.source_file for e in report.errors] == [
            str(folder / "long.txt")
        ]
        assert "not saved" in report.errors[0].reason
    else:  # SQLite does not enforce VARCHAR sizes
        assert report.new == 33 and not report.errors


def test_a_revision_replaces_the_searchable_text(services: Services, tmp_path: Path) -> None:
    path = tmp_path / "n.txt"
    path.write_text("o/r\n\nScheduler notes\n\nMentions zebrafish once. 值得精读。\n")
    ingest_paths(services, [path])
    assert [n.title for n in lookup(services, "zebrafish").page.notes] == ["Scheduler notes"]
    path.write_text("o/r\n\nScheduler notes\n\nNow about platypus. 可略过。\n")
    report = ingest_paths(services, [path])
    assert report.updated == 1
    assert lookup(services, "zebrafish").page.total == 0
    (note,) = lookup(services, "platypus").page.notes
    assert note.verdict.value == "skip"


@pytest.mark.parametrize("query", ["视频", "fp8 marlin", "Marlin", "多模态 编码器"])
def test_pages_of_a_search_do_not_overlap_and_cover_every_match(
    services: Services, tmp_path: Path, query: str
) -> None:
    ingest_paths(services, write_corpus(tmp_path / "c", 400, per_file=50))
    first = lookup(services, query, limit=1000)
    assert first.page.total == len(first.page.notes) > 0
    seen: list[int] = []
    offset = 0
    while offset < first.page.total:
        page = lookup(services, query, limit=7, offset=offset).page
        seen.extend(n.id for n in page.notes)
        offset += 7
    assert seen == [n.id for n in first.page.notes]
    ranks = [n.verdict.rank for n in first.page.notes]
    title_hits = [
        all(w.lower() in n.title.lower() for w in query.split()) for n in first.page.notes
    ]
    # Title hits first; within each tier deep, skim, skip; then newest.
    tiers = [0 if hit else 1 for hit in title_hits]
    keys = [(t, r, -n.id) for t, r, n in zip(tiers, ranks, first.page.notes, strict=True)]
    assert keys == sorted(keys)
