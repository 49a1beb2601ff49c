"""Rich renderables for the terminal: the digest preview and lookup results."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from bot.classify.taxonomy import Taxonomy
from bot.domain import Confidence, Digest, Note, Verdict
from bot.i18n.texts import Language, texts_for

VERDICT_STYLE = {
    Verdict.DEEP: "bold white on green",
    Verdict.SKIM: "black on yellow",
    Verdict.SKIP: "white on grey39",
}


def badge(verdict: Verdict) -> Text:
    """The verdict in both languages: the terminal is the operators', whatever they read."""
    return Text(f" {texts_for(Language.BOTH).verdict(verdict)} ", style=VERDICT_STYLE[verdict])


def note_text(
    note: Note, role: str | None, taxonomy: Taxonomy, *, show_reader: bool = False
) -> Text:
    """One note: badge, title, PR link, other roles, who read it (`show_reader`: the
    classifier or a model server), and the for-whom line."""
    verdict = note.verdict_for(role) if role else note.verdict
    text = Text.assemble(badge(verdict), " ", (note.title, "bold"))
    if note.verdict_confidence is Confidence.LOW:
        text.append("  (low confidence)", style="dim italic")
    if note.pr_url:
        text.append(f"  #{note.pr}", style=f"link {note.pr_url} cyan")
    others = [r for r in note.roles if r != role]
    if others:
        text.append("  also: " + ", ".join(others), style="magenta")
    if show_reader:
        text.append(f"  read by {note.read_by}", style="dim")
    if note.excerpt:
        text.append("\n    " + note.excerpt, style="dim")
    return text


def digest_renderable(digest: Digest, taxonomy: Taxonomy) -> RenderableType:
    title = f"vLLM 精读推荐 · {digest.week}" + (" (补充)" if digest.addition else "")
    if digest.is_empty:
        return Panel(Text("No new notes this week."), title=title)
    counts = Table(title="Notes per role", show_edge=False)
    counts.add_column("role")
    for verdict in Verdict:
        counts.add_column(verdict.value, justify="right")
    counts.add_column("total", justify="right")
    parts: list[RenderableType] = []
    for section in digest.sections:
        tally = section.counts()
        counts.add_row(
            section.role.label, *(str(tally[v]) for v in Verdict), str(len(section.notes))
        )
        lines = [note_text(n, section.role.slug, taxonomy) for n in section.notes]
        parts.append(
            Panel(
                Group(*lines),
                title=f"{section.role.label} ({len(section.notes)})",
                title_align="left",
            )
        )
    top = digest.top_deep_reads()
    header = Text(f"{len(digest.notes)} notes · top deep reads:", style="bold")
    for note in top:
        header.append("\n  • ", style="green")
        header.append(note.title, style="")
    return Group(Panel(Group(header, counts), title=title), *parts)


def lookup_renderable(
    notes: Sequence[Note], role: str | None, taxonomy: Taxonomy, *, show_reader: bool = False
) -> RenderableType:
    return Group(*(note_text(n, role, taxonomy, show_reader=show_reader) for n in notes))
