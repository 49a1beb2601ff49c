"""The learned verdict model: its features, its file, how it is blended with the rules."""

from __future__ import annotations

import math

import pytest

from bot.classify import Classifier, build_classifier
from bot.classify.models import (
    BlendModel,
    Reading,
    VerdictModel,
    blend_features,
    blend_verdict,
    load_blend,
    load_verdict_model,
)
from bot.classify.settings import THRESHOLDS
from bot.classify.taxonomy import Taxonomy, load_taxonomy
from bot.classify.text import features, normalise
from bot.classify.train.model_files import model_json
from bot.domain import Classification, Confidence, Verdict
from tests.labelled import VALIDATION_SETS, load_set


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return load_taxonomy()


def test_features_are_words_pairs_and_character_pairs() -> None:
    grams = features("read the tests. 值得精读")
    assert grams[:3] == ["read", "the", "read the"]
    assert "tests" in grams and "the tests" in grams
    assert not any(" " in g and not g.isascii() for g in grams)  # no pair across languages
    assert {"值得", "得精", "精读"} <= set(grams)


def test_punctuation_ends_a_word_pair() -> None:
    grams = features("skim it. then read")
    assert "it then" not in grams
    assert "skim it" in grams


@pytest.mark.parametrize(
    ("text", "marked", "plain"),
    [
        ("not worth a close read", "!worth", "worth"),
        ("don't skip this one", "!skip", "skip"),
        ("不值得精读", "!精读", "精读"),
        ("无需细看", "!细看", "细看"),
    ],
)
def test_a_negator_marks_the_words_it_governs(text: str, marked: str, plain: str) -> None:
    grams = features(text)
    assert marked in grams
    assert plain not in grams


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("不仅要精读", "精读"),  # not only
        ("非常值得一看", "值得"),  # very
        ("skim it, then don't stop: read it all", "skim"),  # before the negator
        ("no. read it all", "read"),  # punctuation ends the scope
    ],
)
def test_words_outside_a_negation_stay_plain(text: str, plain: str) -> None:
    assert plain in features(text)


def _model(weights: dict[str, tuple[float, float, float]]) -> VerdictModel:
    classes = (Verdict.DEEP, Verdict.SKIM, Verdict.SKIP)
    return VerdictModel(classes=classes, intercept=(0.0, 0.0, 0.0), weights=dict(weights))


def _words(n: int, word: str = "filler") -> str:
    return " ".join([word] * n)


def test_proba_follows_the_weights_and_sums_to_one() -> None:
    model = _model({"deep": (0.4, 0.0, 0.0), "skip": (0.0, 0.0, 0.4)})
    p = model.proba(_words(THRESHOLDS.short_features, "deep")).proba
    assert max(p, key=lambda v: p[v]) is Verdict.DEEP
    assert sum(p.values()) == pytest.approx(1.0)
    q = model.proba(_words(THRESHOLDS.short_features, "skip") + " deep").proba
    assert max(q, key=lambda v: q[v]) is Verdict.SKIP
    flat = model.proba(_words(THRESHOLDS.short_features)).proba
    assert flat[Verdict.DEEP] == pytest.approx(1 / 3)


def test_in_a_short_note_a_sure_rule_stands_and_the_blend_is_never_sure() -> None:
    model = _model({"skip": (0.0, 0.0, 9.0), "deep": (9.0, 0.0, 0.0)})
    short_skip = model.proba("skip skip skip")
    assert short_skip.short and not model.proba(_words(THRESHOLDS.short_features)).short
    sure = _rules(Verdict.DEEP, Confidence.HIGH)
    assert blend_verdict(sure, short_skip, _blend_giving(0.01, 0.01, 0.98)) is sure
    unsure = _rules(Verdict.SKIM, Confidence.LOW)
    got = blend_verdict(unsure, short_skip, _blend_giving(0.01, 0.01, 0.98))
    assert (got.verdict, got.verdict_confidence) == (Verdict.SKIP, Confidence.LOW)
    short_deep = model.proba("deep deep deep")
    # never deep, and never a verdict it is not sure enough of
    assert blend_verdict(unsure, short_deep, _blend_giving(0.98, 0.01, 0.01)) is unsure
    assert blend_verdict(unsure, short_skip, _blend_giving(0.1, 0.2, 0.7)) is unsure


def test_model_file_round_trip() -> None:
    model = _model({"a": (1.0, -0.5, 0.25), "读": (0.0, 2.0, -2.0)})
    again = VerdictModel.from_json(model_json(model))
    assert again == model
    with pytest.raises(ValueError, match="format"):
        VerdictModel.from_json('{"format": 99}')


def _rules(verdict: Verdict, confidence: Confidence, **role_verdicts: Verdict) -> Classification:
    return Classification(
        roles=("kernels",),
        primary_role="kernels",
        verdict=verdict,
        role_verdicts=dict(role_verdicts),
        excerpt="",
        verdict_confidence=confidence,
    )


def _proba(deep: float, skim: float, skip: float) -> Reading:
    return Reading({Verdict.DEEP: deep, Verdict.SKIM: skim, Verdict.SKIP: skip})


def _blend_giving(deep: float, skim: float, skip: float) -> BlendModel:
    """A blend that reads nothing and gives these probabilities to every note."""
    intercept = (math.log(deep), math.log(skim), math.log(skip))
    return BlendModel(
        classes=(Verdict.DEEP, Verdict.SKIM, Verdict.SKIP), intercept=intercept, weights={}
    )


def test_blend_keeps_the_rules_when_it_agrees_with_them() -> None:
    sure = _rules(Verdict.SKIP, Confidence.HIGH, hardware=Verdict.DEEP)
    assert blend_verdict(sure, _proba(0.1, 0.2, 0.7), _blend_giving(0.05, 0.1, 0.85)) is sure


def test_blend_overrules_and_drops_audience_verdicts_equal_to_the_new_one() -> None:
    sure = _rules(Verdict.SKIP, Confidence.HIGH, kernels=Verdict.SKIM, hardware=Verdict.DEEP)
    got = blend_verdict(
        sure, _proba(0.05, 0.9, 0.05), _blend_giving(0.05, THRESHOLDS.verdict_sure_min + 0.05, 0.1)
    )
    assert (got.verdict, got.verdict_confidence) == (Verdict.SKIM, Confidence.HIGH)
    assert got.role_verdicts == {"hardware": Verdict.DEEP}  # kernels now equals the verdict


def test_blend_is_low_confidence_below_sure_min() -> None:
    sure = _rules(Verdict.SKIP, Confidence.HIGH)
    got = blend_verdict(sure, _proba(0.1, 0.2, 0.7), _blend_giving(0.1, 0.2, 0.7))
    assert (got.verdict, got.verdict_confidence) == (Verdict.SKIP, Confidence.LOW)


def test_blend_never_gives_deep_on_weak_evidence() -> None:
    sure = _rules(Verdict.DEEP, Confidence.HIGH, hardware=Verdict.SKIM)
    got = blend_verdict(
        sure, _proba(0.45, 0.3, 0.25), _blend_giving(THRESHOLDS.deep_min - 0.05, 0.3, 0.25 + 0.05)
    )
    assert (got.verdict, got.verdict_confidence) == (Verdict.SKIM, Confidence.LOW)
    assert got.role_verdicts == {}  # hardware's skim is now the note's verdict
    middling = blend_verdict(sure, _proba(0.6, 0.3, 0.1), _blend_giving(0.6, 0.3, 0.1))
    assert (middling.verdict, middling.verdict_confidence) == (Verdict.DEEP, Confidence.LOW)


def test_blend_features_name_the_rules_reading_and_the_model_s() -> None:
    row = blend_features(_rules(Verdict.SKIM, Confidence.LOW), _proba(0.2, 0.5, 0.3))
    assert row["rules:skim:low"] == 1.0
    assert row["agree:skim"] == pytest.approx(math.log(0.5))
    assert row["log:deep"] == pytest.approx(math.log(0.2))
    assert "short" not in row
    short = blend_features(
        _rules(Verdict.DEEP, Confidence.HIGH),
        Reading({Verdict.DEEP: 1.0, Verdict.SKIM: 0.0, Verdict.SKIP: 0.0}, short=True),
    )
    assert short["short"] == 1.0 and short["log:skim"] == pytest.approx(math.log(1e-6))


def test_the_shipped_blend_weighs_both_readings() -> None:
    """A sure rule and an agreeing model give a sure verdict; a sure rule against a model
    sure of another verdict yields; on its own, each reading moves the blend its way."""
    shipped = load_blend()
    sure = _rules(Verdict.DEEP, Confidence.HIGH)
    agree = blend_verdict(sure, _proba(0.9, 0.05, 0.05), shipped)
    assert (agree.verdict, agree.verdict_confidence) == (Verdict.DEEP, Confidence.HIGH)
    against = blend_verdict(sure, _proba(0.01, 0.01, 0.98), shipped)
    assert against.verdict is Verdict.SKIP
    flat = _proba(1 / 3, 1 / 3, 1 / 3)
    for verdict in Verdict:
        p = shipped.row_proba(blend_features(_rules(verdict, Confidence.HIGH), flat))
        assert max(p, key=lambda v: p[v]) is verdict


def test_the_blend_beats_the_rules_and_matches_the_model_on_the_validation_sets(
    taxonomy: Taxonomy,
) -> None:
    """Aggregate only: the main verdict of the shipped classifier against each reading alone."""
    classifier = Classifier(taxonomy)
    model = load_verdict_model()
    notes = [n for name in VALIDATION_SETS[:5] for n in load_set(name)]
    shipped = rules = alone = 0
    for n in notes:
        shipped += classifier.classify(n.title, n.paragraph).verdict.value == n.verdict
        rules += classifier.classify_by_rules(n.title, n.paragraph).verdict.value == n.verdict
        p = model.proba(normalise(n.paragraph.strip()).lower()).proba
        alone += max(p, key=lambda v: p[v]).value == n.verdict
    assert shipped >= rules + 0.1 * len(notes), (shipped, rules)
    assert shipped >= alone - 0.01 * len(notes), (shipped, alone)


@pytest.mark.parametrize(
    ("paragraph", "expected"),
    [
        ("Set aside an afternoon for this one and go through every file carefully.", "deep"),
        ("Just glance at the summary; the gist is all you need.", "skim"),
        ("Nobody needs to open this: it only renames a helper.", "skip"),
        ("这个改动建议逐行读，接口设计会影响后面所有后端。", "deep"),
        ("大概翻一下就行，知道有这个开关即可。", "skim"),
        ("纯粹的格式调整，不用看。", "skip"),
    ],
)
def test_the_shipped_classifier_reads_plain_recommendations(
    paragraph: str, expected: str, taxonomy: Taxonomy
) -> None:
    assert build_classifier(taxonomy).classify("调度器改动", paragraph).verdict.value == expected


def test_the_shipped_model_loads_once() -> None:
    assert load_verdict_model() is load_verdict_model()
    assert len(load_verdict_model().weights) > 1000
