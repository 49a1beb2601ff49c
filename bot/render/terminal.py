"""Rich renderables for the terminal: the digest preview, lookup results and Slack messages
as a person reads them (`post --dry-run`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.emoji import Emoji
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from bot.classify.taxonomy import Taxonomy
from bot.domain import Confidence, Digest, Note, Verdict
from bot.i18n.texts import Language, texts_for
from bot.render.mrkdwn import readable

VERDICT_STYLE = {
    Verdict.DEEP: "bold white on green",
    Verdict.SKIM: "black on yellow",
    Verdict.SKIP: "white on grey39",
}


def badge(verdict: Verdict) -> Text:
    """The verdict in both languages: the terminal is the operators', whatever they read."""
    return Text(f" {texts_for(Language.BOTH).verdict(verdict)} ", style=VERDICT_STYLE[verdict])


def note_text(
    note: Note,
    role: str | None,
    taxonomy: Taxonomy,
    *,
    show_reader: bool = False,
    show_id: bool = False,
) -> Text:
    """One note: its id (`show_id`: what `prdigest fix` takes), badge, title, PR link, its
    role (outside a role's list) and the other roles, who read it (`show_reader`: the
    classifier or a model server), and the for-whom line."""
    verdict = note.verdict_for(role) if role else note.verdict
    text = Text.assemble(badge(verdict), " ", (note.title, "bold"))
    if show_id:
        text = Text.assemble((f"#{note.id}", "cyan"), " ", text)
    if note.verdict_confidence is Confidence.LOW:
        text.append("  (low confidence)", style="dim italic")
    if note.pr_url:
        text.append(f"  PR #{note.pr}", style=f"link {note.pr_url} cyan")
    shown = role or note.primary_role
    if role is None:
        text.append(f"  {shown}", style="magenta")
    others = [r for r in note.roles if r != shown]
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
    """Notes as `prdigest notes` and `lookup` list them, each with its id."""
    return Group(
        *(note_text(n, role, taxonomy, show_reader=show_reader, show_id=True) for n in notes)
    )


# Slack's names for emoji the bot sends that rich knows by another name.
_SLACK_EMOJI = {
    ":large_green_circle:": ":green_circle:",
    ":large_yellow_circle:": ":yellow_circle:",
}
_STYLE = {"bold": "bold", "italic": "italic", "strike": "strike", "code": "cyan", "": ""}


def slack_text(mrkdwn: str) -> Text:
    """mrkdwn as a person reads it in Slack: emphasis as styles, links as `label (url)`,
    mentions as names, entities decoded and emoji codes as emoji."""
    text = Text()
    for piece, style in readable(mrkdwn):
        if style != "code":
            for slack_name, name in _SLACK_EMOJI.items():
                piece = piece.replace(slack_name, name)
            piece = Emoji.replace(piece)
        text.append(piece, style=_STYLE[style])
    return text
