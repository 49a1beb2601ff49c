"""Weekly digests from notes: grouping by primary role and week arithmetic (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.classify.taxonomy import Taxonomy
from bot.domain import Digest, Note, RoleSection


def week_label(moment: datetime, zone: ZoneInfo) -> str:
    """ISO week of `moment` in `zone`, e.g. "2026-W48"."""
    year, week, _ = moment.astimezone(zone).isocalendar()
    return f"{year}-W{week:02d}"


def week_bounds(label: str, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """[Monday 00:00, next Monday 00:00) of an ISO week in `zone`, as UTC datetimes."""
    try:
        year_text, week_text = label.upper().split("-W")
        monday = date.fromisocalendar(int(year_text), int(week_text), 1)
        start = datetime(monday.year, monday.month, monday.day, tzinfo=zone)
        end = start + timedelta(days=7)
        end = datetime(end.year, end.month, end.day, tzinfo=zone)
        return start.astimezone(UTC), end.astimezone(UTC)
    except (ValueError, OverflowError):  # OverflowError: a week at the end of the calendar
        raise ValueError(f"not an ISO week such as 2026-W48: {label!r}") from None


def section_role(note: Note, taxonomy: Taxonomy) -> str:
    """The role whose section shows the note: its primary role if the taxonomy has it."""
    known = taxonomy.slugs
    for slug in (note.primary_role, *note.roles):
        if slug in known:
            return slug
    return known[-1]


def build_digest(
    notes: Iterable[Note], taxonomy: Taxonomy, week: str, addition: bool = False
) -> Digest:
    """Each note once, in its primary role's section; deep, then skim, then skip; newest first."""
    grouped: dict[str, list[Note]] = {slug: [] for slug in taxonomy.slugs}
    for note in notes:
        grouped[section_role(note, taxonomy)].append(note)
    sections = []
    for slug, members in grouped.items():
        if not members:
            continue
        members.sort(key=lambda n: (n.verdict_for(slug).rank, -n.ingested_at.timestamp(), -n.id))
        sections.append(RoleSection(role=taxonomy.get(slug), notes=tuple(members)))
    return Digest(week=week, sections=tuple(sections), addition=addition)


def now_utc() -> datetime:
    return datetime.now(UTC)
