"""Corrections and re-classification: editors fix notes, a changed taxonomy re-classifies.

A fix (roles, primary role, verdict) wins over the classifier: it is applied whenever a
note is classified again, on re-ingestion of a revised paragraph and on re-classification.
The store keeps a fingerprint of the taxonomy and the classifier's rules; `serve` and
`post` re-classify every stored note when it changed since the notes were classified.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.classify import build_classifier, classifier_fingerprint
from bot.classify.taxonomy import Taxonomy
from bot.domain import Classification, Note, NoteFix, Verdict
from bot.llm_reader import ModelReader, build_reader
from bot.services import FINGERPRINT_KEY, Services
from bot.store import utcnow

log = logging.getLogger(__name__)

RECLASSIFY_BATCH = 1000


class FixError(ValueError):
    """A fix that cannot be applied (unknown note or role, bad primary role); says why."""


# -- fixes ------------------------------------------------------------------------------


def resolve_fix_roles(
    taxonomy: Taxonomy, roles: Sequence[str], primary: str | None
) -> tuple[tuple[str, ...], str]:
    """Role words (slugs or aliases) to slugs, primary first; FixError names a bad word."""
    slugs, unknown = taxonomy.resolve_all(roles)
    if unknown:
        hints = sorted({r.slug for w in unknown for r in taxonomy.suggest(w)})
        hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
        raise FixError(f"not a role: {', '.join(unknown)}{hint}; `prdigest roles` lists them")
    if not slugs:
        raise FixError("name at least one role")
    if primary is None:
        return tuple(slugs), slugs[0]
    chosen = taxonomy.resolve(primary)
    if chosen is None or chosen.slug not in slugs:
        raise FixError(f"the primary role {primary!r} must be one of the roles: {', '.join(slugs)}")
    return (chosen.slug, *(s for s in slugs if s != chosen.slug)), chosen.slug


def note_and_fix(services: Services, note_id: int) -> tuple[Note, NoteFix | None] | None:
    """A note and its fix (None when it has none); None when there is no such note."""
    found = services.store.get_notes([note_id])
    if not found:
        return None
    return found[0], services.store.get_fix(note_id)


@dataclass(frozen=True)
class FixResult:
    """A stored fix and the note before and after it."""

    fix: NoteFix
    before: Note
    after: Note


def fix_note(
    services: Services,
    note_id: int,
    roles: Sequence[str],
    primary: str | None,
    verdict: Verdict | None,
    fixed_by: str,
    now: datetime | None = None,
) -> FixResult:
    """Store an editor's fix of a note and re-apply it over the classifier's reading.

    Raises FixError for an unknown note or role, or a primary role not among the roles.
    """
    found = services.store.get_notes([note_id])
    if not found:
        raise FixError(
            f"no note with id {note_id}: `prdigest notes` and `prdigest lookup` show each "
            "note's id (as #12)"
        )
    before = found[0]
    slugs, chosen = resolve_fix_roles(services.taxonomy, roles, primary)
    fix = NoteFix(
        note_id=note_id,
        roles=slugs,
        primary_role=chosen,
        verdict=verdict,
        fixed_by=fixed_by,
        fixed_at=now or utcnow(),
    )
    classifier = build_classifier(services.taxonomy)
    fresh = classifier.classify(before.title, before.paragraph)
    reader = build_reader(services.settings, services.store, services.taxonomy, requests=False)
    if reader is not None and reader.wants(fresh):
        # the fix goes over the model's stored reading, as re-classification would put it
        fresh = reader.read([(before.title, before.paragraph, fresh)])[0] or fresh
    stored = services.store.save_fix(
        note_id, fix.apply(fresh, services.taxonomy.slugs), fix, now=fix.fixed_at
    )
    after = services.store.get_notes([note_id])[0]
    log.info("note %s fixed by %s: %s", note_id, fixed_by, ", ".join(slugs))
    return FixResult(stored, before, after)


# -- re-classification -------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One note whose classification a re-classification changes."""

    note: Note
    new: Classification
    fixed: bool

    def describe(self) -> str:
        old = f"{'/'.join(self.note.roles)} {self.note.verdict.value}"
        new = f"{'/'.join(self.new.roles)} {self.new.verdict.value}"
        return f"#{self.note.id} {self.note.title}: {old} → {new}"


def _same(note: Note, new: Classification) -> bool:
    return (
        note.roles == new.roles
        and note.primary_role == new.primary_role
        and note.verdict is new.verdict
        and note.role_verdicts == new.role_verdicts
        and note.excerpt == new.excerpt
        and note.verdict_confidence is new.verdict_confidence
        and note.read_by == new.read_by
    )


def reclassify(
    services: Services,
    *,
    dry_run: bool = False,
    on_change: Callable[[Change], None] | None = None,
    reader: ModelReader | None = None,
) -> list[Change]:
    """Run the classifier over every stored note, keep fixes, store what changed.

    With a `reader`, the notes it wants are read by the model server too (stored
    readings of unchanged notes make no request; a reader without requests only
    applies them). A note already posted stays where it was posted (the ledger keeps its
    thread); only its roles and verdict change. With `dry_run` nothing is stored.
    Records the fingerprint of the taxonomy and rules the notes are now classified with.
    """
    store = services.store
    taxonomy = services.taxonomy
    classifier = build_classifier(taxonomy)
    changes: list[Change] = []
    last = 0
    while batch := store.notes_after(last, RECLASSIFY_BATCH):
        last = batch[-1].id
        fixes = store.fixes_for(n.id for n in batch)
        updates: list[tuple[int, Classification]] = []
        fresh = [classifier.classify(note.title, note.paragraph) for note in batch]
        if reader is not None:
            asked = [i for i, local in enumerate(fresh) if reader.wants(local)]
            got = reader.read([(batch[i].title, batch[i].paragraph, fresh[i]) for i in asked])
            for i, reading in zip(asked, got, strict=True):
                if reading is not None:
                    fresh[i] = reading
        for note, new in zip(batch, fresh, strict=True):
            fix = fixes.get(note.id)
            if fix is not None:
                new = fix.apply(new, taxonomy.slugs)
            if _same(note, new):
                continue
            change = Change(note, new, fix is not None)
            changes.append(change)
            updates.append((note.id, new))
            if on_change is not None:
                on_change(change)
        if not dry_run:
            store.reclassify_batch(updates)
    if not dry_run:
        store.set_meta(FINGERPRINT_KEY, classifier_fingerprint(taxonomy))
    return changes


def reclassify_if_changed(services: Services) -> list[Change] | None:
    """On start: re-classify stored notes when the taxonomy or the rules changed since
    they were classified. Returns the changes, or None when nothing needed doing."""
    current = classifier_fingerprint(services.taxonomy)
    stored = services.store.get_meta(FINGERPRINT_KEY)
    if stored == current:
        return None
    if stored is None and services.store.count_notes() == 0:
        services.store.set_meta(FINGERPRINT_KEY, current)
        return None
    log.info("the roles or the classifier changed: re-classifying the stored notes")
    # Stored readings by the model server stay; posting never waits for new ones.
    reader = build_reader(
        services.settings, services.store, services.taxonomy, services.metrics, requests=False
    )
    changes = reclassify(services, reader=reader)
    log.info("re-classified the stored notes: %d changed", len(changes))
    return changes
