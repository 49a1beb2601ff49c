"""The learned verdict model: its features, its file, how it is blended with the rules."""

from __future__ import annotations

import pytest

from bot.classify import build_classifier
from bot.domain import Classification, Confidence, Verdict
from bot.taxonomy import Taxonomy, load_taxonomy
from bot.verdict_model import (
    CONTRADICT_MIN,
    DEEP_MIN,
    OVERRIDE_MIN,
    SHORT_FEATURES,
    SURE_MIN,
    Reading,
    VerdictModel,
    blend,
    features,
    load_model,
)
from tests.train_verdict_model import main as train_main


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
    p = model.proba(_words(SHORT_FEATURES, "deep")).proba
    assert max(p, key=lambda v: p[v]) is Verdict.DEEP
    assert sum(p.values()) == pytest.approx(1.0)
    q = model.proba(_words(SHORT_FEATURES, "skip") + " deep").proba
    assert max(q, key=lambda v: q[v]) is Verdict.SKIP
    flat = model.proba(_words(SHORT_FEATURES)).proba
    assert flat[Verdict.DEEP] == pytest.approx(1 / 3)


def test_in_a_short_note_a_sure_rule_stands_and_the_model_is_never_sure() -> None:
    model = _model({"skip": (0.0, 0.0, 9.0), "deep": (9.0, 0.0, 0.0)})
    short_skip = model.proba("skip skip skip")
    assert short_skip.short and not model.proba(_words(SHORT_FEATURES)).short
    sure = _rules(Verdict.DEEP, Confidence.HIGH)
    assert blend(sure, short_skip) is sure
    unsure = _rules(Verdict.SKIM, Confidence.LOW)
    got = blend(unsure, short_skip)
    assert (got.verdict, got.verdict_confidence) == (Verdict.SKIP, Confidence.LOW)
    assert blend(unsure, model.proba("deep deep deep")) is unsure  # never deep from a line


def test_model_file_round_trip() -> None:
    model = _model({"a": (1.0, -0.5, 0.25), "读": (0.0, 2.0, -2.0)})
    again = VerdictModel.from_json(model.to_json())
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


def test_blend_keeps_a_sure_rule_the_model_does_not_contradict_firmly() -> None:
    sure = _rules(Verdict.SKIP, Confidence.HIGH)
    assert blend(sure, _proba(0.1, 0.2, 0.7)) is sure
    weak_doubt = CONTRADICT_MIN - 0.05
    assert blend(sure, _proba(weak_doubt, 1 - weak_doubt - 0.01, 0.01)) is sure


def test_blend_turns_contradictory_evidence_into_a_cautious_skim() -> None:
    sure = _rules(Verdict.DEEP, Confidence.HIGH, hardware=Verdict.SKIM)
    between = (CONTRADICT_MIN + OVERRIDE_MIN) / 2
    got = blend(sure, _proba(0.02, 0.98 - between, between))
    assert (got.verdict, got.verdict_confidence) == (Verdict.SKIM, Confidence.LOW)
    assert got.role_verdicts == {}  # hardware's skim is now the note's verdict


def test_blend_lets_a_confident_model_overrule_and_drops_equal_audience_verdicts() -> None:
    sure = _rules(Verdict.SKIP, Confidence.HIGH, kernels=Verdict.SKIM, hardware=Verdict.DEEP)
    got = blend(sure, _proba(0.05, SURE_MIN + 0.05, 0.1))
    assert got.verdict is Verdict.SKIM
    assert got.role_verdicts == {"hardware": Verdict.DEEP}  # kernels now equals the verdict
    assert got.verdict_confidence is Confidence.HIGH


def test_blend_decides_where_the_rules_are_unsure_but_never_deep_on_weak_evidence() -> None:
    unsure = _rules(Verdict.SKIM, Confidence.LOW)
    weak_deep = blend(unsure, _proba(DEEP_MIN - 0.05, 0.3, 0.25 + 0.05))
    assert weak_deep.verdict is Verdict.SKIM
    assert weak_deep.verdict_confidence is Confidence.LOW
    middling_deep = blend(unsure, _proba(0.7, 0.2, 0.1))
    assert middling_deep.verdict is Verdict.DEEP
    assert middling_deep.verdict_confidence is Confidence.LOW
    sure_skip = blend(unsure, _proba(0.02, 0.08, 0.9))
    assert (sure_skip.verdict, sure_skip.verdict_confidence) == (Verdict.SKIP, Confidence.HIGH)


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
    assert load_model() is load_model()
    assert len(load_model().weights) > 1000


def test_the_shipped_model_is_what_the_training_script_makes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The model file matches the labelled sets: retrain after changing them."""
    assert train_main(["--check"]) == 0, capsys.readouterr().err
