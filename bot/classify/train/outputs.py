"""What the classifier decides on the labelled sets, recorded in
tests/fixtures/classifier_outputs.json, so that a change that decides otherwise is seen note
by note before it is accepted, and the tests' quality floors score what was accepted.

The record holds the classifier's version and fingerprint; for each development and
validation set a digest of its notes' text and one line per note (`Decision.line`: roles,
primary role, verdict, confidence, the groups told a verdict of their own, a digest of the
excerpt); and for each held-out set its aggregate scores only.

`diff` prints what differs from the record: each development note decided differently, set
by set (with its labels), each validation set's count and scores, the held-out aggregates
once. `record` writes the record; it refuses while the model files were fitted from other
inputs than the checkout holds (retrain first), and when notes are decided differently under
the recorded CLASSIFIER_VERSION (raise it first: stored notes are re-classified when the
fingerprint changes, and the version is part of it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.classify import CLASSIFIER_VERSION, build_classifier, classifier_fingerprint
from bot.classify.models import load_role_model
from bot.classify.taxonomy import load_taxonomy
from bot.classify.train import inputs
from bot.classify.train.labelled import (
    DEV_SETS,
    FIXTURES,
    RETIRED,
    UNSEEN,
    VALIDATION_SETS,
    Labelled,
    load_set,
)
from bot.classify.train.model_files import COMMAND, read_manifest
from bot.classify.train.scores import SetScore, score, score_readings
from bot.domain import Classification, Confidence, Verdict

OUTPUTS = FIXTURES / "classifier_outputs.json"
HELD_OUT = (*UNSEEN, *RETIRED)
VERSION_AT = "CLASSIFIER_VERSION in bot/classify/pipeline.py"


@dataclass(frozen=True)
class Decision:
    """What the classifier decided for one note, as recorded (the excerpt by its digest)."""

    roles: tuple[str, ...]
    primary_role: str
    verdict: Verdict
    verdict_confidence: Confidence
    role_verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    excerpt: str = ""

    def verdict_for(self, role: str) -> Verdict:
        return self.role_verdicts.get(role, self.verdict)

    @classmethod
    def of(cls, got: Classification) -> Decision:
        digest = hashlib.sha256(got.excerpt.encode("utf-8")).hexdigest()[:8]
        verdicts = dict(sorted(got.role_verdicts.items()))
        return cls(
            got.roles, got.primary_role, got.verdict, got.verdict_confidence, verdicts, digest
        )

    def line(self) -> str:
        """ "kernels,models|kernels|skim|low|serving=skip|1f0c2a9e"."""
        groups = " ".join(f"{r}={v.value}" for r, v in self.role_verdicts.items())
        return "|".join(
            (",".join(self.roles), self.primary_role, self.verdict.value,
             self.verdict_confidence.value, groups, self.excerpt)
        )  # fmt: skip

    @classmethod
    def parse(cls, line: str) -> Decision:
        roles, primary, verdict, confidence, groups, excerpt = line.split("|")
        told = dict(pair.split("=") for pair in groups.split())
        return cls(
            tuple(roles.split(",")),
            primary,
            Verdict(verdict),
            Confidence(confidence),
            {r: Verdict(v) for r, v in told.items()},
            excerpt,
        )

    def changes(self, now: Decision) -> list[str]:
        """What `now` decides otherwise, in words ("verdict skim (low) -> deep (high)")."""
        found: list[str] = []
        if self.roles != now.roles:
            found.append(f"roles {', '.join(self.roles)} -> {', '.join(now.roles)}")
        if self.primary_role != now.primary_role:
            found.append(f"primary role {self.primary_role} -> {now.primary_role}")
        if (self.verdict, self.verdict_confidence) != (now.verdict, now.verdict_confidence):
            found.append(f"verdict {_verdict(self)} -> {_verdict(now)}")
        if self.role_verdicts != now.role_verdicts:
            found.append(f"groups {_groups(self.role_verdicts, now.role_verdicts)}")
        if self.excerpt != now.excerpt:
            found.append("excerpt")
        return found


def _verdict(d: Decision) -> str:
    return f"{d.verdict.value} ({d.verdict_confidence.value})"


def _groups(before: Mapping[str, Verdict], now: Mapping[str, Verdict]) -> str:
    """The groups told a verdict of their own that changed: "+lora skip, kernels skim -> deep"."""
    found: list[str] = []
    for role in sorted(before.keys() | now.keys()):
        was, is_ = before.get(role), now.get(role)
        if was is None and is_ is not None:
            found.append(f"+{role} {is_.value}")
        elif is_ is None and was is not None:
            found.append(f"-{role} {was.value}")
        elif was is not None and is_ is not None and was is not is_:
            found.append(f"{role} {was.value} -> {is_.value}")
    return ", ".join(found)


@dataclass(frozen=True)
class SetOutputs:
    """A labelled set's notes (a digest of their text) and what the classifier decided."""

    notes: str
    decisions: tuple[Decision, ...]


@dataclass(frozen=True)
class Aggregate:
    """A held-out set's scores (the only figures recorded of it)."""

    notes: int
    verdict: float
    main_verdict: float
    named_f1: float

    @classmethod
    def of(cls, result: SetScore) -> Aggregate:
        return cls(
            result.notes,
            round(result.verdict_accuracy, 3),
            round(result.main_verdict_accuracy, 3),
            round(result.named_macro_f1, 3),
        )


@dataclass(frozen=True)
class Outputs:
    """What one classifier decides on every labelled set."""

    version: int
    fingerprint: str
    sets: dict[str, SetOutputs]  # development sets, then validation sets
    held_out: dict[str, Aggregate]


def notes_digest(notes: Iterable[Labelled]) -> str:
    """A digest of what the classifier reads of the notes (their titles and paragraphs)."""
    digest = hashlib.sha256()
    for note in notes:
        digest.update(f"{note.title}\0{note.paragraph}\0".encode())
    return digest.hexdigest()[:16]


def current_outputs(held_out: bool = True) -> Outputs:
    """What the classifier of this checkout decides (about ten seconds); `held_out=False`
    leaves the held-out sets unread (tests never score them)."""
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    sets: dict[str, SetOutputs] = {}
    for name in (*DEV_SETS, *VALIDATION_SETS):
        notes = load_set(name)
        got = (classifier.classify(n.title, n.paragraph) for n in notes)
        sets[name] = SetOutputs(notes_digest(notes), tuple(map(Decision.of, got)))
    aggregates = {
        name: Aggregate.of(score(load_set(name), classifier.classify, taxonomy.slugs))
        for name in (HELD_OUT if held_out else ())
    }
    return Outputs(CLASSIFIER_VERSION, classifier_fingerprint(taxonomy), sets, aggregates)


def outputs_text(outputs: Outputs) -> str:
    """The record's text: one line per note, so that a change of it reads as a diff."""
    body = {
        "classifier": {"version": outputs.version, "fingerprint": outputs.fingerprint},
        "held out": {
            name: {
                "notes": a.notes,
                "verdict": a.verdict,
                "main verdict": a.main_verdict,
                "named-role F1": a.named_f1,
            }
            for name, a in outputs.held_out.items()
        },
        "sets": {
            name: {"notes": s.notes, "decisions": [d.line() for d in s.decisions]}
            for name, s in outputs.sets.items()
        },
    }
    return json.dumps(body, indent=1, ensure_ascii=False) + "\n"


def read_outputs(path: Path = OUTPUTS) -> Outputs | None:
    """The recorded outputs, or None when nothing is recorded at `path`."""
    if not path.exists():
        return None
    body: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    try:
        return Outputs(
            version=int(body["classifier"]["version"]),
            fingerprint=str(body["classifier"]["fingerprint"]),
            sets={
                name: SetOutputs(str(s["notes"]), tuple(map(Decision.parse, s["decisions"])))
                for name, s in body["sets"].items()
            },
            held_out={
                name: Aggregate(a["notes"], a["verdict"], a["main verdict"], a["named-role F1"])
                for name, a in body["held out"].items()
            },
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(
            f"{path} is not a record of outputs ({exc!r}): move it away to record afresh"
        ) from exc


@dataclass(frozen=True)
class Comparison:
    """The recorded outputs against the current ones."""

    recorded: Outputs
    current: Outputs

    def differing(self, name: str) -> list[int]:
        """The notes of set `name` decided differently (none when its notes changed)."""
        before, now = self.recorded.sets.get(name), self.current.sets[name]
        if before is None or before.notes != now.notes:
            return []
        pairs = zip(before.decisions, now.decisions, strict=True)
        return [i for i, (a, b) in enumerate(pairs) if a != b]

    @property
    def renewed(self) -> list[str]:
        """Sets whose notes are not the recorded ones (changed, added or gone)."""
        names = self.recorded.sets.keys() | self.current.sets.keys()
        return [
            name
            for name in (*self.current.sets, *sorted(names - self.current.sets.keys()))
            if name not in self.current.sets
            or name not in self.recorded.sets
            or self.recorded.sets[name].notes != self.current.sets[name].notes
        ]

    @property
    def decided_otherwise(self) -> int:
        return sum(len(self.differing(name)) for name in self.current.sets)

    @property
    def fingerprint_changed(self) -> bool:
        return (self.recorded.version, self.recorded.fingerprint) != (
            self.current.version,
            self.current.fingerprint,
        )

    def summary(self) -> str | None:
        """One line saying what differs from the record and what to do, or None."""
        what: list[str] = []
        if self.fingerprint_changed:
            what.append(
                f"the recorded fingerprint differs (classifier {self.recorded.version} "
                f"{self.recorded.fingerprint[:8]}, now {self.current.version} "
                f"{self.current.fingerprint[:8]})"
            )
        changed = self.decided_otherwise
        if changed:
            notes = sum(len(s.decisions) for s in self.current.sets.values())
            sets = sum(bool(self.differing(name)) for name in self.current.sets)
            what.append(
                f"{changed:,} of {notes:,} notes are decided differently from the record, "
                f"on {sets} sets"
            )
        if self.renewed:
            what.append(f"the notes of {', '.join(self.renewed)} are not the recorded ones")
        if not what:
            return None
        return (
            f"{'; '.join(what)}: run `{COMMAND} diff` to see what changed, then `{COMMAND} record`"
        )


def refusal(comparison: Comparison, stale: Sequence[str]) -> str | None:
    """Why the current outputs may not be recorded yet, or None. `stale`: the inputs the
    shipped model files were fitted from that differ now (`stale_inputs`)."""
    if stale:
        return (
            f"the model files were fitted from other {', '.join(stale)} than this checkout "
            f"holds: retrain with `{COMMAND}`, look at `{COMMAND} diff`, then record"
        )
    before, now = comparison.recorded.version, comparison.current.version
    if now < before:
        return f"{VERSION_AT} went back from {before} to {now}"
    changed = comparison.decided_otherwise
    if changed and now == before:
        return (
            f"{changed:,} notes are decided differently from the record (`{COMMAND} diff` "
            f"lists them) under the recorded version: raise {VERSION_AT} (now {now}), "
            f"then record"
        )
    return None


def stale_inputs() -> list[str]:
    """What the shipped model files were fitted from that differs from this checkout's."""
    recorded: dict[str, str] = read_manifest().get("fitted from", {})
    now = inputs.fitted_from(load_role_model())
    return [part for part in now if recorded.get(part) != now[part]]


# ------------------------------------------------------------------------------ commands


def record(path: Path = OUTPUTS) -> int:
    """`python -m bot.classify.train record`: write the current outputs, unless `refusal`."""
    try:
        recorded = read_outputs(path)
    except ValueError as exc:
        print(f"not recorded: {exc}")
        return 1
    current = current_outputs()
    if recorded is not None:
        why = refusal(Comparison(recorded, current), stale_inputs())
        if why is not None:
            print(f"not recorded: {why}")
            return 1
    text = outputs_text(current)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        print(f"{path.name}: unchanged (classifier {current.version}, {current.fingerprint})")
        return 0
    path.write_text(text, encoding="utf-8")
    notes = sum(len(s.decisions) for s in current.sets.values())
    print(
        f"recorded classifier {current.version} ({current.fingerprint}): {notes:,} notes of "
        f"{len(current.sets)} sets, aggregates of {len(current.held_out)} held-out sets"
    )
    return 0


def diff(path: Path = OUTPUTS) -> int:
    """`python -m bot.classify.train diff`: print what differs from the record."""
    try:
        recorded = read_outputs(path)
    except ValueError as exc:
        print(exc)
        return 1
    if recorded is None:
        print(f"nothing recorded at {path}: run `{COMMAND} record`")
        return 1
    current = current_outputs()
    labels = {name: load_set(name) for name in current.sets}
    slugs = load_taxonomy(None).slugs
    for line in diff_lines(Comparison(recorded, current), labels, slugs, stale_inputs()):
        print(line)
    return 0


def diff_lines(
    comparison: Comparison,
    labels: Mapping[str, Sequence[Labelled]],
    slugs: tuple[str, ...],
    stale: Sequence[str] = (),
    sets: tuple[Sequence[str], Sequence[str]] = (DEV_SETS, VALIDATION_SETS),
) -> list[str]:
    """The report `diff` prints: the development sets' notes one by one, set by set; the
    validation sets in aggregate; the held-out aggregates once, at the end."""
    recorded, current = comparison.recorded, comparison.current
    out = [
        f"recorded: classifier {recorded.version} ({recorded.fingerprint}); "
        f"now: classifier {current.version} ({current.fingerprint})"
    ]
    if stale:
        out.append(
            f"the model files were fitted from other {', '.join(stale)}: retrain with "
            f"`{COMMAND}` before recording (below: today's rules with the shipped models)"
        )
    for kind, names in zip(("development", "validation"), sets, strict=True):
        out.append("")
        out.append(
            f"{kind} sets" + (", note by note:" if kind == "development" else " (aggregate only):")
        )
        changed = total = 0
        for name in names:
            notes, now = labels[name], current.sets[name]
            total += len(notes)
            if name in comparison.renewed:
                after = score_readings(notes, now.decisions, slugs)
                out.append(
                    f"{name}: not the recorded notes ({len(notes)} now): verdict accuracy "
                    f"now {after.verdict_accuracy:.3f}"
                )
                continue
            differing = comparison.differing(name)
            if not differing:
                continue
            changed += len(differing)
            before = score_readings(notes, recorded.sets[name].decisions, slugs)
            after = score_readings(notes, now.decisions, slugs)
            out.append(
                f"{name}: {len(differing)} of {len(notes)} decided differently; "
                f"verdict accuracy {before.verdict_accuracy:.3f} -> "
                f"{after.verdict_accuracy:.3f}, named-role F1 {before.named_macro_f1:.3f} -> "
                f"{after.named_macro_f1:.3f}, all-role F1 {before.all_macro_f1:.3f} -> "
                f"{after.all_macro_f1:.3f}"
            )
            if kind == "development":
                for i in differing:
                    out += _note_lines(
                        i, notes[i], recorded.sets[name].decisions[i], now.decisions[i]
                    )
        out.append(f"all {kind} sets: {changed:,} of {total:,} notes decided differently")
    out.append("")
    out.append("held-out sets, in aggregate (recorded -> now; never a floor, never read):")
    out.append("| set | notes | verdict | main verdict | named-role F1 |")
    out.append("|---|---|---|---|---|")
    for name, now_agg in current.held_out.items():
        was = recorded.held_out.get(name, now_agg)
        out.append(
            f"| {name} | {now_agg.notes} | {_moved(was.verdict, now_agg.verdict)} | "
            f"{_moved(was.main_verdict, now_agg.main_verdict)} | "
            f"{_moved(was.named_f1, now_agg.named_f1)} |"
        )
    out.append("")
    out.append(_next_step(comparison, stale))
    return out


def _note_lines(i: int, label: Labelled, before: Decision, now: Decision) -> list[str]:
    title = label.title if len(label.title) <= 70 else label.title[:69] + "…"
    told = [f"{r} {v}" for r, v in sorted(label.role_verdicts.items())]
    if label.others_verdict:
        told.append(f"everyone else {label.others_verdict}")
    gold = f"{', '.join(sorted(label.roles))}: {label.verdict}" if label.roles else label.verdict
    return [
        f"  #{i} {title!r} (labelled {'; '.join([gold, *told])})",
        *(f"      {change}" for change in before.changes(now)),
    ]


def _moved(before: float, now: float) -> str:
    return f"{now:.3f}" if before == now else f"{before:.3f} -> {now:.3f}"


def _next_step(comparison: Comparison, stale: Sequence[str]) -> str:
    if comparison.summary() is None:
        return "nothing differs from the record"
    why = refusal(comparison, stale)
    if why is not None:
        return f"next: {why}"
    return f"next: if these are the changes you want, `{COMMAND} record`"
