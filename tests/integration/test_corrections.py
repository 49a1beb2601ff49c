"""Corrections, re-classification and note identity across files, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot.classify
from bot.classify import MODEL_FILES, classifier_fingerprint
from bot.classify.taxonomy import load_taxonomy
from bot.domain import Verdict
from bot.readers.corrections import FixError, fix_note, reclassify, reclassify_if_changed
from bot.services import FINGERPRINT_KEY, Services, ingest_paths
from tests.support.notefiles import seed_files
from tests.support.notes import only_note, replacing_roles, write

FP8 = "值得做 FP8 量化与 MoE 内核的工程师精读，改动了 fused_moe 的 FP8 路径。"
DOCS = "文档修正，可略过。"


def test_a_fix_wins_and_survives_a_revised_paragraph_and_reclassification(
    services: Services, tmp_path: Path
) -> None:
    path = write(tmp_path / "n.txt", "FP8 MoE kernel", FP8)
    ingest_paths(services, [path])
    note_id, _ = only_note(services)
    before = services.store.get_notes([note_id])[0]
    assert "moe-quant" in before.roles and before.verdict is Verdict.DEEP

    result = fix_note(services, note_id, ["mm", "kv"], "kv", Verdict.SKIM, "U0EDITOR")
    assert result.after.roles == ("kv-cache", "multimodal")
    assert result.after.primary_role == "kv-cache" and result.after.verdict is Verdict.SKIM
    stored = services.store.get_fix(note_id)
    assert stored is not None and stored.fixed_by == "U0EDITOR" and stored.revision == 1
    assert [n.id for n in services.store.role_notes("kv-cache", 10).notes] == [note_id]
    assert services.store.role_notes("moe-quant", 10).total == 0

    write(path, "FP8 MoE kernel", FP8 + "补充：新增了 benchmark。")
    assert ingest_paths(services, [path]).updated == 1
    revised = services.store.get_notes([note_id])[0]
    assert revised.paragraph.endswith("benchmark。")
    assert (revised.roles, revised.verdict) == (("kv-cache", "multimodal"), Verdict.SKIM)

    assert reclassify(services) == []
    kept = services.store.get_notes([note_id])[0]
    assert (kept.roles, kept.verdict) == (("kv-cache", "multimodal"), Verdict.SKIM)

    again = fix_note(services, note_id, ["moe"], None, None, "U0OTHER")
    assert again.fix.revision == 2 and again.after.verdict is Verdict.DEEP  # classifier's


def test_bad_fixes_change_nothing(services: Services, tmp_path: Path) -> None:
    ingest_paths(services, [write(tmp_path / "n.txt", "FP8 MoE kernel", FP8)])
    note_id, _ = only_note(services)
    before = services.store.get_notes([note_id])[0]
    with pytest.raises(FixError, match="not a role: nope"):
        fix_note(services, note_id, ["moe", "nope"], None, None, "U1")
    with pytest.raises(FixError, match="primary role"):
        fix_note(services, note_id, ["moe"], "kv", None, "U1")
    with pytest.raises(FixError, match="no note with id"):
        fix_note(services, note_id + 100, ["moe"], None, None, "U1")
    assert services.store.get_notes([note_id])[0] == before
    assert services.store.get_fix(note_id) is None


def test_a_changed_roles_file_reclassifies_on_start_and_keeps_fixes(
    services: Services, tmp_path: Path
) -> None:
    ingest_paths(services, seed_files())
    assert services.store.get_meta(FINGERPRINT_KEY) == classifier_fingerprint(services.taxonomy)
    assert reclassify_if_changed(services) is None
    notes = services.store.list_notes()
    fixed = notes[0]
    fix_note(services, fixed.id, ["kernels"], None, Verdict.SKIP, "U0EDITOR")

    services.taxonomy = load_taxonomy(replacing_roles(tmp_path))
    changes = reclassify_if_changed(services)
    assert changes, "notes in roles that are gone are re-classified"
    after = {n.id: n for n in services.store.list_notes()}
    assert all(set(n.roles) <= {"kernels", "serving", "zz-last"} for n in after.values())
    assert not any("zz-last" in n.roles for n in after.values()), "no note falls to the last role"
    assert {"kernels", "serving"} <= {n.primary_role for n in after.values()}
    assert (after[fixed.id].roles, after[fixed.id].verdict) == (("kernels",), Verdict.SKIP)
    assert services.store.get_meta(FINGERPRINT_KEY) == classifier_fingerprint(services.taxonomy)
    assert reclassify_if_changed(services) is None


def test_reclassify_dry_run_stores_nothing(services: Services, tmp_path: Path) -> None:
    ingest_paths(services, seed_files())
    services.taxonomy = load_taxonomy(replacing_roles(tmp_path))
    before = services.store.list_notes()
    fingerprint = services.store.get_meta(FINGERPRINT_KEY)
    preview = reclassify(services, dry_run=True)
    assert preview, "the new roles change something"
    assert services.store.list_notes() == before
    assert services.store.get_meta(FINGERPRINT_KEY) == fingerprint
    stored = reclassify(services)
    assert [(c.note.id, c.new) for c in preview] == [(c.note.id, c.new) for c in stored]
    assert reclassify(services, dry_run=True) == []


def test_the_fingerprint_ignores_code_and_follows_roles_and_models(tmp_path: Path) -> None:
    taxonomy = load_taxonomy()
    assert classifier_fingerprint(taxonomy) == classifier_fingerprint(load_taxonomy())
    assert classifier_fingerprint(load_taxonomy(replacing_roles(tmp_path))) != (
        classifier_fingerprint(taxonomy)
    )
    assert set(MODEL_FILES) == {
        f"data/{p.name}"
        for p in (Path(bot.classify.__file__).parent / "data").glob("*_*.json*")
        if p.name != "training.json"
    }
