"""Samples stay samples: the quick start's preview keeps them out of the team's store, the
team's notes folder must be set and is never the samples, and `remove-samples` takes the
samples an older quick start left behind out of a store without touching the team's own."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.delivery.weekly import DeliveryError
from bot.readers.corrections import fix_note
from bot.services import Services, ingest_paths
from bot.store import Store
from bot.store.schema import (
    delivered_messages,
    digest_run_notes,
    digest_runs,
    dm_deliveries,
    note_fixes,
    subscriptions,
    watches,
)
from tests.support.cli import cli_env, run
from tests.support.delivery import CHANNEL, note_ids, publish
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import TEAM_REPO, seed_files, write_team_notes
from tests.support.testenv import SLACK_TOKEN

ROOT = Path(__file__).parents[2]
SAMPLES = ROOT / "digests"
TEAM_NOTES = {
    "MoE 路由内核重写，FP8 分组 GEMM 提速": "值得精读，做 MoE 量化与 FP8 内核的工程师都该看。",
    "前缀缓存淘汰顺序改为按访问时间": "值得快速浏览，关注 KV 缓存命中率的读者可以看一下。",
}


def write_two_team_notes(folder: Path) -> None:
    blocks = ["our-team/vllm"] + [f"{t}\n\n{p}" for t, p in TEAM_NOTES.items()]
    (folder / "week.md").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def sample_titles() -> set[str]:
    from bot.notes.ingest import parse_note_file

    return {n.title for p in seed_files() for n in parse_note_file(p)}


def sent_texts(slack: FakeSlack) -> str:
    """Every text the bot sent to Slack, blocks included."""
    return "\n".join(str(call.params) for call in slack.calls_for("chat.postMessage"))


def test_quick_start_then_the_first_real_post_sends_only_the_teams_notes(
    tmp_path: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh clone (its digests/ beside the default ./prdigest.db): the README's preview,
    then a token, a channel and a team notes folder with two notes, then `prdigest post`."""
    shutil.copytree(SAMPLES, tmp_path / "digests")
    code, out, err = run("preview")
    assert code == 0, err
    assert "精读推荐" in out and "32 notes" in out
    assert "sample notes bundled with prdigest" in err
    assert not (tmp_path / "prdigest.db").exists(), "the preview keeps no store"

    notes = tmp_path / "team-notes"
    notes.mkdir()
    write_two_team_notes(notes)
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
    monkeypatch.setenv("PRDIGEST_CHANNEL", CHANNEL)
    monkeypatch.setenv("PRDIGEST_SLACK_API_URL", slack.api_url)
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(notes))
    code, out, err = run("post", "--channel-rate", "0", "--dm-rate", "0")
    assert code == 0, err
    assert "posted the" in out and ": 2 notes" in out

    store = Store.open("sqlite:///prdigest.db")
    try:
        stored = store.list_notes()
    finally:
        store.close()
    assert sorted(n.title for n in stored) == sorted(TEAM_NOTES)
    posted = {i for m in slack.messages_in(CHANNEL) for i in note_ids(m)}
    assert posted == {n.id for n in stored}
    texts = sent_texts(slack)
    assert all(title in texts for title in TEAM_NOTES)
    assert not [title for title in sample_titles() if title in texts]


def test_post_ingest_and_serve_refuse_an_unset_notes_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("PRDIGEST_CHANNEL", CHANNEL)
    unset = (
        "PRDIGEST_DIGESTS_DIR is not set: set it to your team's folder of note files "
        "(`prdigest preview` shows the bundled sample notes without it)"
    )
    for command in (["post"], ["post", "--dry-run"], ["ingest"], ["serve"]):
        code, out, err = run(*command)
        assert code == 2, command
        assert err.strip() == f"prdigest: {unset}", command
        assert not out
    assert not (tmp_path / "prdigest.db").exists(), "a refusal creates no store"


@pytest.mark.parametrize("copied", [False, True], ids=["the-folder", "a-copy"])
def test_the_samples_are_refused_as_the_notes_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copied: bool
) -> None:
    """PRDIGEST_DIGESTS_DIR naming the bundled samples, or a folder holding a copy of one of
    them beside the team's notes: one line, and nothing stored."""
    folder = SAMPLES
    if copied:
        folder = tmp_path / "notes"
        folder.mkdir()
        write_two_team_notes(folder)
        shutil.copy(seed_files()[1], folder / "from-the-quick-start.txt")
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(folder))
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("PRDIGEST_CHANNEL", CHANNEL)
    said = (
        "holds prdigest's bundled sample notes (from-the-quick-start.txt)"
        if copied
        else "is prdigest's sample notes folder"
    )
    for command in (["post"], ["post", "--dry-run"], ["ingest"], ["serve"]):
        code, _, err = run(*command)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, command
    assert not (tmp_path / "prdigest.db").exists()


def test_a_scheduled_run_on_the_samples_posts_nothing(posting: Services, slack: FakeSlack) -> None:
    posting.settings = posting.settings.model_copy(update={"digests_dir": SAMPLES})
    with pytest.raises(DeliveryError, match="sample notes folder"):
        publish(posting)
    assert slack.count("chat.postMessage") == 0
    assert posting.store.count_notes() == 0
    posting.settings = posting.settings.model_copy(update={"digests_dir": None})
    with pytest.raises(DeliveryError, match="PRDIGEST_DIGESTS_DIR is not set"):
        publish(posting)
    assert slack.count("chat.postMessage") == 0


def test_ingest_naming_the_samples_stores_them_but_post_never_sends_them(
    posting: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_env(monkeypatch, posting)
    code, out, err = run("ingest", str(SAMPLES))
    assert code == 0 and "32 new" in out
    assert "4 of the files read are the sample notes bundled with prdigest" in err
    assert posting.settings.digests_dir is not None
    write_two_team_notes(posting.settings.digests_dir)
    assert run("ingest")[0] == 0

    code, out, err = run("preview")
    assert code == 0 and "2 notes" in out
    assert "32 sample notes bundled with prdigest are in the store and left out" in err
    code, out, _ = run("post", "--dry-run")
    assert code == 0
    assert "2 notes" in out and "32 bundled sample notes in the store were left out" in out
    code, out, err = run("post", "--channel-rate", "0", "--dm-rate", "0")
    assert code == 0, err
    assert ": 2 notes" in out and "`prdigest remove-samples` removes them" in out
    posted = {i for m in slack.messages_in(CHANNEL) for i in note_ids(m)}
    team = {n.id for n in posting.store.list_notes() if n.repo == "our-team/vllm"}
    assert posted == team and len(team) == 2


def test_an_empty_notes_folder_ingests_nothing_and_says_so(
    posting: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_env(monkeypatch, posting)
    code, out, err = run("ingest")
    assert code == 0 and "0 new" in out
    assert "holds no note files yet: write your team's notes there" in err
    code, out, _ = run("post", "--channel-rate", "0", "--dm-rate", "0")
    assert code == 0 and "nothing new to post" in out
    assert slack.count("chat.postMessage") == 0


def test_preview_shows_the_teams_store_or_with_samples_the_samples(
    env: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in sorted(env.iterdir())[1:]:
        path.unlink()  # the team's week: the 8 notes of one file
    assert run("ingest")[0] == 0
    code, out, _ = run("preview")
    assert code == 0 and "8 notes" in out
    code, out, err = run("preview", "--samples")
    assert code == 0 and "32 notes" in out and "--samples: previewing the sample notes" in err
    store = Store.open(db_url)
    try:
        repos = [n.repo for n in store.list_notes()]
    finally:
        store.close()
    assert repos == [TEAM_REPO] * 8, "no sample entered the team's store"
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(SAMPLES))
    code, out, err = run("preview")
    assert code == 0 and "32 notes" in out
    assert "holds the bundled sample notes, which `post` and `serve` refuse" in err


# ---------------------------------------------------------------- remove-samples


def counts(store: Store) -> dict[str, Any]:
    with store.engine.connect() as conn:

        def rows(table: sa.Table) -> int:
            return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())

        return {
            "runs": rows(digest_runs),
            "messages": rows(delivered_messages),
            "subscriptions": rows(subscriptions),
            "watches": rows(watches),
            "posted": set(conn.execute(sa.select(digest_run_notes.c.note_id)).scalars()),
            # one row per reader and note
            "dms": sorted(conn.execute(sa.select(dm_deliveries.c.note_id)).scalars()),
            "fixes": set(conn.execute(sa.select(note_fixes.c.note_id)).scalars()),
        }


def older_quick_start_posted_the_samples(posting: Services, tmp_path: Path) -> set[int]:
    """A store as an older prdigest left it: the samples posted with the team's notes, with
    DMs, a watch and fixes on both. (This version never posts a sample, so they go out as
    notes that differ in one word, then ingesting the real samples makes them samples.)"""
    older = tmp_path / "older"
    older.mkdir()
    for path in seed_files():
        repo, *blocks = path.read_text(encoding="utf-8").strip().split("\n\n")
        for index in range(1, len(blocks), 2):  # title, paragraph, title, paragraph, …
            blocks[index] += "（旧版）"
        (older / path.name).write_text("\n\n".join([repo, *blocks]) + "\n", encoding="utf-8")
    assert posting.settings.digests_dir is not None
    write_team_notes(posting.settings.digests_dir)
    ingest_paths(posting, [older, posting.settings.digests_dir])
    by_repo: dict[str, list[int]] = {}
    for note in posting.store.list_notes():
        by_repo.setdefault(note.repo, []).append(note.id)
    samples, team = set(by_repo["vllm-project/vllm"]), by_repo[TEAM_REPO]
    # An older version had no reading budget: each DM held every note for its reader.
    posting.settings = posting.settings.model_copy(update={"dm_budget": 0})
    fix_note(posting, min(samples), ["kernels"], None, None, "U9")
    fix_note(posting, team[0], ["kernels"], None, None, "U9")
    posting.store.subscribe("T1", "U1", ["moe-quant", "kernels", "kv-cache"])
    posting.store.readers.watch("T1", "U2", "fp8")
    result = publish(posting)
    assert result.status == "posted" and result.notes == 64 and result.dms > 0
    # Copies written now, so newer than older/ (the newest file of a note wins).
    again = shutil.copytree(SAMPLES, tmp_path / "samples-again", copy_function=shutil.copy)
    report = ingest_paths(posting, [again])
    assert report.updated == 32, "the notes are the samples now, as posted by an older version"
    return samples


def test_remove_samples_takes_out_only_the_samples_and_reposts_nothing(
    posting: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    samples = older_quick_start_posted_the_samples(posting, tmp_path)
    store = posting.store
    team = {n.id for n in store.list_notes()} - samples
    before = counts(store)
    assert samples <= before["posted"]
    assert samples & set(before["dms"]) and team & set(before["dms"])
    sent = slack.count("chat.postMessage"), slack.count("chat.update")
    cli_env(monkeypatch, posting)

    code, out, _ = run("doctor")
    assert "the store holds 32 of the sample notes bundled with prdigest" in out
    code, out, _ = run("remove-samples", "--dry-run")
    dms = sum(note in samples for note in before["dms"])
    assert code == 0
    assert (
        f"would remove 32 sample notes (#{min(samples)}," in out
        and f"with 1 fixes, 32 records of posting them and {dms} of DMs with them" in out
    )
    assert counts(store) == before and store.count_notes() == 64, "a dry run changes nothing"

    code, out, _ = run("remove-samples")
    assert code == 0 and out.startswith("removed 32 sample notes")
    after = counts(store)
    assert {n.id for n in store.list_notes()} == team
    assert after["posted"] == before["posted"] - samples
    assert after["dms"] == [note for note in before["dms"] if note not in samples]
    assert after["fixes"] == before["fixes"] - samples and after["fixes"]
    for kept in ("runs", "messages", "subscriptions", "watches"):
        assert after[kept] == before[kept], kept
    assert run("remove-samples")[1].startswith("no sample notes in the store")

    # The next digest and a re-ingest of the team's folder post nothing again.
    code, out, err = run("post", "--channel-rate", "0", "--dm-rate", "0")
    assert code == 0 and "nothing new to post" in out, err
    assert (slack.count("chat.postMessage"), slack.count("chat.update")) == sent
    code, out, _ = run("notes", "--json", "--limit", "0")
    assert code == 0 and len(out.splitlines()) == 32


def test_remove_samples_waits_for_an_unfinished_run_that_holds_them(
    posting: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    samples = older_quick_start_posted_the_samples(posting, tmp_path)
    with posting.store.engine.begin() as conn:
        conn.execute(digest_runs.update().values(status="open", open_channel=digest_runs.c.channel))
    cli_env(monkeypatch, posting)
    code, _, err = run("remove-samples")
    assert code == 2 and "is unfinished" in err and "nothing removed" in err
    assert samples <= {n.id for n in posting.store.list_notes()}


def test_remove_samples_without_a_store_creates_none(tmp_path: Path) -> None:
    code, out, _ = run("remove-samples")
    assert code == 0 and "no store yet" in out
    assert not (tmp_path / "prdigest.db").exists()
