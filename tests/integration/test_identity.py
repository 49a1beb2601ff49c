"""Note identity across files: the newest file wins a note found in two, with no flip-flop."""

from __future__ import annotations

from pathlib import Path

from bot.services import Services, ingest_paths
from tests.support.notes import only_note, write


def test_same_note_in_two_files_the_newest_file_wins_and_reingest_is_unchanged(
    services: Services, tmp_path: Path
) -> None:
    # "b.txt" sorts last but is older: the newer "a.txt" must win whatever the order.
    newer = write(tmp_path / "a.txt", "Shared title", "新版本：值得精读。", mtime=2_000_000_000)
    older = write(tmp_path / "b.txt", "Shared title", "旧版本：可略过。", mtime=1_900_000_000)
    first = ingest_paths(services, [newer, older])
    assert (first.new, first.updated, first.unchanged) == (1, 0, 1)
    assert only_note(services)[1] == "新版本：值得精读。"
    for _ in range(2):
        again = ingest_paths(services, [older, newer])
        assert (again.new, again.updated, again.unchanged) == (0, 0, 2)
        assert only_note(services)[1] == "新版本：值得精读。"
    # Editing the older file makes it the newest: it wins from then on, once.
    write(older, "Shared title", "再修订：快速浏览即可。", mtime=2_100_000_000)
    edited = ingest_paths(services, [newer, older])
    assert (edited.updated, edited.unchanged) == (1, 1)
    assert ingest_paths(services, [newer, older]).unchanged == 2
    assert only_note(services)[1] == "再修订：快速浏览即可。"


def test_same_mtime_the_later_name_wins(services: Services, tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "Tie", "来自 a：可略过。", mtime=2_000_000_000)
    b = write(tmp_path / "b.txt", "Tie", "来自 b：值得精读。", mtime=2_000_000_000)
    ingest_paths(services, [b, a])
    assert only_note(services)[1] == "来自 b：值得精读。"
    assert ingest_paths(services, [a, b]).unchanged == 2
