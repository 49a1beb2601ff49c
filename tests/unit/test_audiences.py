"""Audience splits: each group a note names gets its own verdict, and so does everyone else.

Groups are named by a people noun ("量化组", "the multimodal folks"), by their work alone
("写 kernel 的", "管镜像的"), or by a heading ("Spec-decode:", "Quant →"); everyone else is
named in many positions ("Everyone else: ...", "其他人呢?", "the rest of the org ...").
"""

from __future__ import annotations

import pytest

from bot.classify import classify
from bot.classify.taxonomy import Taxonomy, load_taxonomy
from bot.domain import Verdict

DEEP, SKIM, SKIP = Verdict.DEEP, Verdict.SKIM, Verdict.SKIP


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return load_taxonomy()


@pytest.mark.parametrize(
    ("paragraph", "expected"),
    [
        # a Chinese group noun after the work: 组, 方向
        (
            "量化组请逐行细读新的 scale 布局；模型组浏览一下即可。",
            {"moe-quant": DEEP, "models": SKIM},
        ),
        (
            "注意力内核方向建议精读切分逻辑；KV 缓存组不用看。",
            {"kernels": DEEP, "kv-cache": SKIP},
        ),
        # the work alone, the noun left out, and two such groups joined by 和
        (
            "管构建的同学一定要细读 wheel 命名；写 kernel 的浏览一下编译告警；其他人跳过。",
            {"release-infra": DEEP, "kernels": SKIM, "frontend": SKIP},
        ),
        (
            "做投机解码的和管 KV cache 的都该快速浏览一下；其余人跳过。",
            {"spec-decode": SKIM, "kv-cache": SKIM, "models": SKIP},
        ),
        # 维护 inside a clause ("维护者可快速浏览 ... 量化算子的") does not open a second group
        (
            "TPU 平台的维护者可快速浏览 XLA 量化算子的调用方式；做量化的同学则可直接跳过。",
            {"hardware": SKIM, "moe-quant": SKIP},
        ),
        # "the rest of the diff" is part of the PR, not everyone else
        (
            "KV-cache owners should skim the allocator. The rest of the diff can be skipped.",
            {"kv-cache": SKIM, "models": SKIM},
        ),
        # a relative clause or a participle names the group by its work, whatever the verb
        (
            "Those who bring up new architectures should read the model file closely. "
            "People wiring image inputs can skip it.",
            {"models": DEEP, "multimodal": SKIP},
        ),
        # a part said to be enough, in words no verdict cue holds: a skim for that group
        (
            "做量化的人得逐行读；写 kernel 的看看 GEMM 的形状限制就行。",
            {"moe-quant": DEEP, "kernels": SKIM},
        ),
        (
            "Quant people: read the dequant path carefully. Kernel owners: summary level.",
            {"moe-quant": DEEP, "kernels": SKIM},
        ),
        # ...but 即可 after a step to take is not about reading
        (
            "做量化的同学请精读；ROCm 用户升级后即可使用新功能。",
            {"moe-quant": DEEP, "hardware": DEEP},
        ),
        # a heading speaks for its whole sentence
        (
            "Kernel people: read it closely. API folks: nothing new for you, skip.",
            {"kernels": DEEP, "frontend": SKIP},
        ),
        # the nearest heading in the sentence speaks for the statement after it
        (
            "Kernel folks: read it closely; model folks: not needed.",
            {"kernels": DEEP, "models": SKIP},
        ),
        # a heading beats a topic the statement mentions ("for the MTP layers")
        (
            "Model folks: read the loader closely. Spec-decode folks: skim it for the MTP layers.",
            {"models": DEEP, "spec-decode": SKIM},
        ),
        # a group's bare name as the subject, and on-call rotations as people
        (
            "Multimodal folks should read every check closely. Frontend can skip it.",
            {"multimodal": DEEP, "frontend": SKIP},
        ),
        (
            "The release rotation should read it closely. 前端值班浏览一下即可。",
            {"release-infra": DEEP, "frontend": SKIM},
        ),
        # English plural group nouns
        (
            "The multimodal groups should read the processor closely. "
            "The kernel groups can skip it.",
            {"multimodal": DEEP, "kernels": SKIP},
        ),
    ],
)
def test_groups_named_by_noun_or_work(
    paragraph: str, expected: dict[str, Verdict], taxonomy: Taxonomy
) -> None:
    got = classify("Refactor the shared loading path", paragraph, taxonomy)
    for role, verdict in expected.items():
        assert got.verdict_for(role) is verdict, role


def test_demonstratives_do_not_make_a_group(taxonomy: Taxonomy) -> None:
    # "这组 kernel" is a set of kernels; "kernel 组" is the kernels group
    rest = "可以略过，写模型的同学精读路由部分。"
    got = classify("Tune fused MoE configs", "kernel 组" + rest, taxonomy)
    assert got.role_verdicts.get("kernels") is SKIP
    got = classify("Tune fused MoE configs", "这组 kernel " + rest, taxonomy)
    assert "kernels" not in got.role_verdicts


@pytest.mark.parametrize(
    ("paragraph", "group", "others"),
    [
        ("Spec-decode: read it line by line. Everyone else: skip.", ("spec-decode", DEEP), SKIP),
        ("Quant → skim the scale layout. Rest → skip.", ("moe-quant", SKIM), SKIP),
        ("前端: 必读。其他人呢? 跳过即可。", ("frontend", DEEP), SKIP),
    ],
)
def test_headings_name_groups_and_everyone_else(
    paragraph: str, group: tuple[str, Verdict], others: Verdict, taxonomy: Taxonomy
) -> None:
    got = classify("Rework the request path", paragraph, taxonomy)
    role, verdict = group
    assert got.verdict_for(role) is verdict
    outsider = "hardware"
    assert got.verdict_for(outsider) is others


def test_a_topic_heading_is_not_an_audience(taxonomy: Taxonomy) -> None:
    # only a group's own names make a heading an address, not any keyword
    got = classify(
        "Fix the scheduler",
        "Block table: read it closely. Model authors can skip it.",
        taxonomy,
    )
    assert got.verdict is DEEP
    assert got.verdict_for("kv-cache") is DEEP


@pytest.mark.parametrize(
    "others_clause",
    [
        "The rest of the org can skip it.",
        "Other AMD folks can skip it.",
        "其他组直接跳过。",
        "别的团队可以略过。",
        "Everyone else: not your concern.",
        "For the rest of you, nothing to see.",
        # by what they do not do, or as everyone outside a group
        "不做 ROCm 的不用看。",
        "Others have no reason to open it.",
        "除了维护 ROCm 的人以外都可以跳过。",
        "Readers outside ROCm can skip it.",
        "与 ROCm 无关的人可以跳过。",
    ],
)
def test_everyone_else_in_many_forms(others_clause: str, taxonomy: Taxonomy) -> None:
    got = classify(
        "ROCm: refresh the flash-attention build",
        f"Whoever maintains the ROCm build should skim the new flags. {others_clause}",
        taxonomy,
    )
    assert got.verdict is SKIM
    assert got.verdict_for("models") is SKIP


def test_no_split_without_a_group_told_something(taxonomy: Taxonomy) -> None:
    got = classify("Build one abi3 wheel", "Everyone else has seen this before.", taxonomy)
    assert not got.role_verdicts


@pytest.mark.parametrize(
    ("others_sentence", "expected"),
    [
        ("其他人知道核心里不再有 beam search 就够了。", SKIM),
        ("Everyone else: the one-line changelog entry is enough.", SKIM),
        ("其他人路过就好。", SKIP),
        # a statement about everyone else, with no verdict words, still sets them apart
        ("The rest of the org has nothing to act on.", SKIP),
    ],
)
def test_what_is_enough_for_everyone_else(
    others_sentence: str, expected: Verdict, taxonomy: Taxonomy
) -> None:
    got = classify(
        "Move beam search out of the engine core",
        f"Frontend maintainers should read the new entry point carefully. {others_sentence}",
        taxonomy,
    )
    assert got.verdict_for("frontend") is DEEP
    assert got.verdict_for("kernels") is expected


def test_a_group_name_before_the_people_noun(taxonomy: Taxonomy) -> None:
    got = classify("Add a VLM", "做多模态的同学值得细读；接模型的同学浏览即可。", taxonomy)
    assert (got.verdict_for("multimodal"), got.verdict_for("models")) == (DEEP, SKIM)
    # in English the name is the word before the noun, or a part of it ("server-side")
    got = classify(
        "Default the sampler to FlashInfer",
        "Kernel people should study it. Server-side folks can skim; model owners can skip.",
        taxonomy,
    )
    assert got.verdict_for("kernels") is DEEP
    assert got.verdict_for("frontend") is SKIM
    assert got.verdict_for("models") is SKIP


@pytest.mark.parametrize(
    ("title", "paragraph", "group", "verdict", "other"),
    [
        # the group is excepted; nothing says how closely it reads: not a skip, a skim
        (
            "[Build] Move the wheel upload to a separate job",
            "You can skip this unless you maintain the release pipeline.",
            "release-infra",
            SKIM,
            "multimodal",
        ),
        (
            "[Build] Move the wheel upload to a separate job",
            "Skip unless you own the nightly build scripts.",
            "release-infra",
            SKIM,
            "spec-decode",
        ),
        (
            "[Kernel] Retune the grouped GEMM block sizes",
            "Unless you work on the MoE kernels, skip it.",
            "moe-quant",
            SKIM,
            "frontend",
        ),
        (
            "[Build] Move the wheel upload to a separate job",
            "除非你负责发版流水线，否则这条可以略过。",
            "release-infra",
            SKIM,
            "models",
        ),
        (
            "[Kernel] Retune the grouped GEMM block sizes",
            "MoE 算子的负责人除外，其余同学可略过。",
            "moe-quant",
            SKIM,
            "kv-cache",
        ),
        # what the note says to the group elsewhere is theirs
        (
            "[Build] Move the wheel upload to a separate job",
            "Skip unless you own the release pipeline; Docker image maintainers: go through "
            "the new job carefully.",
            "release-infra",
            DEEP,
            "hardware",
        ),
        (
            "[Build] Move the wheel upload to a separate job",
            "除非你维护发布流程，否则不用看；管 Dockerfile 的同学快速浏览一下即可。",
            "release-infra",
            SKIM,
            "kernels",
        ),
    ],
)
def test_skip_unless_you_own_it_excepts_the_owners(
    title: str, paragraph: str, group: str, verdict: Verdict, other: str, taxonomy: Taxonomy
) -> None:
    """ "Skip unless you own X": X's readers get what the note implies for them (a skim when it
    says no more), everyone else the skip."""
    got = classify(title, paragraph, taxonomy)
    assert group in got.roles
    assert got.verdict_for(group) is verdict
    assert got.verdict_for(other) is SKIP
