"""Role taxonomy: the default file, lookups, and team override files."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.classify.taxonomy import Taxonomy, TaxonomyError, load_taxonomy
from tests.labelled import NAMED_ROLES
from tests.support.notefiles import ROLE_SLUGS


@pytest.fixture(scope="module")
def default() -> Taxonomy:
    return load_taxonomy()


def test_default_roles(default: Taxonomy) -> None:
    assert set(NAMED_ROLES) <= set(default.slugs)  # the roles the benches name
    assert load_taxonomy() is default  # parsed once
    for role in default.roles:
        assert role.name_zh and role.name_en
        assert role.keywords and role.aliases and role.audience
        assert all(isinstance(w, float) for w in role.keywords.values())
    assert default.get("kv-cache").slug == "kv-cache"
    with pytest.raises(KeyError):
        default.get("nope")


@pytest.mark.parametrize(
    ("word", "slug"),
    [
        ("moe", "moe-quant"),
        ("quant", "moe-quant"),
        ("quantization", "moe-quant"),
        ("量化", "moe-quant"),
        ("fp8", "moe-quant"),
        ("mm", "multimodal"),
        ("vision", "multimodal"),
        ("多模态", "multimodal"),
        ("视觉", "multimodal"),
        ("infra", "release-infra"),
        ("ci", "release-infra"),
        ("release", "release-infra"),
        ("build", "release-infra"),
        ("发布", "release-infra"),
        ("kv", "kv-cache"),
        ("cache", "kv-cache"),
        ("offload", "kv-cache"),
        ("缓存", "kv-cache"),
        ("spec", "spec-decode"),
        ("eagle", "spec-decode"),
        ("mtp", "spec-decode"),
        ("推测解码", "spec-decode"),
        ("投机", "spec-decode"),
        ("kernel", "kernels"),
        ("cuda", "kernels"),
        ("triton", "kernels"),
        ("内核", "kernels"),
        ("算子", "kernels"),
        ("model", "models"),
        ("模型", "models"),
        ("api", "frontend"),
        ("openai", "frontend"),
        ("server", "frontend"),
        ("前端", "frontend"),
        ("rocm", "hardware"),
        ("amd", "hardware"),
        ("cpu", "hardware"),
        ("tpu", "hardware"),
        ("xpu", "hardware"),
        ("硬件", "hardware"),
        # case, width, whitespace and "#"
        ("MoE", "moe-quant"),
        ("  #CI ", "release-infra"),
        ("ＲＯＣｍ", "hardware"),
        ("EAGLE", "spec-decode"),
        ("Kv-Cache", "kv-cache"),
        ("Multimodal", "multimodal"),
        ("多模态", "multimodal"),
    ],
)
def test_resolve(default: Taxonomy, word: str, slug: str) -> None:
    role = default.resolve(word)
    assert role is not None and role.slug == slug


def test_resolve_names_and_unknown(default: Taxonomy) -> None:
    role = default.get("kv-cache")
    assert default.resolve(role.name_en) == role
    assert default.resolve(role.name_zh) == role
    assert default.resolve("bananas") is None
    assert default.resolve("") is None


def test_suggest(default: Taxonomy) -> None:
    assert "moe-quant" in [r.slug for r in default.suggest("mooe")]
    assert default.suggest("kernal")[0].slug == "kernels"
    assert default.suggest("frontnd")[0].slug == "frontend"
    assert len(default.suggest("mooe", n=1)) == 1
    assert default.suggest("") == []


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "roles.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_extend_file(tmp_path: Path, default: Taxonomy) -> None:
    path = _write(
        tmp_path,
        """
mode = "extend"

[[roles]]
slug = "moe-quant"
aliases = ["ep"]
[roles.keywords]
"deepep" = 3
"marlin" = 0

[[roles]]
slug = "scheduler"
name_zh = "调度"
name_en = "Scheduling"
aliases = ["sched"]
audience = ["调度器维护者"]
[roles.keywords]
"scheduler" = 3
"调度" = 3
""",
    )
    tax = load_taxonomy(path)
    assert tax.slugs == (*ROLE_SLUGS, "scheduler")
    moe = tax.get("moe-quant")
    assert moe.name_en == default.get("moe-quant").name_en
    assert "ep" in moe.aliases and "moe" in moe.aliases
    assert moe.keywords["deepep"] == 3.0
    assert "marlin" not in moe.keywords
    assert tax.resolve("ep") == moe
    assert tax.resolve("SCHED") == tax.get("scheduler")
    # the default is untouched
    assert "marlin" in load_taxonomy().get("moe-quant").keywords


def test_extend_is_default_mode(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[roles]]\nslug = "frontend"\naliases = ["http"]\n')
    tax = load_taxonomy(path)
    assert tax.slugs == ROLE_SLUGS
    assert tax.resolve("http") == tax.get("frontend")


def test_replace_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
mode = "replace"

[[roles]]
slug = "backend"
name_zh = "后端"
name_en = "Backend"
aliases = ["be"]
[roles.keywords]
"engine" = 2.5
"kernel" = 3
""",
    )
    tax = load_taxonomy(path)
    assert tax.slugs == ("backend",)
    assert tax.resolve("be") == tax.get("backend")
    assert tax.resolve("moe") is None


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[[roles]\nslug = 'x'", "invalid TOML"),
        ('mode = "merge"', "'mode' must be 'extend' or 'replace', not 'merge'"),
        ('colour = "blue"', "unknown top-level key 'colour'"),
        ('[[roles]]\nname_zh = "甲"\nname_en = "A"', "missing 'slug'"),
        (
            '[[roles]]\nslug = "Bad Slug"\nname_zh = "甲"\nname_en = "A"',
            "role #1: 'slug' must be lowercase letters, digits and '-'",
        ),
        ('[[roles]]\nslug = "foo"\nname_zh = "甲"', "role 'foo': missing 'name_en'"),
        ('[[roles]]\nslug = "foo"\nname_en = "Foo"', "role 'foo': missing 'name_zh'"),
        (
            '[[roles]]\nslug = "foo"\nname_zh = "甲"\nname_en = "A"\n'
            '[[roles]]\nslug = "foo"\nname_zh = "乙"\nname_en = "B"',
            "duplicate slug",
        ),
        (
            '[[roles]]\nslug = "foo"\nname_zh = "甲"\nname_en = "A"\naliases = ["moe"]',
            "alias 'moe' is claimed by both",
        ),
        (
            '[[roles]]\nslug = "foo"\nname_zh = "甲"\nname_en = "A"\n'
            '[roles.keywords]\n"x" = "heavy"',
            "role 'foo': 'keywords.x' must be a valid number, not 'heavy'",
        ),
        (
            '[[roles]]\nslug = "foo"\nname_zh = "甲"\nname_en = "A"\n[roles.keywords]\n"x" = true',
            "role 'foo': 'keywords.x' must be a valid number, not True",
        ),
        (
            '[[roles]]\nslug = "foo"\nname_zh = "甲"\nname_en = "A"\naliases = "x"',
            "role 'foo': 'aliases' must be an array, not 'x'",
        ),
        (
            '[[roles]]\nslug = "foo"\nname_zh = "甲"\nname_en = "A"\ncolour = 1',
            "role 'foo': unknown key 'colour'",
        ),
        ('mode = "replace"', "defines no roles"),
        ("roles = 3", "'roles' must be an array, not 3"),
    ],
)
def test_bad_files(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(TaxonomyError) as err:
        load_taxonomy(path)
    message = str(err.value)
    assert str(path) in message
    assert fragment in message


def test_toml_error_has_line(tmp_path: Path) -> None:
    path = _write(tmp_path, 'mode = "extend"\n\n[[roles]\n')
    with pytest.raises(TaxonomyError, match=r"line 3"):
        load_taxonomy(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(TaxonomyError, match=r"absent\.toml"):
        load_taxonomy(path)


def test_taxonomy_error_is_value_error() -> None:
    assert issubclass(TaxonomyError, ValueError)


def test_every_problem_is_named_on_one_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[[roles]]\nslug = "foo"\nname_zh = " "\naliases = ["a", ""]\n'
        '[roles.keywords]\n"x" = inf\n',
    )
    with pytest.raises(TaxonomyError) as err:
        load_taxonomy(path)
    assert str(err.value) == (
        f"roles file {path}: role 'foo': 'name_zh' must not be empty, not ' '; "
        "role 'foo': 'aliases.1' must not be empty, not ''; "
        "role 'foo': 'keywords.x' must be a finite number, not inf"
    )
