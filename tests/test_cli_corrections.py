"""`prdigest fix` and `prdigest reclassify`, run as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.services import FINGERPRINT_KEY
from bot.store import Store
from tests.test_cli import json_lines, run
from tests.test_corrections import replacing_roles


def test_fix_validates_roles_and_stores_who(env: Path, db_url: str) -> None:
    assert run("ingest")[0] == 0
    first = json_lines(run("notes", "--json")[1])[0]
    code, _, err = run("fix", str(first["id"]), "--roles", "moe,nope")
    assert code == 2 and "not a role: nope" in err
    code, _, err = run("fix", str(first["id"]), "--roles", "moe", "--verdict", "maybe")
    assert code == 2 and "--verdict" in err
    assert json_lines(run("notes", "--json")[1])[0] == first

    code, out, _ = run(
        "fix", str(first["id"]), "--roles", "moe, kv", "--primary", "kv", "--verdict", "skip"
    )
    assert code == 0 and "→ kv-cache/moe-quant skip (primary kv-cache)" in out
    fixed = json_lines(run("notes", "--json")[1])[0]
    assert fixed["roles"] == ["kv-cache", "moe-quant"] and fixed["verdict"] == "skip"
    store = Store.open(db_url)
    try:
        fix = store.get_fix(int(str(first["id"])))
    finally:
        store.close()
    assert fix is not None and fix.fixed_by.startswith("cli:")


def test_reclassify_prints_changes_and_post_reclassifies_on_start(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    assert run("ingest")[0] == 0
    code, out, _ = run("reclassify", "--dry-run")
    assert code == 0 and out.strip() == "0 notes would change"

    monkeypatch.setenv("PRDIGEST_ROLES_FILE", str(replacing_roles(tmp_path)))
    code, out, _ = run("reclassify", "--dry-run")
    lines = out.strip().splitlines()
    assert code == 0 and lines[-1].endswith("notes would change") and len(lines) > 1
    assert " → " in lines[0] and lines[0].startswith("#")
    before = json_lines(run("notes", "--json")[1])
    assert not any("serving" in n["roles"] for n in before)  # type: ignore[operator]

    monkeypatch.setenv("PRDIGEST_CHANNEL", "C0DIGEST")
    code, _, err = run("post", "--dry-run")
    assert code == 0 and "re-classified" not in err, "a dry run changes nothing"
    code, _, err = run("preview")
    assert code == 0 and "re-classified the stored notes" in err
    after = json_lines(run("notes", "--json")[1])
    assert any("serving" in n["roles"] for n in after)  # type: ignore[operator]
    assert run("reclassify")[1].strip() == "0 notes changed"
    store = Store.open(db_url)
    try:
        assert store.get_meta(FINGERPRINT_KEY) is not None
    finally:
        store.close()
