"""The guides are tested like code: every relative link and anchor resolves, every command and
setting is documented, the README stays short with a table of contents that matches its
headings, and the worked example of the classifier's guide loads and classifies as it says."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import AliasChoices

from bot.classify import classify
from bot.classify.taxonomy import load_taxonomy
from bot.cli.app import app
from bot.config import ENV_PREFIX, Settings
from bot.domain import Verdict
from bot.notes.ingest import parse_note_text
from bot.slack.prdigest import COMMAND_NAME, SUBCOMMANDS
from tests.bench.digest_picture import block_html, mrkdwn_html

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDES = (
    README,
    ROOT / "deploy" / "README.md",
    ROOT / "bot" / "classify" / "README.md",
    ROOT / "tests" / "bench" / "README.md",
)
DOCS = (*GUIDES, ROOT / "tests" / "fixtures" / "README.md")
README_MAX_LINES = 380

# --------------------------------------------------------------------------- reading markdown

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_LINK = re.compile(r"\b(?:href|src)=\"([^\"]+)\"")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def prose_lines(text: str) -> list[str]:
    """The lines of a markdown text, with those of fenced code blocks blanked (so line
    numbers stay and a `# comment` in a shell block is not a heading)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return lines


def headings(text: str) -> list[tuple[int, str]]:
    """(level, text as written) of every ATX heading outside code blocks."""
    return [
        (len(m[1]), m[2]) for line in prose_lines(text) if (m := _HEADING.match(line)) is not None
    ]


def rendered(markdown: str) -> str:
    """The text GitHub shows for inline markdown: link and image text, code without its
    backticks, no emphasis marks."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = text.replace("`", "")
    return re.sub(r"(\*\*|\*)(?=\S)(.+?)(?<=\S)\1", r"\2", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lower case; letters, marks, digits,
    `_`, `-` and spaces kept, every other character dropped; spaces become hyphens."""
    kept = (
        ch
        for ch in rendered(heading).lower()
        if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a markdown text, duplicates numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for _, heading in headings(text):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[str]:
    """Every link and image target (markdown or HTML) outside code."""
    prose = _CODE_SPAN.sub(lambda m: " " * len(m[0]), "\n".join(prose_lines(text)))
    return [m[2] for m in _LINK.finditer(prose)] + _HTML_LINK.findall(prose)


def broken_links(path: Path, text: str | None = None) -> list[str]:
    """The relative links of the document at `path` (its `text`, read from `path` unless
    given) that name no file in the repository, or no heading of the file they name."""
    text = path.read_text(encoding="utf-8") if text is None else text
    broken = []
    for target in links(text):
        if _SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        where = (path.parent / file_part).resolve() if file_part else path
        if not where.is_relative_to(ROOT) or not (where == path or where.exists()):
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md":
            target_text = text if where == path else where.read_text(encoding="utf-8")
            if anchor not in anchors(target_text):
                broken.append(f"{target}: no such heading in {where.relative_to(ROOT)}")
        elif anchor:
            broken.append(f"{target}: an anchor into a file that is not markdown")
    return broken


def section(text: str, title: str, keep_code: bool = False) -> str:
    """The lines under the heading `title` up to the next heading of its level or above
    (code blocks blanked unless `keep_code`)."""
    lines = prose_lines(text)
    for number, line in enumerate(lines):
        found = _HEADING.match(line)
        if found and found[2] == title:
            level = len(found[1])
            end = next(
                (
                    n
                    for n in range(number + 1, len(lines))
                    if (m := _HEADING.match(lines[n])) and len(m[1]) <= level
                ),
                len(lines),
            )
            chosen = text.splitlines() if keep_code else lines
            return "\n".join(chosen[number + 1 : end])
    raise AssertionError(f"no heading {title!r}")


def first_cells(text: str) -> list[str]:
    """The first cell of every table row (header and separator rows included)."""
    return [line.split("|")[1] for line in text.splitlines() if line.lstrip().startswith("|")]


def code_spans(text: str) -> list[str]:
    return [span.strip("`") for span in _CODE_SPAN.findall(text)]


def contents_entries(text: str) -> list[tuple[int, str, str]]:
    """(level, text, anchor) of each entry of the "Contents" list; an entry indented by two
    more spaces is one level deeper, the first level being that of the headings (2)."""
    entries = []
    for line in section(text, "Contents").splitlines():
        found = re.match(r"^( *)- \[(.+)\]\((#[^)\s]*)\)\s*$", line)
        if found:
            entries.append((2 + len(found[1]) // 2, found[2], found[3][1:]))
        elif line.strip():
            raise AssertionError(f"not an entry of the contents: {line!r}")
    return entries


def linked_docs(path: Path) -> list[Path]:
    """`path` and the markdown files in the repository it links to."""
    found = [path]
    for target in links(path.read_text(encoding="utf-8")):
        file_part = target.partition("#")[0]
        if file_part.endswith(".md") and not _SCHEME.match(target):
            where = (path.parent / file_part).resolve()
            if where.exists() and where not in found:
                found.append(where)
    return found


# --------------------------------------------------------------------------- the rules above


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Quick start", "quick-start"),
        ("Upgrading a SQLite store to schema 0007", "upgrading-a-sqlite-store-to-schema-0007"),
        ("The model server and the `[llm]` extra", "the-model-server-and-the-llm-extra"),
        ("Every set's scores", "every-sets-scores"),
        ("Before going live: prdigest doctor", "before-going-live-prdigest-doctor"),
        ("dev6: was held out as unseen_v2", "dev6-was-held-out-as-unseen_v2"),
        ("dev8–dev11: four more writers", "dev8dev11-four-more-writers"),
        ("精读 / 快速浏览：怎么读", "精读--快速浏览怎么读"),
        ("**Bold** and [a link](x.md)", "bold-and-a-link"),
    ],
)
def test_slug_follows_githubs_rules(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_link_checks_catch_what_is_wrong() -> None:
    """A made-up document, so the checks can fail."""
    doc = "# Top\n\n## Usage\n\n## Usage\n\n```bash\n# not a heading\n```\n"
    assert anchors(doc) == {"top", "usage", "usage-1"}
    assert headings(doc) == [(1, "Top"), (2, "Usage"), (2, "Usage")]
    page = ROOT / "deploy" / "page.md"  # read from `text`, never written
    text = (
        "[a](#usage-1) [b](#nowhere) ![c](img/missing.png) [d](../README.md#quick-start) "
        "[e](https://example.com/x) `[f](not-a-link.md)` [g](../README.md#no-such-part) "
        '<img src="img/digest.png"> [h](../../outside.md)'
    )
    assert links(text) == [
        "#usage-1",
        "#nowhere",
        "img/missing.png",
        "../README.md#quick-start",
        "https://example.com/x",
        "../README.md#no-such-part",
        "../../outside.md",
        "img/digest.png",
    ]
    assert broken_links(page, doc + text) == [
        "#nowhere: no such heading in deploy/page.md",
        "img/missing.png: no such file",
        "../README.md#no-such-part: no such heading in README.md",
        "../../outside.md: no such file",
    ]


# --------------------------------------------------------------------------- the documents


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    assert broken_links(doc) == []


def test_the_readme_links_to_every_guide() -> None:
    linked = linked_docs(README)
    missing = [str(g.relative_to(ROOT)) for g in GUIDES if g not in linked]
    assert missing == [], "README.md does not link to these guides"


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a guide"


@pytest.mark.parametrize("doc", GUIDES, ids=lambda p: str(p.relative_to(ROOT)))
def test_contents_match_the_headings(doc: Path) -> None:
    """The table of contents lists the headings under it, in order, at their level, with
    their anchors (as deep as the contents go)."""
    text = doc.read_text(encoding="utf-8")
    entries = contents_entries(text)
    deepest = max(level for level, _, _ in entries)
    found = headings(text)
    after = found[found.index((2, "Contents")) + 1 :]
    wanted = [(level, title) for level, title in after if level <= deepest]
    assert [(level, title) for level, title, _ in entries] == wanted
    assert [anchor for _, _, anchor in entries] == [slug(title) for _, title in wanted]


def cli_commands() -> list[str]:
    """Every `prdigest` command and subcommand, as typed, from the typer app itself."""

    def walk(command: Any, prefix: str) -> Iterator[str]:
        context = typer.Context(command)
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            if sub is None or sub.hidden:
                continue
            yield f"{prefix} {name}"
            if hasattr(sub, "list_commands"):
                yield from walk(sub, f"{prefix} {name}")

    return list(walk(typer.main.get_command(app), "prdigest"))


def test_every_prdigest_command_is_in_the_readme() -> None:
    commands = cli_commands()
    assert {"prdigest ingest", "prdigest serve"} <= set(commands)
    listed = code_spans("\n".join(first_cells(section(README.read_text("utf-8"), "Commands"))))
    undocumented = [c for c in commands if not any(s == c or s.startswith(f"{c} ") for s in listed)]
    assert undocumented == [], "add a row for each to the Commands table of README.md"


def test_every_slash_subcommand_is_documented() -> None:
    """In a table of README.md or of a guide it links to: a row whose first cell holds
    `name …` or `/prdigest name …`."""
    names = [s.name for s in SUBCOMMANDS]
    assert {"help", "subscribe", "week"} <= set(names)
    first_words = set()
    for doc in linked_docs(README):
        for span in code_spans("\n".join(first_cells(doc.read_text(encoding="utf-8")))):
            words = span.removeprefix(f"{COMMAND_NAME} ").split()
            first_words.update(words[:1])
    undocumented = [f"{COMMAND_NAME} {n}" for n in names if n not in first_words]
    assert undocumented == [], "add a row for each to the In Slack table of README.md"


def setting_names() -> list[str]:
    """The environment variable of every setting."""
    names = []
    for field, info in Settings.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names.append(str(alias.choices[0]))
        else:
            names.append(alias if isinstance(alias, str) else f"{ENV_PREFIX}{field.upper()}")
    return names


def test_every_setting_is_in_the_readme() -> None:
    names = setting_names()
    assert {"PRDIGEST_DATABASE_URL", "SLACK_BOT_TOKEN"} <= set(names)
    table = code_spans("\n".join(first_cells(section(README.read_text("utf-8"), "Settings"))))
    assert [n for n in names if n not in table] == [], "add a row to the Settings table"


# --------------------------------------------------------------------------- examples that run


def test_the_worked_example_of_a_team_role_holds(tmp_path: Path) -> None:
    """The roles file of the classifier's guide loads, and its example note is classified as
    the guide says: `rl` its primary role, a deep read there and a skim for everyone else."""
    guide = (ROOT / "bot" / "classify" / "README.md").read_text(encoding="utf-8")
    example = section(guide, "Worked example: adding a team role", keep_code=True)
    blocks = dict(re.findall(r"```(toml|text)\n(.*?)```", example, re.DOTALL))
    assert set(blocks) == {"toml", "text"}
    assert "prdigest reclassify" in example
    roles_file = tmp_path / "team-roles.toml"
    roles_file.write_text(blocks["toml"], encoding="utf-8")
    taxonomy = load_taxonomy(roles_file)
    assert len(taxonomy.roles) == 10 and f"10 roles from {roles_file.name}" in example
    rl, kernels = taxonomy.resolve("rlhf"), taxonomy.resolve("算子库")
    assert rl is not None and rl.slug == "rl" and kernels is not None
    assert kernels.slug == "kernels"

    (note,) = parse_note_text(blocks["text"], "week.txt")
    reading = classify(note.title, note.paragraph, taxonomy)
    assert reading.primary_role == "rl" and reading.verdict is Verdict.DEEP
    others = {r: v for r, v in reading.role_verdicts.items() if r != "rl"}
    assert others and set(others.values()) == {Verdict.SKIM}


# --------------------------------------------------------------------------- the picture


def test_the_picture_draws_mrkdwn_as_slack_does() -> None:
    """tests/bench/digest_picture.py: Slack's escaped text stays escaped once, marks become
    HTML, and text the bot escaped never becomes markup."""
    html = mrkdwn_html(
        "*Kernels &amp; ops* — 2 notes\n:large_green_circle: *精读 deep* · _new_ ~old~\n"
        "> see `ResolvedRevision` in <https://github.com/vllm-project/vllm/pull/1|#1>\n"
        "&lt;script&gt;alert(1)&lt;/script&gt; reasoning_effort=none 2*3*4"
    )
    assert "<b>Kernels &amp; ops</b> — 2 notes<br>" in html
    assert "\U0001f7e2 <b>精读 deep</b> · <i>new</i> <s>old</s>" in html
    assert (
        '<blockquote>see <code>ResolvedRevision</code> in <a href="https://github.com/'
        'vllm-project/vllm/pull/1">#1</a></blockquote>'
    ) in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; reasoning_effort=none 2*3*4" in html
    assert "<script" not in html and "&amp;amp;" not in html

    button = {
        "type": "actions",
        "elements": [
            {
                "type": "button",
                "text": {"type": "plain_text", "text": "Subscribe me to A & B <x>"},
                "style": "primary",
            }
        ],
    }
    assert "Subscribe me to A &amp; B &lt;x&gt;" in block_html(button)
    with pytest.raises(ValueError, match="'video'"):
        block_html({"type": "video"})


def test_the_doctor_example_shows_the_current_schema() -> None:
    """The operators' guide shows `doctor` on a database at the newest migration
    (`SCHEMA_HEAD`, which tests/integration/test_store.py checks against the migrations)."""
    from bot.store.engine import SCHEMA_HEAD

    guide = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"schema at revision (\w+) \(current\)", guide)
    assert shown == [SCHEMA_HEAD], (shown, SCHEMA_HEAD)
