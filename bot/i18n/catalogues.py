"""Rebuild the message catalogues from the code: `python -m bot.i18n.catalogues`.

One command does it all, with Babel (a development dependency; the bot itself reads the
compiled catalogues with the standard library):

1. extract every message from `bot/`: the calls `gettext`, `ngettext`, `pgettext`,
   `side_by_side`, `lazy_text` and `N_` (of `bot.i18n.texts`), plus the `/prdigest` grammar's
   usage lines and summaries (the first line of each parser's docstring, which help shows);
2. update `locale/{zh,en}/LC_MESSAGES/prdigest.po`: new messages are added, messages gone from
   the code are dropped, a changed message keeps its old translation marked fuzzy (a guess to
   review, not used until the mark is removed); an English message without a text gets its
   message id;
3. compile each `.po` to the `.mo` beside it.

Then translate what is new in `zh/…/prdigest.po` (an empty `msgstr`, or a `#, fuzzy` entry:
correct it and remove the mark) and run the command again to compile. `--check` changes
nothing and exits 1 when a catalogue is out of date, empty or fuzzy somewhere.
"""

from __future__ import annotations

import ast
import io
import sys
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir, extract_python
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

from bot.i18n.texts import CATALOGUE_LANGUAGES, DOMAIN, Language

PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # bot/
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
GRAMMAR_MODULE = "slack/prdigest.py"  # the `/prdigest` grammar table, relative to bot/
KEYWORDS: dict[str, Any] = {**DEFAULT_KEYWORDS, "side_by_side": None, "lazy_text": None}
COMMENT_TAGS = ("Translators:",)


def po_path(language: Language, locale_dir: Path = LOCALE_DIR) -> Path:
    return locale_dir / language.value / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(language: Language, locale_dir: Path = LOCALE_DIR) -> Path:
    return po_path(language, locale_dir).with_suffix(".mo")


def extract_grammar(
    fileobj: IO[bytes], keywords: Mapping[str, Any], comment_tags: Collection[str], options: Any
) -> Iterator[Any]:
    """The grammar module's messages, and the usage line and summary of each
    `Subcommand(name, usage, parser)` row (help says them in the reader's language).
    Yields what Babel's extraction methods yield: (line, function, message, comments)."""
    source = fileobj.read()
    yield from extract_python(io.BytesIO(source), keywords, comment_tags, options)
    tree = ast.parse(source)
    summaries = {
        node.name: (node.lineno, (ast.get_docstring(node) or "").strip().splitlines())
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Subcommand"):
            continue
        usage, parser = [*node.args, None, None, None][1:3]
        if isinstance(usage, ast.Constant) and isinstance(usage.value, str):
            yield node.lineno, None, usage.value, ["Translators: a /prdigest usage line"]
        if isinstance(parser, ast.Name) and parser.id in summaries:
            line, doc = summaries[parser.id]
            if doc:
                yield line, None, doc[0], ["Translators: a /prdigest help line"]


def extract_messages() -> Catalog:
    """Every message the code says, as a template catalogue."""
    template = Catalog(domain=DOMAIN, project="prdigest", charset="utf-8", fuzzy=False)
    method_map = [(GRAMMAR_MODULE, extract_grammar), ("**.py", "python")]
    found = extract_from_dir(
        PACKAGE_ROOT,
        method_map=method_map,  # type: ignore[arg-type]  # Babel takes a callable method too
        keywords=KEYWORDS,
        comment_tags=COMMENT_TAGS,
        strip_comment_tags=True,
    )
    for filename, lineno, message, comments, context in found:
        template.add(
            message,
            None,
            [(f"bot/{filename}", lineno)],
            auto_comments=comments,
            context=context,
        )
    return template


HEADER = """\
# prdigest's messages in {language}.
# Translate each msgstr (keep every {{placeholder}}); `python -m bot.i18n.catalogues` adds
# the code's new messages here and compiles the .mo beside this file.
#"""


def _read_po(language: Language, locale_dir: Path = LOCALE_DIR) -> Catalog:
    path = po_path(language, locale_dir)
    if not path.exists():
        name = {Language.ZH: "Chinese", Language.EN: "English"}[language]
        return Catalog(
            locale=language.value,
            domain=DOMAIN,
            header_comment=HEADER.format(language=name),
            project="prdigest",
            version="1",
            msgid_bugs_address="-",
            last_translator="prdigest maintainers",
            language_team=f"prdigest {language.value}",
            charset="utf-8",
            fuzzy=False,
        )
    with path.open("rb") as source:
        return read_po(source, locale=language.value, domain=DOMAIN)


def updated_catalogue(language: Language, template: Catalog) -> Catalog:
    """The language's catalogue brought up to date with `template`."""
    catalog = _read_po(language)
    catalog.update(template, update_creation_date=False)
    catalog.obsolete.clear()  # messages gone from the code are dropped, not kept
    catalog.fuzzy = False
    if language is Language.EN:
        for message in catalog:
            if message.id and (message.fuzzy or not _translated(message)):
                message.string = message.id
                message.flags.discard("fuzzy")
    return catalog


def _translated(message: Message) -> bool:
    strings = message.string if isinstance(message.string, tuple) else (message.string,)
    return all(strings)


def po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=100, include_lineno=False, ignore_obsolete=True)
    return out.getvalue()


def mo_bytes(po: bytes, language: Language) -> bytes:
    """The `.po` text compiled: only translated messages that are not fuzzy (a message
    missing from a catalogue is said by its id, the English)."""
    catalog = read_po(io.BytesIO(po), locale=language.value, domain=DOMAIN)
    for message in catalog:
        if message.id and not _translated(message):
            message.string = ""  # left out, where Babel would fill plural forms
    out = io.BytesIO()
    write_mo(out, catalog)
    return out.getvalue()


def compiled_messages(catalog: Catalog) -> dict[tuple[str | None, Any], Any]:
    """What a compiled catalogue says: (context, id) -> string, for every message used
    (plural forms as tuples, whether read from a .po or a .mo)."""

    def key(value: Any) -> Any:
        return tuple(value) if isinstance(value, list | tuple) else value

    return {
        (m.context, key(m.id)): key(m.string)
        for m in catalog
        if m.id and _translated(m) and not m.fuzzy
    }


def problems(
    language: Language, template: Catalog | None = None, locale_dir: Path = LOCALE_DIR
) -> list[str]:
    """Why the language's catalogues are not what the command would write (empty: up to
    date): messages missing or left over, untranslated or fuzzy, a stale `.mo`."""
    template = template or extract_messages()
    source, compiled = po_path(language, locale_dir), mo_path(language, locale_dir)
    where = f"{language.value}/{source.name}"
    current = _read_po(language, locale_dir)
    wanted = {(m.context, m.id) for m in template if m.id}
    have = {(m.context, m.id) for m in current if m.id}
    found = [f"{where}: no entry for {key[1]!r}" for key in sorted(wanted - have, key=str)]
    found += [f"{where}: {k[1]!r} is no longer in the code" for k in sorted(have - wanted, key=str)]
    for message in current:
        if message.id and message.fuzzy:
            found.append(f"{where}: {message.id!r} is marked fuzzy (review it, remove the mark)")
        elif message.id and not _translated(message):
            found.append(f"{where}: {message.id!r} has no translation")
    if not compiled.exists():
        found.append(f"{language.value}/{compiled.name}: missing")
    else:
        with compiled.open("rb") as mo:
            if compiled_messages(read_mo(mo)) != compiled_messages(current):
                found.append(f"{language.value}/{compiled.name}: not compiled from {source.name}")
    return found


def _shown(path: Path) -> str:
    return str(path.relative_to(PACKAGE_ROOT.parent))


def build() -> list[Path]:
    """Extract, update and compile; returns the files written (unchanged ones are not)."""
    template = extract_messages()
    written: list[Path] = []
    for language in CATALOGUE_LANGUAGES:
        po = po_bytes(updated_catalogue(language, template))
        for path, content in ((po_path(language), po), (mo_path(language), mo_bytes(po, language))):
            if not path.exists() or path.read_bytes() != content:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
                written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        template = extract_messages()
        found = [p for language in CATALOGUE_LANGUAGES for p in problems(language, template)]
        print("\n".join(found) or "the catalogues are up to date")
        return 1 if found else 0
    if args:
        print("usage: python -m bot.i18n.catalogues [--check]", file=sys.stderr)
        return 2
    for path in build():
        print(f"wrote {_shown(path)}")
    for language in CATALOGUE_LANGUAGES:
        todo = [p for p in problems(language) if "no translation" in p or "fuzzy" in p]
        if todo:
            print(f"{_shown(po_path(language))}: {len(todo)} message(s) to translate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
