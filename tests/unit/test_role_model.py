"""The learned role model: its features, its file, how it is blended with the rules."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from bot.classify import build_classifier
from bot.classify.models import (
    ROLE_MODEL_PATH,
    TITLE_MARK,
    RoleModel,
    blend_roles,
    column_sums,
    load_role_model,
    load_verdict_model,
)
from bot.classify.settings import THRESHOLDS
from bot.classify.taxonomy import load_taxonomy
from bot.classify.text import features, normalise, read_clauses
from bot.classify.train.model_files import agreement, model_json
from bot.classify.train.roles import labelled_roles, note_features, predictions
from bot.domain import Classification, Confidence, Verdict
from tests.labelled import development_notes, load_set

ROLES = ("kernels", "models", "hardware")


def test_title_features_are_marked_and_count_more() -> None:
    grams = note_features("fused moe kernel", features("adds a kernel"))
    assert grams.count("kernel") == 1  # the paragraph's own word
    assert grams.count(TITLE_MARK + "kernel") == THRESHOLDS.title_repeat
    assert TITLE_MARK + "moe kernel" in grams
    assert TITLE_MARK + "adds" not in grams


def test_the_classifiers_joint_weight_sums_give_each_model_the_same_figures() -> None:
    """One look-up per feature for both models, the paragraph's sums going on from clause to
    clause: the same additions in the same order, so exactly the same probabilities."""
    classifier = build_classifier(load_taxonomy(None))
    role_model, verdict_model = load_role_model(), load_verdict_model()
    for note in load_set("dev42")[:40]:
        title, text = normalise(note.title).lower(), normalise(note.paragraph.strip()).lower()
        _, clause_grams, pieces = read_clauses(text)
        grams, totals, sums = classifier.weigh(clause_grams, pieces)
        assert grams == features(text)
        assert role_model.proba_of(title, grams, None, sums) == role_model.proba(title, text)
        assert verdict_model.proba_of(grams, None, complex(*sums[-2:])) == verdict_model.proba(text)
        width = len(role_model.roles)
        rows = (list(filter(None, map(role_model.weights.get, g))) for g in clause_grams)
        assert totals == [column_sums(r, width) for r in rows]


def _model(weights: dict[str, tuple[float, float, float]], bias: float = 0.0) -> RoleModel:
    return RoleModel(roles=ROLES, intercept=(bias, bias, bias), weights=dict(weights))


def test_proba_follows_the_weights() -> None:
    model = _model({"kernel": (3.0, 0.0, -3.0), TITLE_MARK + "gpu": (0.0, 0.0, 2.0)})
    proba = model.proba("", "kernel")
    assert proba["kernels"] == pytest.approx(1 / (1 + math.exp(-3.0)))
    assert proba["models"] == pytest.approx(0.5)
    assert proba["hardware"] == pytest.approx(1 / (1 + math.exp(3.0)))
    # the title's word weighs in through its own marked feature only
    assert model.proba("gpu", "plain words")["hardware"] > 0.5
    assert model.proba("", "gpu")["hardware"] == pytest.approx(0.5)


def test_proba_without_known_features_is_the_intercept() -> None:
    model = _model({"kernel": (3.0, 0.0, -3.0)}, bias=-2.0)
    proba = model.proba("", "nothing known here")
    assert all(p == pytest.approx(1 / (1 + math.exp(2.0))) for p in proba.values())


def test_counts_are_normalised() -> None:
    model = _model({"kernel": (1.0, 0.0, 0.0)})
    once = model.proba("", "kernel")["kernels"]
    assert model.proba("", "kernel. kernel. kernel.")["kernels"] == pytest.approx(once)
    assert model.proba("", "kernel other")["kernels"] < once


def test_proba_is_the_regression_over_the_note_features() -> None:
    """The title's features are scored apart from the paragraph's, exactly as if the
    marked `note_features` of the note were scored."""
    model = load_role_model()
    title = "fused moe kernel: fix fp8 scales"
    paragraph = "不必精读. fixes the fp8 moe kernel scales"
    grams = note_features(title, features(paragraph))
    counts = [grams.count(g) for g in set(grams)]
    norm = math.sqrt(sum(c * c for c in counts))
    rows = [model.weights[g] for g in grams if g in model.weights]
    assert any(g.startswith(TITLE_MARK) for g in grams if g in model.weights)
    expected = {
        role: 1.0 / (1.0 + math.exp(-(b + sum(row[i] for row in rows) / norm)))
        for i, (role, b) in enumerate(zip(model.roles, model.intercept, strict=True))
    }
    assert model.proba(title, paragraph) == expected


def test_model_file_round_trip() -> None:
    model = _model({"a": (1.0, -0.5, 0.0), "读": (0.0, 2.0, -2.0)}, bias=-1.5)
    text = model_json(model)
    assert '"a":[1,-0.5,0]' in text  # whole weights are written short
    assert RoleModel.from_json(text) == model
    with pytest.raises(ValueError, match="format"):
        RoleModel.from_json('{"format": 99}')
    broken = text.replace("[1,-0.5,0]", "[1,-0.5]")
    with pytest.raises(ValueError, match="one weight per role"):
        RoleModel.from_json(broken)


def _rules(
    roles: tuple[str, ...], verdict: Verdict = Verdict.SKIM, **role_verdicts: Verdict
) -> Classification:
    return Classification(
        roles=roles,
        primary_role=roles[0],
        verdict=verdict,
        role_verdicts=dict(role_verdicts),
        excerpt="",
        verdict_confidence=Confidence.HIGH,
    )


def _proba(**given: float) -> dict[str, float]:
    return {role: given.get(role, 0.0) for role in ROLES}


def test_blend_keeps_the_rules_when_the_model_agrees() -> None:
    rules = _rules(("kernels", "models"))
    assert blend_roles(rules, _proba(kernels=0.9, models=THRESHOLDS.role_keep_min)) is rules


def test_blend_drops_a_role_the_model_finds_unlikely_and_keeps_the_rules_order() -> None:
    got = blend_roles(_rules(("kernels", "models", "hardware")), _proba(models=0.9, hardware=0.5))
    assert got.roles == ("models", "hardware")
    assert got.primary_role == "models"


def test_blend_adds_a_role_the_model_is_fairly_sure_of() -> None:
    got = blend_roles(
        _rules(("kernels",)),
        _proba(
            kernels=0.9, hardware=THRESHOLDS.role_add_min, models=THRESHOLDS.role_add_min - 0.01
        ),
    )
    assert got.roles == ("kernels", "hardware")
    assert got.primary_role == "kernels"


def test_a_role_with_its_own_reading_verdict_stays() -> None:
    rules = _rules(("kernels", "models"), Verdict.SKIP, kernels=Verdict.DEEP)
    got = blend_roles(rules, _proba(models=0.9))
    assert got.roles == ("kernels", "models")


def test_a_role_told_to_skip_is_not_added() -> None:
    rules = _rules(("kernels",), Verdict.DEEP, hardware=Verdict.SKIP)
    got = blend_roles(rules, _proba(kernels=0.9, hardware=0.95, models=0.9))
    assert got.roles == ("kernels", "models")


def test_blend_never_leaves_a_note_without_a_role() -> None:
    rules = _rules(("models", "hardware"), Verdict.DEEP, kernels=Verdict.SKIP)
    got = blend_roles(rules, _proba(models=0.01, hardware=0.1, kernels=0.9))
    assert got.roles == ("hardware",)  # the rules' role the model finds likeliest
    assert got.primary_role == "hardware"


def test_a_model_sure_of_no_role_drops_none() -> None:
    rules = _rules(("models", "hardware"))
    unsure = _proba(models=0.01, hardware=0.3, kernels=THRESHOLDS.role_add_min - 0.01)
    assert blend_roles(rules, unsure) is rules
    sure = _proba(models=0.01, hardware=0.3, kernels=THRESHOLDS.role_add_min)
    assert blend_roles(rules, sure).roles == ("hardware", "kernels")


def test_roles_the_model_does_not_know_are_left_to_the_rules() -> None:
    rules = _rules(("team-role", "kernels"))
    assert blend_roles(rules, _proba(kernels=0.9)) is rules


def test_a_team_taxonomy_gets_no_role_it_does_not_define(tmp_path: Path) -> None:
    team = tmp_path / "roles.toml"
    team.write_text(
        'mode = "replace"\n[[roles]]\nslug = "ops"\nname_zh = "运维"\nname_en = "Ops"\n'
        '[roles.keywords]\n"deploy" = 3\n',
        encoding="utf-8",
    )
    taxonomy = load_taxonomy(team)
    got = build_classifier(taxonomy).classify(
        "Fused MoE kernel for FP8 weights", "A new Triton kernel for the fused MoE layer."
    )
    assert set(got.roles) <= {"ops"}


def test_the_classifier_blends_the_rules_with_the_shipped_model() -> None:
    classifier = build_classifier(load_taxonomy())
    model = load_role_model()
    title, paragraph = "Fix the Dockerfile for CUDA 12.4", "The image build pins the wheel."
    rules = classifier.classify_by_rules(title, paragraph)
    proba = model.proba(title.lower(), paragraph.lower())
    assert classifier.classify(title, paragraph).roles == blend_roles(rules, proba).roles
    assert proba["release-infra"] > THRESHOLDS.role_add_min


def test_the_shipped_model_loads_once_and_stays_small() -> None:
    assert load_role_model() is load_role_model()
    # every role with labelled notes; a role without any is left to the rules
    assert load_role_model().roles == labelled_roles(development_notes(), load_taxonomy().slugs)
    assert len(load_role_model().weights) > 1000
    assert ROLE_MODEL_PATH.stat().st_size < 1_500_000


def test_a_model_that_predicts_otherwise_is_told_apart() -> None:
    """--check counts the decisions on which two models differ: a round trip through the
    file predicts the same, a shifted intercept flips decisions."""
    notes = load_set("dev3")
    model = load_role_model()
    same = agreement(
        predictions(model, notes), predictions(model.from_json(model_json(model)), notes)
    )
    assert same.flipped == 0 and same.mean_shift == 0.0
    shifted = replace(model, intercept=tuple(b + 4.0 for b in model.intercept))
    moved = agreement(predictions(model, notes), predictions(shifted, notes))
    assert moved.flipped > 0


def test_blend_gives_a_note_no_role_is_likely_for_the_commonest_reader() -> None:
    """No rule role: the model's closest, unless it would keep none (every role below
    role_keep_min); then the role of the highest base rate."""
    no_role = replace(_rules(("kernels",)), roles=(), primary_role="")
    base = _proba(hardware=0.07, kernels=0.02)
    weak = _proba(models=THRESHOLDS.role_keep_min / 2, hardware=THRESHOLDS.role_keep_min / 3)
    assert blend_roles(no_role, weak, base_rates=base).roles == ("hardware",)
    assert blend_roles(no_role, weak).roles == ("models",)
    likely = _proba(models=THRESHOLDS.role_keep_min, hardware=0.1)
    assert blend_roles(no_role, likely, base_rates=base).roles == ("models",)
