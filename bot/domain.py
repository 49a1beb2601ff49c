"""Plain data shared by every layer: no I/O, no framework imports."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, time

MAX_NOTE_ID = 2**63 - 1  # the largest id SQLite INTEGER and PostgreSQL BIGINT hold


class Verdict(enum.StrEnum):
    """How closely a reader should read a note's PR."""

    DEEP = "deep"
    SKIM = "skim"
    SKIP = "skip"

    @property
    def rank(self) -> int:
        """Sort key: deep reads first."""
        return _VERDICT_RANK[self]


_VERDICT_RANK = {Verdict.DEEP: 0, Verdict.SKIM: 1, Verdict.SKIP: 2}


@dataclass(frozen=True)
class Role:
    """A reader role: who a note is for, and the words that show it."""

    slug: str
    name_zh: str
    name_en: str
    aliases: tuple[str, ...] = ()
    # Evidence: term -> weight. Title hits count more than paragraph hits.
    keywords: dict[str, float] = field(default_factory=dict)
    # Audience phrases ("发布工程", "release engineers") that name this role as a reader.
    audience: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """Both names, as the terminal shows them (Slack shows the reader's language)."""
        return f"{self.name_zh} / {self.name_en}"


@dataclass(frozen=True)
class ParsedNote:
    """One title/paragraph block as read from a note file."""

    repo: str
    title: str
    paragraph: str
    pr: int | None
    pr_url: str | None
    source_file: str
    line: int

    @property
    def source(self) -> str:
        return f"{self.source_file}:{self.line}"


class Confidence(enum.StrEnum):
    """How sure the classifier is of a verdict: low when the note's words say little."""

    HIGH = "high"
    LOW = "low"


@dataclass(frozen=True)
class Classification:
    """What the classifier says of one note."""

    roles: tuple[str, ...]
    primary_role: str
    verdict: Verdict
    role_verdicts: dict[str, Verdict]
    excerpt: str
    verdict_confidence: Confidence = Confidence.HIGH
    # Who read the note: "classifier" (the local one) or "llm:<model>" (a model server).
    read_by: str = "classifier"

    def verdict_for(self, role: str) -> Verdict:
        """The verdict for a reader of `role` (audience-specific when the note says so)."""
        return self.role_verdicts.get(role, self.verdict)


@dataclass(frozen=True)
class NoteFix:
    """An editor's correction of a note's classification; it wins over the classifier.

    `verdict` None keeps the classifier's verdict (and its audience-specific verdicts).
    `revision` counts the fixes of this note, so a posted message knows it is stale.
    """

    note_id: int
    roles: tuple[str, ...]
    primary_role: str
    verdict: Verdict | None
    fixed_by: str
    fixed_at: datetime
    revision: int = 1

    def apply(
        self, classified: Classification, known: Sequence[str] | None = None
    ) -> Classification:
        """The classification with this fix over it; roles no longer in `known` (the
        taxonomy's slugs) are dropped, and a fix left with no known role changes nothing."""
        roles = tuple(r for r in self.roles if known is None or r in known)
        if not roles:
            return classified
        primary = self.primary_role if self.primary_role in roles else roles[0]
        ordered = (primary, *(r for r in roles if r != primary))
        if self.verdict is None:
            return replace(classified, roles=ordered, primary_role=primary)
        return replace(
            classified,
            roles=ordered,
            primary_role=primary,
            verdict=self.verdict,
            role_verdicts={},
            verdict_confidence=Confidence.HIGH,  # an editor decided
        )


@dataclass(frozen=True)
class Note:
    """A stored, classified note."""

    id: int
    repo: str
    title: str
    paragraph: str
    pr: int | None
    pr_url: str | None
    roles: tuple[str, ...]
    primary_role: str
    verdict: Verdict
    role_verdicts: dict[str, Verdict]
    excerpt: str
    source: str
    ingested_at: datetime
    updated_at: datetime
    verdict_confidence: Confidence = Confidence.HIGH
    read_by: str = "classifier"

    def verdict_for(self, role: str) -> Verdict:
        return self.role_verdicts.get(role, self.verdict)

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "repo": self.repo,
            "title": self.title,
            "paragraph": self.paragraph,
            "roles": list(self.roles),
            "primary_role": self.primary_role,
            "verdict": self.verdict.value,
            "role_verdicts": {k: v.value for k, v in self.role_verdicts.items()},
            "verdict_confidence": self.verdict_confidence.value,
            "read_by": self.read_by,
            "pr": self.pr,
            "pr_url": self.pr_url,
            "excerpt": self.excerpt,
            "source": self.source,
            "ingested_at": self.ingested_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }


@dataclass(frozen=True)
class RoleSection:
    """One role's notes in a digest, best reads first."""

    role: Role
    notes: tuple[Note, ...]

    def counts(self) -> dict[Verdict, int]:
        out = dict.fromkeys(Verdict, 0)
        for note in self.notes:
            out[note.verdict_for(self.role.slug)] += 1
        return out


@dataclass(frozen=True)
class Digest:
    """A week's reading list: each note once, in its primary role's section."""

    week: str  # ISO week label, e.g. "2026-W48"
    sections: tuple[RoleSection, ...]
    addition: bool = False  # a follow-up to a digest already posted for this week

    @property
    def notes(self) -> tuple[Note, ...]:
        return tuple(n for s in self.sections for n in s.notes)

    @property
    def is_empty(self) -> bool:
        return not any(s.notes for s in self.sections)

    def top_deep_reads(self, limit: int = 5) -> tuple[Note, ...]:
        """The week's must-reads, spread over roles: the best deep read of each role in
        turn (roles with more deep reads first), then the second of each, and so on."""
        columns = [
            [n for n in s.notes if n.verdict_for(s.role.slug) is Verdict.DEEP]
            for s in self.sections
        ]
        columns.sort(key=len, reverse=True)  # stable: taxonomy order among equals
        picked: list[Note] = []
        for depth in range(max(map(len, columns), default=0)):
            picked.extend(column[depth] for column in columns if depth < len(column))
        return tuple(picked[:limit])


@dataclass(frozen=True)
class RoleSubscription:
    """A reader's subscription to one role, with the least verdict they want from it.

    `level` None: every note; SKIM: deep and skim reads; DEEP: deep reads only.
    """

    role: str
    level: Verdict | None = None

    def accepts(self, note: Note) -> bool:
        if self.role not in note.roles:
            return False
        return self.level is None or note.verdict_for(self.role).rank <= self.level.rank


@dataclass(frozen=True)
class Pause:
    """No DMs from `started_at` until `until` (the moment of `resume` when ended early)."""

    started_at: datetime
    until: datetime

    def active(self, now: datetime) -> bool:
        return self.started_at <= now < self.until


@dataclass(frozen=True)
class ReaderSettings:
    """A reader's own choices for their DMs; None means "the team's default"."""

    budget: int | None = None  # notes shown in full per DM; 0 means all (`budget all`)
    dm_weekday: int | None = None  # 0 is Monday; with `dm_time`, in the reader's time zone
    dm_time: time | None = None
    dm_off: bool = False  # `dm off`: no DMs (watches included); subscriptions stay
    language: str | None = None  # "zh" or "en"; None: Slack's locale decides (`lang auto`)


@dataclass(frozen=True)
class ReaderProfile:
    """What Slack reports of a reader (`users.info`), as cached at `fetched_at`."""

    tz: str | None
    locale: str | None
    fetched_at: datetime


@dataclass(frozen=True)
class Reader:
    """What one Slack user asked to receive: roles (with filters), saved searches, a pause,
    their own settings and, once Slack was asked, their profile."""

    team_id: str
    user_id: str
    roles: tuple[RoleSubscription, ...] = ()
    watches: tuple[str, ...] = ()
    pause: Pause | None = None
    settings: ReaderSettings = ReaderSettings()
    profile: ReaderProfile | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.team_id, self.user_id)


def count_text(total: int, capped: bool = False) -> str:
    """A count as people read it: "1,010", or "1,010+" when counting stopped there."""
    return f"{total:,}+" if capped else f"{total:,}"
