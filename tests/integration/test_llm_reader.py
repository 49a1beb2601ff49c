"""Notes read by a model server: the real `openai` client against the fake server of
tests/support/fakellm.py, through the real CLI and store, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.classify import build_classifier
from bot.classify.taxonomy import load_taxonomy
from bot.cli.app import app
from bot.domain import Classification, Confidence, Note, Verdict
from bot.llm_reader import (
    INVALID_TRIP,
    InvalidAnswer,
    Reading,
    apply_reading,
    build_reader,
    parse_answer,
    unsure,
)
from bot.notes.ingest import parse_note_file
from bot.ops.prometheus import PrometheusMetrics
from bot.services import FINGERPRINT_KEY, Services, ingest_paths
from bot.store import Store
from tests.support.fakellm import FakeLLM, Reply, note_of
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import ROLE_SLUGS, seed_files
from tests.support.testenv import DIGEST_CHANNEL, SLACK_TOKEN

MODEL = "test-model"
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def reading(
    roles: list[str],
    verdict: str = "deep",
    groups: dict[str, str] | None = None,
    others: str | None = None,
) -> dict[str, object]:
    return {
        "roles": roles,
        "verdict": verdict,
        "groups": groups or {},
        "others": others,
        "reason": "the note says so",
    }


KERNELS_DEEP = Reply(reading=reading(["kernels"], "deep"))


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM(model=MODEL) as fake:
        fake.answer = lambda _body: KERNELS_DEEP
        yield fake


def use(monkeypatch: pytest.MonkeyPatch, url: str, **settings: str) -> None:
    """Point the CLI at a model server (PRDIGEST_LLM_*)."""
    monkeypatch.setenv("PRDIGEST_LLM_URL", url)
    monkeypatch.setenv("PRDIGEST_LLM_MODEL", MODEL)
    for name, value in settings.items():
        monkeypatch.setenv(f"PRDIGEST_LLM_{name.upper()}", value)


def stored(db_url: str) -> list[Note]:
    store = Store.open(db_url)
    try:
        return store.list_notes()
    finally:
        store.close()


def seed_notes() -> list[tuple[str, str]]:
    """(title, paragraph) of the sample notes, in the order ingest stores them."""
    return [(n.title, n.paragraph) for p in seed_files() for n in parse_note_file(p)]


def local_readings() -> dict[str, Classification]:
    classifier = build_classifier(load_taxonomy(None))
    return {t: classifier.classify(t, p) for t, p in seed_notes()}


def revise(folder: Path, paragraph: str, new: str) -> None:
    """Change a paragraph in the first note file (ingest then updates that note)."""
    first = sorted(folder.glob("*.txt"))[0]
    first.write_text(first.read_text(encoding="utf-8").replace(paragraph, new), encoding="utf-8")


def url_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "PRDIGEST_LLM_URL" in line]


# -- the request -----------------------------------------------------------------------------


def test_each_note_is_one_request_with_the_schema_and_the_reading_is_stored(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all")
    code, out, err = run("ingest")
    assert code == 0 and "32 new" in out, err
    assert llm.count() == 32 and not url_lines(err)
    assert {note_of(body) for body in llm.requests} == set(seed_notes())
    body = llm.requests[0]
    assert body["model"] == MODEL
    assert body["response_format"]["type"] == "json_schema"
    spec = body["response_format"]["json_schema"]
    assert spec["name"]
    schema = spec["schema"]
    assert set(schema["properties"]) == {"roles", "verdict", "groups", "others", "reason"}
    assert set(schema["required"]) == set(schema["properties"])
    assert schema["properties"]["roles"]["items"]["enum"] == list(ROLE_SLUGS)
    assert schema["properties"]["verdict"]["enum"] == ["deep", "skim", "skip"]
    system = body["messages"][0]["content"]
    for slug in ROLE_SLUGS:
        assert f"- {slug}: " in system
    assert "量化方向" in system and "everyone else" in system and "精读" in system
    assert "llm:test-model: 32 read" in err

    notes = stored(db_url)
    assert {n.read_by for n in notes} == {"llm:test-model"}
    assert all(n.roles == ("kernels",) and n.verdict is Verdict.DEEP for n in notes)
    _, out, _ = run("notes", "--json", "--limit", "0")
    assert {json.loads(line)["read_by"] for line in out.splitlines()} == {"llm:test-model"}
    _, out, _ = run("notes", "--limit", "2")
    assert "read by llm:test-model" in " ".join(out.split())  # wherever the line wraps
    monkeypatch.setenv("PRDIGEST_CHANNEL", "C123")
    code, out, _ = run("post", "--dry-run", "--json")
    assert code == 0 and "kernels" in out
    assert "llm:" not in out and "the note says so" not in out  # Slack looks the same


def test_unsure_reads_only_the_notes_the_classifier_is_unsure_of(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url)  # PRDIGEST_LLM_READS defaults to unsure
    local = local_readings()
    wanted = {title for title, c in local.items() if unsure(c)}
    assert 0 < len(wanted) < len(local)
    code, _, err = run("ingest")
    assert code == 0, err
    assert {note_of(body)[0] for body in llm.requests} == wanted
    by_title = {n.title: n for n in stored(db_url)}
    for title, note in by_title.items():
        if title in wanted:
            assert note.read_by == "llm:test-model" and note.roles == ("kernels",)
        else:
            assert note.read_by == "classifier" and note.roles == local[title].roles


def test_without_settings_nothing_changes(env: Path, db_url: str, llm: FakeLLM) -> None:
    code, _, err = run("ingest")
    assert code == 0 and "llm:" not in err
    assert llm.count() == 0
    assert {n.read_by for n in stored(db_url)} == {"classifier"}


# -- what a reading means --------------------------------------------------------------------


def test_groups_and_everyone_else_become_audience_verdicts() -> None:
    taxonomy = load_taxonomy(None)
    local = Classification(
        ("models",), "models", Verdict.SKIM, {}, "the excerpt", Confidence.LOW, "classifier"
    )
    got = apply_reading(
        parse_answer(
            json.dumps(reading(["models", "kernels"], "deep", {"kernels": "skim"}, "skip")),
            taxonomy,
        ),
        local,
        taxonomy,
        "llm:m",
    )
    assert got.roles == ("models", "kernels") and got.primary_role == "models"
    assert got.verdict is Verdict.DEEP and got.verdict_confidence is Confidence.HIGH
    assert got.verdict_for("models") is Verdict.DEEP
    assert got.verdict_for("kernels") is Verdict.SKIM
    assert got.verdict_for("frontend") is Verdict.SKIP  # everyone else
    assert got.excerpt == "the excerpt" and got.read_by == "llm:m"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("I think it is a kernels note", "not JSON"),
        ("", "empty"),
        (json.dumps({"roles": ["kernels"], "verdict": "deep", "groups": {}}), "others"),
        (json.dumps(reading(["gpu-folks"])), "unknown role 'gpu-folks'"),
        (json.dumps(reading(["kernels"], "must-read")), "verdict"),
        (json.dumps(reading(["kernels"], "deep", {"nobody": "skip"})), "unknown role 'nobody'"),
        (json.dumps(reading([])), "roles"),
        (json.dumps(["kernels"]), "not a reading"),
    ],
)
def test_an_answer_that_is_not_a_reading_is_refused(content: str, why: str) -> None:
    with pytest.raises(InvalidAnswer, match=why):
        parse_answer(content, load_taxonomy(None))


def test_a_reading_in_a_fence_or_after_thinking_is_read() -> None:
    taxonomy = load_taxonomy(None)
    text = json.dumps(reading(["kernels"], "skip"))
    for wrapped in (f"```json\n{text}\n```", f"<think>hmm</think>\n{text}"):
        assert parse_answer(wrapped, taxonomy) == Reading.model_validate(
            json.loads(text), context={"slugs": taxonomy.slugs}
        )


def test_bad_answers_keep_the_local_reading_of_their_notes(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all", concurrency="1")
    titles = [t for t, _ in seed_notes()]
    bad = {
        titles[1]: Reply(content="not json at all"),
        titles[7]: Reply(content=json.dumps({"roles": ["kernels"], "verdict": "deep"})),
        titles[13]: Reply(reading=reading(["gpu-folks"])),
        titles[19]: Reply(reading=reading(["kernels"], "must-read")),
    }
    llm.answer = lambda body: bad.get(note_of(body)[0], KERNELS_DEEP)
    code, out, err = run("ingest")
    assert code == 0 and "32 new" in out and "Traceback" not in err
    assert llm.count() == 32
    lines = url_lines(err)
    assert len(lines) == 1 and "4 answers that are not a reading" in lines[0], err
    local = local_readings()
    for note in stored(db_url):
        if note.title in bad:
            assert note.read_by == "classifier"
            assert (note.roles, note.verdict) == (
                local[note.title].roles,
                local[note.title].verdict,
            )
        else:
            assert note.read_by == "llm:test-model" and note.roles == ("kernels",)


# -- the cache -------------------------------------------------------------------------------


def test_unchanged_notes_are_never_asked_again_and_a_change_reads_again(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all")
    llm.models = [MODEL, "other-model"]
    assert run("ingest")[0] == 0 and llm.count() == 32
    assert run("ingest")[0] == 0 and llm.count() == 32
    code, out, err = run("reclassify")
    assert code == 0 and "0 notes changed" in out and llm.count() == 32
    assert "32 from earlier readings" in err

    first = sorted(env.glob("*.txt"))[0]
    title, paragraph = seed_notes()[0]
    first.write_text(
        first.read_text(encoding="utf-8").replace(paragraph, paragraph + " 补充一句。")
    )
    assert run("ingest")[0] == 0 and llm.count() == 33
    assert note_of(llm.requests[-1]) == (title, paragraph + " 补充一句。")

    monkeypatch.setenv("PRDIGEST_LLM_MODEL", "other-model")
    assert run("ingest")[0] == 0 and llm.count() == 65  # another model reads every note
    assert {n.read_by for n in stored(db_url)} == {"llm:other-model"}
    assert run("reclassify")[0] == 0 and llm.count() == 65
    monkeypatch.setenv("PRDIGEST_LLM_MODEL", MODEL)
    assert run("ingest")[0] == 0 and llm.count() == 65  # its readings are still stored
    assert {n.read_by for n in stored(db_url)} == {"llm:test-model"}


def test_notes_another_model_read_and_this_one_need_not_go_back_to_the_classifier(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all")
    assert run("ingest")[0] == 0 and llm.count() == 32
    llm.models = [MODEL, "other-model"]
    monkeypatch.setenv("PRDIGEST_LLM_MODEL", "other-model")
    monkeypatch.setenv("PRDIGEST_LLM_READS", "unsure")
    local = local_readings()
    wanted = {title for title, c in local.items() if unsure(c)}
    assert run("ingest")[0] == 0 and llm.count() == 32 + len(wanted)
    for note in stored(db_url):
        if note.title in wanted:
            assert note.read_by == "llm:other-model"
        else:
            assert note.read_by == "classifier" and note.roles == local[note.title].roles


def test_posting_and_dry_runs_never_ask_the_model(
    env: Path, db_url: str, llm: FakeLLM, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all")
    monkeypatch.setenv("PRDIGEST_CHANNEL", DIGEST_CHANNEL)
    monkeypatch.setenv("PRDIGEST_SLACK_API_URL", slack.api_url)
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
    monkeypatch.setenv("PRDIGEST_CHANNEL_RATE", "0")
    code, out, err = run("post")  # ingests the notes first, then posts
    assert code == 0 and slack.count("chat.postMessage") > 0, out + err
    assert llm.count() == 0
    assert run("reclassify", "--dry-run")[0] == 0 and llm.count() == 0
    assert {n.read_by for n in stored(db_url)} == {"classifier"}


def test_reclassify_reads_notes_stored_before_the_server_was_set(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("ingest")[0] == 0 and llm.count() == 0
    use(monkeypatch, llm.url, reads="all")
    code, out, err = run("reclassify")
    assert code == 0 and "32 notes changed" in out and "32 read" in err
    assert llm.count() == 32
    assert {n.read_by for n in stored(db_url)} == {"llm:test-model"}


def test_a_new_release_on_start_keeps_the_stored_readings_without_asking(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all")
    assert run("ingest")[0] == 0 and llm.count() == 32
    store = Store.open(db_url)
    store.set_meta(FINGERPRINT_KEY, "the rules of an older release")
    store.close()
    code, _, err = run("preview")  # re-classifies on start, as serve and post do
    assert code == 0 and "re-classified the stored notes (0 changed)" in err
    assert llm.count() == 32
    assert {n.read_by for n in stored(db_url)} == {"llm:test-model"}


# -- concurrency, fixes ----------------------------------------------------------------------


def test_notes_are_read_concurrently_within_the_setting(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all", concurrency="3")
    llm.answer = lambda _body: Reply(reading=reading(["frontend"], "skim"), delay=0.1)
    assert run("ingest")[0] == 0
    # three at a time, never more (the fake counts the requests it is answering at once)
    assert llm.count() == 32 and llm.max_in_flight == 3
    assert {n.read_by for n in stored(db_url)} == {"llm:test-model"}


def test_editor_fixes_win_and_become_examples_in_the_next_request(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all")
    assert run("ingest")[0] == 0
    assert "Notes an editor corrected" not in llm.requests[-1]["messages"][0]["content"]
    fixed = stored(db_url)[3]
    code, _, err = run("fix", str(fixed.id), "--roles", "multimodal,models", "--verdict", "skip")
    assert code == 0, err

    paragraph = seed_notes()[0][1]
    revise(env, paragraph, paragraph + " 再补充。")
    assert run("ingest")[0] == 0 and llm.count() == 33
    system = llm.requests[-1]["messages"][0]["content"]
    assert "Notes an editor corrected" in system
    example = next(line for line in system.splitlines() if fixed.title in line)
    assert '["multimodal", "models"]' in example and '"skip"' in example

    assert run("reclassify")[0] == 0
    after = {n.id: n for n in stored(db_url)}[fixed.id]
    assert after.roles == ("multimodal", "models") and after.verdict is Verdict.SKIP


# -- failures --------------------------------------------------------------------------------


def _refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


FAILURES = {
    "refused": (None, "unreachable"),
    "http 500": (Reply(status=500), "HTTP 500"),
    "garbage": (Reply(garbage=b"<html>It works!</html>"), "nonsense"),
    "unknown role": (Reply(reading=reading(["gpu-folks"])), "unknown role 'gpu-folks'"),
    "hang": (Reply(reading=reading(["kernels"]), delay=30), "PRDIGEST_LLM_TIMEOUT"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_server_costs_one_line_and_no_note(
    failure: str, env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply, cause = FAILURES[failure]
    url = _refused_url() if reply is None else llm.url
    if reply is not None:
        llm.answer = lambda _body: reply
    use(monkeypatch, url, reads="all", concurrency="2", timeout="0.5")
    started = time.monotonic()
    code, out, err = run("ingest")
    assert time.monotonic() - started < 10
    assert code == 0 and "32 new, 0 updated, 0 unchanged, 0 failed" in out
    assert "Traceback" not in out + err
    lines = url_lines(err)
    assert len(lines) == 1, err
    assert url in lines[0] and cause in lines[0]
    # the run stopped asking: at most what was in flight (and the answers before a trip)
    assert llm.count() <= (INVALID_TRIP + 1 if failure == "unknown role" else 2)
    notes = stored(db_url)
    assert len(notes) == 32 and {n.read_by for n in notes} == {"classifier"}


def test_the_next_run_reads_what_an_outage_left(
    env: Path, db_url: str, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, llm.url, reads="all", concurrency="1")
    llm.answer = lambda _body: Reply(status=503)
    assert run("ingest")[0] == 0 and llm.count() == 1
    llm.answer = lambda _body: KERNELS_DEEP
    code, out, err = run("ingest")
    assert code == 0 and "32 unchanged" in out and not url_lines(err)
    assert llm.count() == 33
    assert {n.read_by for n in stored(db_url)} == {"llm:test-model"}


# -- metrics, settings, doctor ---------------------------------------------------------------


def test_requests_are_counted_and_timed(services: Services, llm: FakeLLM) -> None:
    metrics = PrometheusMetrics()
    services.settings = services.settings.model_copy(
        update={"llm_url": llm.url, "llm_model": MODEL, "llm_reads": "all"}
    )
    llm.answer = lambda body: (
        Reply(content="?") if note_of(body)[0] == seed_notes()[0][0] else KERNELS_DEEP
    )
    reader = build_reader(services.settings, services.store, services.taxonomy, metrics)
    assert reader is not None
    report = ingest_paths(services, seed_files(), reader=reader)
    assert report.new == 32 and report.reading is not None and report.reading.read == 31
    text = metrics.render().decode()
    assert 'prdigest_llm_requests_total{outcome="ok"} 31.0' in text
    assert 'prdigest_llm_requests_total{outcome="invalid"} 1.0' in text
    assert "prdigest_llm_request_seconds_count 32.0" in text


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("PRDIGEST_LLM_URL", "gpu-box:8000", "PRDIGEST_LLM_URL: expected an http(s) base URL"),
        ("PRDIGEST_LLM_READS", "some", "PRDIGEST_LLM_READS"),
        ("PRDIGEST_LLM_TIMEOUT", "0", "PRDIGEST_LLM_TIMEOUT"),
        ("PRDIGEST_LLM_CONCURRENCY", "0", "PRDIGEST_LLM_CONCURRENCY"),
    ],
)
def test_a_bad_setting_is_one_line(
    name: str, value: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    code, _, err = run("ingest")
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_url_without_a_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRDIGEST_LLM_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("PRDIGEST_LLM_API_KEY", "sk-very-secret")
    code, _, err = run("ingest")
    assert code == 2 and "PRDIGEST_LLM_MODEL" in err and "sk-very-secret" not in err


def test_doctor_checks_the_model_server(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", f"sqlite:///{tmp_path / 'd.db'}")

    def model_line() -> str:
        result = runner.invoke(app, ["doctor"])
        assert "Traceback" not in result.output
        return next(line for line in result.output.splitlines() if "model server" in line)

    assert not any("model server" in line for line in runner.invoke(app, ["doctor"]).output)
    use(monkeypatch, llm.url)
    line = model_line()
    assert line.startswith("ok") and f"serves {MODEL}" in line and llm.model_listings == 1
    llm.models = ["Qwen/Qwen3-8B"]
    line = model_line()
    assert line.startswith("FAIL") and "Qwen/Qwen3-8B" in line and "PRDIGEST_LLM_MODEL" in line
    use(monkeypatch, _refused_url())
    line = model_line()
    assert line.startswith("FAIL") and "unreachable" in line and "PRDIGEST_LLM_URL" in line
