"""The message catalogues, the texts they give and the rule that picks a reader's language,
without Slack or a database."""

from __future__ import annotations

import ast
import copy
import gettext
import io
import shutil
import string
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

import bot
from bot.config import SettingsError, load_settings
from bot.domain import ReaderProfile, ReaderSettings, Role, Verdict
from bot.i18n.catalogues import (
    KEYWORDS,
    LOCALE_DIR,
    PACKAGE_ROOT,
    extract_messages,
    mo_bytes,
    po_path,
    problems,
)
from bot.i18n.texts import CATALOGUE_LANGUAGES, Language, lazy_text, reader_language, texts_for
from bot.slack.prdigest import FALLBACKS, SUBCOMMANDS, help_lines

T0 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
ROOT = Path(bot.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def template() -> Catalog:
    return extract_messages()


def _catalogue(language: Language, locale_dir: Path = LOCALE_DIR) -> Catalog:
    with po_path(language, locale_dir).open("rb") as source:
        return read_po(source, locale=language.value)


# ---------------------------------------------------------------- the catalogues


def test_every_message_is_in_both_catalogues_translated_and_compiled(template: Catalog) -> None:
    """What `python -m bot.i18n.catalogues --check` checks: each catalogue holds exactly the
    code's messages, each with a translation that is not fuzzy, and its .mo is compiled
    from it."""
    assert len(template) > 150
    for language in CATALOGUE_LANGUAGES:
        assert problems(language, template) == [], language


def test_help_lines_are_messages(template: Catalog) -> None:
    """The grammar table's usage lines and summaries (parser docstrings) are extracted."""
    ids = {m.id for m in template}
    for row in (*SUBCOMMANDS, *FALLBACKS):
        assert row.usage in ids and row.summary in ids, row.name
    chinese = dict(help_lines(texts_for(Language.ZH)))
    assert chinese["/prdigest subscribe <角色> [<角色> ...] [deep|skim|all]"].startswith("订阅")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_each_translation_keeps_the_placeholders_of_its_message() -> None:
    """A translation that loses a placeholder drops information; one that adds an unknown
    one would fail when formatted. Braces that do not parse fail here too."""
    for language in CATALOGUE_LANGUAGES:
        for message in _catalogue(language):
            if not message.id:
                continue
            ids = message.id if isinstance(message.id, list | tuple) else (message.id,)
            wanted = set().union(*(_fields(i) for i in ids))
            strings = (
                message.string if isinstance(message.string, list | tuple) else (message.string,)
            )
            for text in strings:
                assert _fields(text) == wanted, (language, message.id, text)


def _literal_calls_in_fstrings(tree: ast.AST) -> list[int]:
    """Lines where a message is written inside an f-string: extraction cannot see it there
    (Python tokenizes the whole f-string as one string)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        for inner in ast.walk(node):
            if not isinstance(inner, ast.Call) or not inner.args:
                continue
            name = getattr(inner.func, "attr", None) or getattr(inner.func, "id", None)
            first = inner.args[0]
            if (
                name in KEYWORDS
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                lines.append(inner.lineno)
    return lines


def test_no_message_hides_inside_an_f_string() -> None:
    hidden = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        for line in _literal_calls_in_fstrings(ast.parse(path.read_text(encoding="utf-8"))):
            hidden.append(f"{path.relative_to(ROOT)}:{line}")
    assert hidden == []
    # ... and the check sees one where it is.
    assert _literal_calls_in_fstrings(ast.parse("f\"x {t.gettext('Save')}\"")) == [1]


def _edit(path: Path, change: Callable[[Catalog], None]) -> None:
    with path.open("rb") as source:
        catalog = read_po(source, locale=path.parts[-3])
    change(catalog)
    with path.open("wb") as out:
        write_po(out, catalog)


def test_the_check_names_what_is_missing_untranslated_fuzzy_or_not_compiled(
    tmp_path: Path, template: Catalog
) -> None:
    locale = tmp_path / "locale"
    shutil.copytree(LOCALE_DIR, locale)
    zh = po_path(Language.ZH, locale)

    def blank(catalog: Catalog) -> None:
        catalog["Save"].string = ""
        catalog["Cancel"].flags.add("fuzzy")
        del catalog["More"]

    _edit(zh, blank)
    found = "\n".join(problems(Language.ZH, template, locale))
    assert "'Save' has no translation" in found
    assert "'Cancel' is marked fuzzy" in found
    assert "no entry for 'More'" in found
    assert "prdigest.mo: not compiled from prdigest.po" in found
    extra = copy.deepcopy(template)
    extra.add("A message the catalogues have not seen")
    assert any("no entry for 'A message" in p for p in problems(Language.EN, extra, locale))


def test_compiling_leaves_out_what_is_not_translated() -> None:
    """An untranslated plural is left out of the .mo (said in English), not filled in with
    the English by the compiler, so the check and the runtime agree."""
    po = (
        po_path(Language.ZH)
        .read_bytes()
        .replace('msgstr[0] "{count} 条笔记"'.encode(), b'msgstr[0] ""')
    )
    assert po != po_path(Language.ZH).read_bytes()
    catalogue = gettext.GNUTranslations(io.BytesIO(mo_bytes(po, Language.ZH)))
    assert catalogue.ngettext("{count} note", "{count} notes", 2) == "{count} notes"


def test_the_wheel_carries_the_compiled_catalogues() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = data["tool"]["setuptools"]["package-data"]["bot"]
    for path in sorted(LOCALE_DIR.rglob("*.*")):
        relative = PurePosixPath(path.relative_to(PACKAGE_ROOT).as_posix())
        assert any(relative.match(p) for p in patterns), relative


# ---------------------------------------------------------------- texts


def test_texts_say_one_language_or_both_side_by_side() -> None:
    zh, en, both = (texts_for(code) for code in ("zh", "en", "both"))
    assert (zh.verdict(Verdict.DEEP), en.verdict(Verdict.DEEP)) == ("精读", "deep")
    assert both.verdict(Verdict.DEEP) == "精读 deep"  # the bilingual badge of old
    assert both.verdict_word(Verdict.SKIP) == "skip"
    assert both.side_by_side("addition") == "补充 / addition"
    assert both.side_by_side("vLLM reading list", both="{zh}") == "vLLM 精读推荐"
    assert en.side_by_side("vLLM reading list", both="{zh}") == "vLLM reading list"
    assert both.gettext("Subscribe") == "Subscribe"  # messages stay English in `both`
    assert zh.gettext("Subscribe") == "订阅"
    role = Role("moe-quant", "MoE 与量化", "MoE & quantization")
    assert [t.role_name(role) for t in (zh, en, both)] == [
        "MoE 与量化",
        "MoE & quantization",
        "MoE 与量化 / MoE & quantization",
    ]


def test_plural_forms_follow_each_language() -> None:
    en, zh = texts_for("en"), texts_for("zh")
    assert en.ngettext("{count} note", "{count} notes", 1, count=1) == "1 note"
    assert en.ngettext("{count} note", "{count} notes", 3, count=3) == "3 notes"
    assert zh.ngettext("{count} note", "{count} notes", 1, count=1) == "1 条笔记"
    assert zh.ngettext("{count} note", "{count} notes", 3, count=3) == "3 条笔记"


def test_a_placeholder_value_is_data_not_a_format() -> None:
    said = texts_for("en").say(lazy_text("`{word}` is not a role.", word="{0} {x!r}"))
    assert said == "`{0} {x!r}` is not a role."


def test_a_message_missing_from_the_catalogues_is_said_in_english() -> None:
    assert texts_for("zh").gettext("Not in any catalogue: {x}", x=1) == "Not in any catalogue: 1"


# ---------------------------------------------------------------- whose language


@pytest.mark.parametrize(
    ("chosen", "locale", "default", "expected"),
    [
        ("en", "zh-CN", Language.ZH, Language.EN),  # `/prdigest lang` wins
        ("zh", "en-US", Language.EN, Language.ZH),
        (None, "zh-CN", Language.EN, Language.ZH),  # else Slack's locale
        (None, "zh-TW", Language.BOTH, Language.ZH),
        (None, "zh_HK", Language.BOTH, Language.ZH),
        (None, "en-GB", Language.ZH, Language.EN),
        (None, "ja-JP", Language.ZH, Language.EN),  # any other language: English
        (None, "de-DE", Language.BOTH, Language.EN),
        (None, None, Language.BOTH, Language.BOTH),  # else PRDIGEST_LANGUAGE
        (None, "", Language.ZH, Language.ZH),
    ],
)
def test_a_readers_language(
    chosen: str | None, locale: str | None, default: Language, expected: Language
) -> None:
    profile = ReaderProfile(tz="UTC", locale=locale, fetched_at=T0)
    assert reader_language(ReaderSettings(language=chosen), profile, default) is expected


def test_a_reader_slack_was_never_asked_about_reads_the_default() -> None:
    assert reader_language(ReaderSettings(), None, Language.EN) is Language.EN


def test_prdigest_language_is_checked_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().language == "both"
    monkeypatch.setenv("PRDIGEST_LANGUAGE", " ZH ")
    assert load_settings().language == "zh"
    monkeypatch.setenv("PRDIGEST_LANGUAGE", "fr")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert "PRDIGEST_LANGUAGE" in str(caught.value) and "zh (Chinese)" in str(caught.value)
