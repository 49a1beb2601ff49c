"""Several replicas ingesting the same folder at once store every note exactly once."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import sqlalchemy as sa

from bot.store import Store
from bot.store.engine import SCHEMA_HEAD, _sqlite_pragmas
from bot.store.schema import note_roles, notes
from tests.bench.corpus import write_corpus

SCRIPT = Path(sys.executable).with_name("prdigest")
FILES, PER_FILE, PROCESSES = 15, 60, 3
SUMMARY = re.compile(r"(\d+) new, (\d+) updated, (\d+) unchanged, (\d+) failed \((\d+) files\)")


def test_concurrent_ingests_of_one_folder_store_each_note_once(db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "digests"
    write_corpus(folder, FILES * PER_FILE, PER_FILE)
    total = FILES * PER_FILE
    Store.open(db_url).close()  # migrated: the runs race on notes, not on the schema
    env = {**os.environ, "PRDIGEST_DATABASE_URL": db_url, "PRDIGEST_DIGESTS_DIR": str(folder)}
    runs = [
        subprocess.Popen(
            [str(SCRIPT), "ingest"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(PROCESSES)
    ]
    outputs = [(run.communicate(timeout=300), run.returncode) for run in runs]

    new = 0
    for (stdout, stderr), code in outputs:
        text, errors = stdout.decode(), stderr.decode()
        assert code == 0, errors
        assert "WARNING" not in errors and "ERROR" not in errors, errors  # no retried batch
        found = SUMMARY.search(text)
        assert found, text
        run_new, updated, unchanged, failed, files = map(int, found.groups())
        assert (updated, failed, files) == (0, 0, FILES), text
        assert run_new + unchanged == total, text
        new += run_new
    assert new == total  # each note reported new by exactly one run

    store = Store.open(db_url)
    try:
        with store.engine.connect() as conn:
            count = conn.execute(sa.select(sa.func.count()).select_from(notes)).scalar_one()
            keys = conn.execute(sa.select(sa.func.count(sa.distinct(notes.c.key)))).scalar_one()
            roles = conn.execute(sa.select(notes.c.roles)).scalars().all()
            role_rows = conn.execute(
                sa.select(sa.func.count()).select_from(note_roles)
            ).scalar_one()
            indexed = total
            if store.dialect == "sqlite":
                indexed = conn.exec_driver_sql("SELECT count(*) FROM notes_fts").scalar_one()
        assert count == keys == total
        assert role_rows == sum(len(r) for r in roles)
        assert indexed == total
    finally:
        store.close()


def test_processes_starting_on_a_fresh_sqlite_file_migrate_it_once(tmp_path: Path) -> None:
    url, go = f"sqlite:///{tmp_path / 'fresh.db'}", tmp_path / "go"
    opening = (
        "import pathlib, time\n"
        "from bot.store import Store\n"
        "print('ready', flush=True)\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        f"Store.open({url!r}).close()\n"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", opening], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(PROCESSES)
    ]
    for run in runs:  # all have imported; now they open the store together
        assert run.stdout is not None and run.stdout.readline() == b"ready\n"
    go.touch()
    for run in runs:
        _, errors = run.communicate(timeout=120)
        assert run.returncode == 0, errors.decode()
    store = Store.open(url)
    try:
        with store.engine.connect() as conn:
            version = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        assert version == SCHEMA_HEAD
    finally:
        store.close()


def test_connections_switching_a_new_sqlite_file_to_wal_at_once_all_succeed(
    tmp_path: Path,
) -> None:
    """SQLite refuses one of two simultaneous switches to WAL at once ("database is
    locked") instead of waiting; the store's connection set-up must still succeed."""
    failures: list[str] = []
    modes: list[str] = []
    for attempt in range(30):
        path = tmp_path / f"new{attempt}.db"
        connections = [sqlite3.connect(path, timeout=30, check_same_thread=False) for _ in "abc"]
        barrier = threading.Barrier(len(connections))

        def set_up(connection: sqlite3.Connection, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                _sqlite_pragmas(connection, None)
                modes.append(connection.execute("PRAGMA journal_mode").fetchone()[0])
            except sqlite3.OperationalError as exc:
                failures.append(str(exc))

        threads = [threading.Thread(target=set_up, args=(c,)) for c in connections]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for connection in connections:
            connection.close()
    assert failures == []
    assert modes == ["wal"] * 90
