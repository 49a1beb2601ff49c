"""The recorded outputs (tests/fixtures/classifier_outputs.json): what the classifier decides on
every development and validation note, under which version and fingerprint.

Stored notes are re-classified only when the fingerprint (CLASSIFIER_VERSION, the roles,
the model files) changes, so a change that decides any note otherwise must be recorded, with
a new version: `python -m bot.classify.train diff` shows it, `record` writes it. The quality
floors of test_classify.py score the record, so this test is the one that fails first.
"""

from __future__ import annotations

from pathlib import Path

from bot.classify.train.outputs import (
    Aggregate,
    Comparison,
    Decision,
    Outputs,
    SetOutputs,
    current_outputs,
    diff_lines,
    outputs_text,
    read_outputs,
    refusal,
)
from bot.domain import Classification, Confidence, Verdict
from tests.labelled import DEV_SETS, VALIDATION_SETS, Labelled
from tests.support.notefiles import ROLE_SLUGS


def test_the_classifier_decides_what_was_recorded() -> None:
    recorded = read_outputs()
    assert recorded is not None, "nothing recorded: python -m bot.classify.train record"
    current = current_outputs(held_out=False)
    assert list(current.sets) == [*DEV_SETS, *VALIDATION_SETS]
    problem = Comparison(recorded, current).summary()
    assert problem is None, problem


# ------------------------------------------------------------------ the record, on small sets

KERNELS = Decision(("kernels",), "kernels", Verdict.DEEP, Confidence.HIGH, {}, "0a1b2c3d")
SPLIT = Decision(
    ("kernels", "moe-quant"),
    "kernels",
    Verdict.SKIM,
    Confidence.LOW,
    {"moe-quant": Verdict.SKIP},
    "4e5f6a7b",
)


def _label(title: str, verdict: str = "deep") -> Labelled:
    return Labelled(title, "...", frozenset({"kernels"}), frozenset(), verdict)


def _outputs(
    version: int = 2,
    fingerprint: str = "f" * 32,
    dev: tuple[Decision, ...] = (KERNELS, SPLIT),
    val: tuple[Decision, ...] = (KERNELS,),
    notes: str = "n1",
) -> Outputs:
    return Outputs(
        version,
        fingerprint,
        {"dev": SetOutputs(notes, dev), "val1": SetOutputs("n2", val)},
        {"unseen_v6": Aggregate(75, 0.9, 0.95, 0.91)},
    )


def test_a_changed_decision_is_told_in_words() -> None:
    told = Decision(("kernels",), "kernels", Verdict.DEEP, Confidence.HIGH, {"lora": Verdict.SKIP})
    assert SPLIT.changes(told) == [
        "roles kernels, moe-quant -> kernels",
        "verdict skim (low) -> deep (high)",
        "groups +lora skip, -moe-quant skip",
        "excerpt",
    ]
    assert SPLIT.changes(SPLIT) == []


def test_a_decision_is_one_line_and_reads_back() -> None:
    assert SPLIT.line() == "kernels,moe-quant|kernels|skim|low|moe-quant=skip|4e5f6a7b"
    assert Decision.parse(SPLIT.line()) == SPLIT
    assert Decision.parse(KERNELS.line()) == KERNELS
    got = Classification(
        roles=("kernels",),
        primary_role="kernels",
        verdict=Verdict.SKIM,
        role_verdicts={"models": Verdict.SKIP},
        excerpt="Worth a skim.",
        verdict_confidence=Confidence.LOW,
    )
    decision = Decision.of(got)
    assert decision.verdict_for("models") is Verdict.SKIP
    assert decision.verdict_for("kernels") is Verdict.SKIM
    assert Decision.parse(decision.line()) == decision


def test_the_record_reads_back(tmp_path: Path) -> None:
    outputs = _outputs()
    text = outputs_text(outputs)
    assert text.count("\n") > 8, "one line per note, so that a change reads as a diff"
    path = tmp_path / "outputs.json"
    path.write_text(text, encoding="utf-8")
    assert read_outputs(path) == outputs


def test_a_changed_decision_asks_for_diff_then_record() -> None:
    moved = _outputs(dev=(KERNELS, KERNELS))
    summary = Comparison(_outputs(), moved).summary()
    assert summary is not None
    assert "1 of 3 notes are decided differently" in summary
    assert "run `python -m bot.classify.train diff` to see what changed" in summary
    assert summary.endswith("then `python -m bot.classify.train record`")
    assert Comparison(_outputs(), _outputs()).summary() is None


def test_a_new_fingerprint_is_reported_as_such() -> None:
    summary = Comparison(_outputs(), _outputs(fingerprint="e" * 32)).summary()
    assert summary is not None and summary.startswith("the recorded fingerprint differs")
    assert "decided differently" not in summary


def test_record_asks_for_a_new_version_when_notes_are_decided_otherwise() -> None:
    before = _outputs()
    same_version = Comparison(before, _outputs(dev=(KERNELS, KERNELS)))
    why = refusal(same_version, [])
    assert why is not None and "raise CLASSIFIER_VERSION" in why and "now 2" in why
    assert refusal(Comparison(before, _outputs(version=3, dev=(KERNELS, KERNELS))), []) is None
    # another fingerprint with the same decisions (a model file retrained alike) needs none
    assert refusal(Comparison(before, _outputs(fingerprint="e" * 32)), []) is None
    back = refusal(Comparison(before, _outputs(version=1)), [])
    assert back is not None and "went back from 2 to 1" in back


def test_record_asks_for_a_retraining_first() -> None:
    why = refusal(Comparison(_outputs(), _outputs(version=3)), ["rule data", "rules' readings"])
    assert why is not None
    assert "fitted from other rule data, rules' readings" in why
    assert "retrain with `python -m bot.classify.train`" in why


def test_changed_notes_are_not_changed_decisions() -> None:
    """A set whose notes were edited or added is recorded anew, with no new version."""
    comparison = Comparison(_outputs(), _outputs(notes="n9", dev=(KERNELS,)))
    assert comparison.renewed == ["dev"]
    assert comparison.decided_otherwise == 0
    assert refusal(comparison, []) is None
    summary = comparison.summary()
    assert summary is not None and "the notes of dev are not the recorded ones" in summary


def test_diff_lists_development_notes_and_only_aggregates_of_the_others() -> None:
    labels = {
        "dev": [_label("Fused MoE kernel"), _label("Split note", "skim")],
        "val1": [_label("A validation note")],
    }
    recorded = _outputs()
    current = _outputs(
        version=3,
        dev=(KERNELS, KERNELS),
        val=(SPLIT,),
    )
    current.held_out["unseen_v6"] = Aggregate(75, 0.92, 0.95, 0.91)
    lines = diff_lines(
        Comparison(recorded, current), labels, ROLE_SLUGS, sets=(("dev",), ("val1",))
    )
    text = "\n".join(lines)
    assert "dev: 1 of 2 decided differently" in text
    assert "#1 'Split note' (labelled kernels: skim)" in text
    assert "roles kernels, moe-quant -> kernels" in text
    assert "verdict skim (low) -> deep (high)" in text
    assert "groups -moe-quant skip" in text
    assert "val1: 1 of 1 decided differently" in text
    assert "A validation note" not in text  # validation notes are never shown one by one
    held_out = [line for line in lines if line.startswith("| unseen_v6 |")]
    assert held_out == ["| unseen_v6 | 75 | 0.900 -> 0.920 | 0.950 | 0.910 |"]
    assert (
        lines[-1]
        == "next: if these are the changes you want, `python -m bot.classify.train record`"
    )
