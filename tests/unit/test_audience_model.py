"""The learned audience model: clauses, weighing, its file, and how it refines verdicts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.classify import Classifier
from bot.classify.models import (
    OTHERS,
    Attention,
    AudienceModel,
    attend,
    load_audience_model,
    load_role_model,
)
from bot.classify.settings import THRESHOLDS
from bot.classify.taxonomy import load_taxonomy
from bot.classify.text import MODEL_CLAUSE_END, features, normalise, read_clauses
from bot.classify.train.audiences import pair_features
from bot.domain import Classification, Confidence, Verdict
from tests.labelled import DEV_SETS, VALIDATION_SETS, load_set, verdict_right

CLASSES = (Verdict.DEEP, Verdict.SKIM, Verdict.SKIP)


def _text(paragraph: str) -> str:
    return normalise(paragraph).lower()


def clauses(text: str) -> list[str]:
    """The clauses of a paragraph, by a plain split (`read_clauses` must find the same)."""
    return [c for c in MODEL_CLAUSE_END.split(text) if c.strip()]


def test_clauses_end_at_punctuation_in_both_languages_and_at_contrast_words() -> None:
    got = clauses(_text("Kernel authors read it all, but the quant folks skim. 其他人：跳过；完"))
    assert [c.strip() for c in got] == [
        "kernel authors read it all",
        "the quant folks skim",
        "其他人",
        "跳过",
        "完",
    ]
    assert [c.strip() for c in clauses(_text("写 kernel 的同学细看，但是做量化的扫一眼"))] == [
        "写 kernel 的同学细看",
        "做量化的扫一眼",
    ]


@pytest.mark.parametrize(
    ("paragraph", "marked"),
    [
        ("KV cache owners read it closely; everyone else can pass.", [False, True]),
        ("KV cache owners read it closely. The rest of us, pass.", [False, True, False]),
        ("做 KV cache 的逐行看，其他人 pass。", [False, True]),
        ("KV cache owners read it closely. The rest of the diff is renames.", [False, False]),
        # "else" needs someone named first
        ("Everyone else has seen this before.", [False]),
        ("其他人都见过了。", [False]),
    ],
)
def test_clauses_that_speak_of_everyone_else(paragraph: str, marked: list[bool]) -> None:
    attention = attend(_text(paragraph), load_role_model())
    assert [p.get(OTHERS, 0.0) == 1.0 for p in attention.roles] == marked


@pytest.mark.parametrize(
    "paragraph",
    [
        "Safe to pass on. Even ROCm build maintainers need only the summary.",
        "不用看。就连维护 ROCm 构建的同学也只需知道多了一个变量。",
    ],
)
def test_a_clause_opening_with_even_names_no_group(paragraph: str) -> None:
    """ "Even the closest readers" stands for everyone: that clause gives no role a share."""
    attention = attend(_text(paragraph), load_role_model())
    even = [
        p
        for c, p in zip(clauses(_text(paragraph)), attention.roles, strict=True)
        if c.strip().startswith(("even", "就连"))
    ]
    assert even and all(v == 0.0 for v in even[0].values())
    assert attention.most("release-infra") < THRESHOLDS.candidate_min


def test_a_role_weighs_most_the_clause_that_speaks_of_it() -> None:
    attention = attend(
        _text("写 cuda kernel 的同学逐行看 tiling 代码。做量化的同学扫一眼精度表就够了。"),
        load_role_model(),
    )
    quant = pair_features(attention, "moe-quant")
    kernels = pair_features(attention, "kernels")
    assert quant.get("a:量化", 0.0) > quant.get("a:tiling", 0.0)
    assert kernels.get("a:tiling", 0.0) > kernels.get("a:量化", 0.0)
    # the neighbours of a clause count too, marked apart
    assert any(k.startswith(("n:", "p:")) for k in quant)


def test_the_fast_reader_gives_the_same_probabilities_as_the_features() -> None:
    model = load_audience_model()
    role_model = load_role_model()
    checked = 0
    for label in load_set("dev42")[:25]:
        attention = attend(_text(label.paragraph), role_model)
        read = model.reader(attention)
        for role in role_model.roles:
            slow = model.row_proba(pair_features(attention, role))
            fast = read(role)
            assert all(abs(slow[v] - fast[v]) < 1e-9 for v in CLASSES), (role, slow, fast)
            checked += 1
    assert checked == 25 * len(role_model.roles)


# ------------------------------------------------------------------- refine, by hand


def _model(weights: dict[str, tuple[float, float, float]]) -> AudienceModel:
    return AudienceModel(classes=CLASSES, intercept=(0.0, 0.0, 0.0), weights=dict(weights))


def _attention(*clause_roles: tuple[list[str], dict[str, float]]) -> Attention:
    grams = tuple(g for g, _ in clause_roles)
    return Attention(grams, tuple(1.0 for _ in grams), tuple(r for _, r in clause_roles))


def _got(roles: tuple[str, ...], told: dict[str, Verdict] | None = None) -> Classification:
    return Classification(
        roles=roles,
        primary_role=roles[0],
        verdict=Verdict.DEEP,
        role_verdicts=told or {},
        excerpt="",
        verdict_confidence=Confidence.HIGH,
    )


# "glance" in a clause means skim for the role that clause speaks of
GLANCE = _model({"a:glance": (0.0, 8.0, 0.0), "a:study": (8.0, 0.0, 0.0)})
SPLIT = _attention(
    (["study"], {"kernels": 0.95, "moe-quant": 0.05, "hardware": 0.01}),
    (["glance"], {"kernels": 0.05, "moe-quant": 0.9, "hardware": THRESHOLDS.candidate_min + 0.1}),
)


def test_a_group_the_rules_told_nothing_gets_its_own_verdict() -> None:
    got = GLANCE.refine(_got(("kernels", "moe-quant")), SPLIT, ("kernels", "moe-quant"))
    assert got.verdict is Verdict.DEEP
    assert got.role_verdicts == {"moe-quant": Verdict.SKIM}


def test_the_primary_role_and_what_the_rules_told_are_left_alone() -> None:
    primary = GLANCE.refine(_got(("moe-quant", "kernels")), SPLIT, ("moe-quant",))
    assert primary.role_verdicts == {}
    told = {"moe-quant": Verdict.SKIP}
    kept = GLANCE.refine(_got(("kernels", "moe-quant"), told), SPLIT, ("moe-quant",))
    assert kept.role_verdicts == told


def test_a_role_outside_the_note_needs_a_clause_that_speaks_of_it() -> None:
    roles = ("kernels", "moe-quant", "hardware")
    got = GLANCE.refine(_got(("kernels",)), SPLIT, roles)
    assert got.role_verdicts == {"moe-quant": Verdict.SKIM, "hardware": Verdict.SKIM}
    faint = _attention(
        (["study"], {"kernels": 0.95, "hardware": 0.01}),
        (["glance"], {"kernels": 0.05, "hardware": THRESHOLDS.candidate_min - 0.1}),
    )
    assert GLANCE.refine(_got(("kernels",)), faint, roles).role_verdicts == {}


def test_an_unsure_model_changes_nothing() -> None:
    weak = _model({"a:glance": (0.0, 0.5, 0.0)})  # e^0.5 / (2 + e^0.5) is about 0.45
    probability = weak.row_proba({"a:glance": 1.0})[Verdict.SKIM]
    assert probability < THRESHOLDS.audience_sure_min
    got = weak.refine(_got(("kernels", "moe-quant")), SPLIT, ("moe-quant",))
    assert got.role_verdicts == {}


# ------------------------------------------------------------------- the shipped model


def test_the_audience_model_lifts_split_verdicts_on_the_validation_sets() -> None:
    """Aggregate only: validation notes are never trained on (the audience model's
    thresholds were chosen on val1-val5, so this is no clean figure)."""
    taxonomy = load_taxonomy()
    shipped = Classifier(taxonomy)
    rules_only = Classifier(taxonomy, audience_model=False)
    notes = [n for name in VALIDATION_SETS for n in load_set(name) if n.role_verdicts]
    with_model = sum(
        verdict_right(n, shipped.classify(n.title, n.paragraph), taxonomy.slugs) for n in notes
    )
    without = sum(
        verdict_right(n, rules_only.classify(n.title, n.paragraph), taxonomy.slugs) for n in notes
    )
    assert len(notes) > 200
    assert with_model >= without + 0.04 * len(notes), (with_model, without, len(notes))


def test_everyone_else_read_by_the_model() -> None:
    """A chat idiom for everyone else that the rules do not take as a verdict: the model
    gives everyone else their own; without it they keep the main verdict."""
    taxonomy = load_taxonomy()
    title, paragraph = "重写前缀缓存的块分配器", "做 KV cache 的要一行行对着看，其他人 pass。"
    got = Classifier(taxonomy).classify(title, paragraph)
    rules_only = Classifier(taxonomy, audience_model=False).classify(title, paragraph)
    assert rules_only.verdict_for("models") is rules_only.verdict
    assert got.verdict_for("models") is Verdict.SKIP
    assert got.verdict_for("frontend") is Verdict.SKIP
    assert got.verdict_for("kv-cache") is got.verdict is not Verdict.SKIP


def test_the_audience_model_lifts_everyone_else_on_the_validation_sets() -> None:
    """Aggregate only: notes that tell everyone else something, with and without the model."""
    taxonomy = load_taxonomy()
    notes = [n for name in VALIDATION_SETS for n in load_set(name) if n.others_verdict]

    def right(classifier: Classifier) -> int:
        return sum(
            verdict_right(n, classifier.classify(n.title, n.paragraph), taxonomy.slugs)
            for n in notes
        )

    with_model, without = (
        right(Classifier(taxonomy)),
        right(Classifier(taxonomy, audience_model=False)),
    )
    assert len(notes) > 80
    assert with_model >= without + 0.05 * len(notes), (with_model, without, len(notes))


def test_notes_that_split_no_audience_keep_one_verdict_for_their_roles() -> None:
    """The model must not invent splits: on development notes with no split, a gold
    role's verdict differs from the note's no more often than with the rules alone."""
    taxonomy = load_taxonomy()
    shipped = Classifier(taxonomy)
    rules_only = Classifier(taxonomy, audience_model=False)
    plain = [n for name in DEV_SETS[-6:] for n in load_set(name) if not n.role_verdicts]

    def differing(classifier: Classifier) -> int:
        count = 0
        for note in plain:
            got = classifier.classify(note.title, note.paragraph)
            count += any(got.verdict_for(r) is not got.verdict for r in note.roles & set(got.roles))
        return count

    assert len(plain) > 100
    assert differing(shipped) <= differing(rules_only) + 0.02 * len(plain)


_PLAIN_CLAUSE_END = re.compile(
    r"[。；;！？!?，,：:\n]|\.(?:\s|$)|\s[-—–]+\s|\bbut\b|\bhowever\b|\bwhereas\b|但是?|不过"
)


@given(
    st.lists(
        st.sampled_from(
            [*"abtuhw_1 .,;:!?\n-—–。；！？，：但是不过x", "but", "however", "whereas", " - "]
        ),
        max_size=16,
    )
)
def test_clause_ends_are_the_plain_word_edged_ends(parts: list[str]) -> None:
    text = "".join(parts)
    assert clauses(text) == [c for c in _PLAIN_CLAUSE_END.split(text) if c.strip()]


@given(
    st.lists(
        st.sampled_from(
            [
                *"ab1 .,;:!?()'\n-—。，但是不过x精读不值得",
                "but",
                " - ",
                "not ",
                "worth",
                "不仅",
                "v0.6",
            ]
        ),
        max_size=20,
    )
)
def test_read_clauses_gives_each_clause_and_the_paragraph_their_own_features(
    parts: list[str],
) -> None:
    text = "".join(parts)
    found, grams, pieces = read_clauses(text)
    assert found == clauses(text)
    assert grams == [features(c) for c in found]
    joined = [g for p in pieces for g in (grams[p] if isinstance(p, int) else p)]
    assert joined == features(text)


def test_the_clauses_of_a_plain_note_are_its_pieces() -> None:
    text = _text("Kernel authors read it all; the quant folks skim. 其他人：跳过。完成")
    found, _, pieces = read_clauses(text)
    assert pieces == list(range(len(found)))
    # a contrast word is a word of the paragraph: that stretch is read again as a whole
    _, _, pieces = read_clauses(_text("read it, but skim the tests"))
    assert pieces[0] == 0 and pieces[1] == features(" but skim the tests")
