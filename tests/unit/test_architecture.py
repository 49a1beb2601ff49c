"""The shape of bot/: packages by area, each importing only what its line below allows.

Imports are read with grimp, which counts every import statement: at module level, inside
functions (lazy imports) and under `if TYPE_CHECKING:`. A lazy import still ties two modules
together for a reader and for a refactoring, so it counts for cycles and rules alike.
"""

from __future__ import annotations

import graphlib
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import grimp
import pytest

import bot

ROOT_MODULES_MAX = 8

# The classifier: one package, which imports only plain data (its training also reads note
# files). `classifier` in a line below means this package.
CLASSIFIER = ("bot.classify",)

# Parts every area may build on.
BASE = ("bot.domain", "bot.config", "bot.metrics")


@dataclass(frozen=True)
class Rule:
    """`package` (a package or a module) may import only itself, the root package `bot`
    (it holds the version) and the modules or packages in `may_import`."""

    package: str
    may_import: tuple[str, ...] = ()

    def allows(self, imported: str) -> bool:
        return any(_within(imported, allowed) for allowed in (self.package, *self.may_import))


def line(package: str, may_import: str = "") -> Rule:
    """A rule from words: `base` (domain, config, metrics), `classifier`, `any`, or a module
    or package path below bot (`slack.client`)."""
    names: list[str] = []
    for word in may_import.split():
        if word == "base":
            names += BASE
        elif word == "classifier":
            names += CLASSIFIER
        elif word == "any":
            names.append("bot")
        else:
            names.append(f"bot.{word}")
    return Rule(f"bot.{package}", tuple(names))


# One line per package: what it may import, so everything else is what it never imports.
# fmt: off
RULES = (
    line("domain"),  # plain data: imports nothing of the project
    line("config"),  # settings only
    line("metrics"),  # the metrics interface only
    line("notes", "domain config classifier"),  # pure: never the store, readers, delivery, Slack
    line("store", "domain config notes"),  # never readers, delivery, Slack, render, services
    line("i18n", "domain"),  # the catalogues and the language rule: plain data in, text out
    line("render", "domain classifier i18n"),  # no I/O: never store, Slack, delivery, services
    line("services", "base notes store classifier llm_reader"),  # use cases: never readers and up
    # readers: never delivery, Slack
    line("readers", "base services notes store render i18n classifier llm_reader"),
    line(
        "delivery",
        "base services notes readers store render i18n classifier slack.client ops.logs",
    ),
    line(
        "slack",
        "base services notes readers delivery store render i18n classifier ops.prometheus",
    ),
    # ops: what doctor checks
    line("ops", "base notes store classifier llm_reader slack.client delivery.scheduler"),
    line("cli", "any"),  # the one place that builds everything; nothing imports it
    line("__main__", "cli"),
    line("classify", "domain"),  # the classifier: plain data in, a Classification out
    line("classify.train", "domain notes.ingest classify"),  # reads the labelled note files
    line("llm_reader", "base store classifier"),  # a second reader: settings, its cache
)
# fmt: on
# Of Slack, delivery uses only the Web API client, and of ops only the run's log context;
# Slack uses ops only for the metrics type the server is handed (TYPE_CHECKING).
# Narrower lines inside a package: a listener never reaches for the app that registers it.
NEVER = (("bot.slack.listeners", "bot.slack.app"),)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def import_graph(package: str) -> dict[str, set[str]]:
    """Each module of `package` and the modules of `package` it imports."""
    graph = grimp.build_graph(package, cache_dir=None)
    return {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One chain of imports that leads back to where it started, or [] when there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def rule_for(module: str, rules: tuple[Rule, ...]) -> Rule | None:
    matching = [rule for rule in rules if _within(module, rule.package)]
    return max(matching, key=lambda rule: len(rule.package), default=None)


def broken_rules(
    graph: dict[str, set[str]],
    rules: tuple[Rule, ...],
    never: tuple[tuple[str, str], ...] = (),
) -> list[str]:
    """Every import its package's line does not allow, as "importer -> imported"."""
    root = min(graph, key=len)
    broken = []
    for module, imported in sorted(graph.items()):
        rule = rule_for(module, rules)
        for target in sorted(imported):
            if target == root:
                continue
            allowed = rule is not None and rule.allows(target)
            if not allowed or any(
                _within(module, inner) and _within(target, banned) for inner, banned in never
            ):
                broken.append(f"{module} -> {target}")
    return broken


def unruled(graph: dict[str, set[str]], rules: tuple[Rule, ...]) -> list[str]:
    """Modules no line covers (a new top-level package needs its own line)."""
    root = min(graph, key=len)
    return sorted(m for m in graph if m != root and rule_for(m, rules) is None)


def repeated_names(graph: dict[str, set[str]], most: int = 2) -> dict[str, list[str]]:
    """Module and package names used more than `most` times, `__init__`-style names aside."""
    names = Counter(module.rpartition(".")[2] for module in graph if "." in module)
    return {
        name: sorted(m for m in graph if m.rpartition(".")[2] == name)
        for name, count in names.items()
        if count > most
    }


def top_level_modules(package_dir: Path, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The .py files directly in `package_dir`, not counting the names in `allowed`."""
    return sorted(p.stem for p in package_dir.glob("*.py") if p.stem not in allowed)


# ---- the project holds to its lines -------------------------------------------------------


@pytest.fixture(scope="module")
def project() -> dict[str, set[str]]:
    return import_graph("bot")


def test_no_import_cycle(project: dict[str, set[str]]) -> None:
    assert find_cycle(project) == []


def test_each_package_imports_only_what_its_line_allows(project: dict[str, set[str]]) -> None:
    assert broken_rules(project, RULES, NEVER) == []


def test_every_module_is_covered_by_a_line(project: dict[str, set[str]]) -> None:
    assert unruled(project, RULES) == []


def test_no_module_name_is_used_three_times(project: dict[str, set[str]]) -> None:
    assert repeated_names(project) == {}


def test_top_level_holds_at_most_eight_modules() -> None:
    here = Path(bot.__file__).parent
    modules = top_level_modules(here, frozenset())
    assert len(modules) <= ROOT_MODULES_MAX, modules


def test_every_package_says_what_it_may_import(project: dict[str, set[str]]) -> None:
    packages = [m for m in project if m.count(".") >= 1 and _is_package(m)]
    assert packages, "no packages found"
    for package in packages:
        doc = (
            Path(bot.__file__).parent.parent / package.replace(".", "/") / "__init__.py"
        ).read_text()
        assert '"""' in doc and "import" in doc.split('"""')[1], f"{package}: no docstring rule"


def _is_package(module: str) -> bool:
    return (Path(bot.__file__).parent.parent / module.replace(".", "/") / "__init__.py").is_file()


# ---- the checks catch what they are for: a tiny package that breaks each rule --------------


def _write_package(root: Path, name: str, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / name / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package `tinyhouse` with a domain, a store and a render area, importable."""
    _write_package(
        tmp_path,
        "tinyhouse",
        {
            "__init__.py": "",
            "domain.py": "",
            "store/__init__.py": "",
            "store/sql.py": "from tinyhouse import domain\n",
            "render/__init__.py": "",
            "render/blocks.py": "from tinyhouse.domain import *\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "tinyhouse"


TINY_RULES = (
    Rule("tinyhouse.domain"),
    Rule("tinyhouse.store", ("tinyhouse.domain",)),
    Rule("tinyhouse.render", ("tinyhouse.domain",)),
)


def test_tiny_package_passes_as_written(tiny: Path) -> None:
    graph = import_graph("tinyhouse")
    assert find_cycle(graph) == []
    assert broken_rules(graph, TINY_RULES) == []
    assert repeated_names(graph) == {}


def test_checker_catches_a_forbidden_import(tiny: Path) -> None:
    (tiny / "render" / "blocks.py").write_text("from tinyhouse.store import sql\n")
    assert broken_rules(import_graph("tinyhouse"), TINY_RULES) == [
        "tinyhouse.render.blocks -> tinyhouse.store.sql"
    ]


def test_checker_counts_lazy_and_type_checking_imports(tiny: Path) -> None:
    (tiny / "domain.py").write_text(
        textwrap.dedent(
            """\
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from tinyhouse.render import blocks


            def later() -> None:
                from tinyhouse.store import sql
            """
        )
    )
    graph = import_graph("tinyhouse")
    assert broken_rules(graph, TINY_RULES) == [
        "tinyhouse.domain -> tinyhouse.render.blocks",
        "tinyhouse.domain -> tinyhouse.store.sql",
    ]
    assert find_cycle(graph)  # domain -> render.blocks -> domain


def test_checker_catches_a_cycle(tiny: Path) -> None:
    (tiny / "store" / "readers.py").write_text("from tinyhouse.store.sql import *\n")
    (tiny / "store" / "sql.py").write_text("from tinyhouse.store import readers\n")
    cycle = find_cycle(import_graph("tinyhouse"))
    assert set(cycle) == {"tinyhouse.store.readers", "tinyhouse.store.sql"}


def test_checker_catches_a_module_without_a_line(tiny: Path) -> None:
    (tiny / "ops.py").write_text("")
    assert unruled(import_graph("tinyhouse"), TINY_RULES) == ["tinyhouse.ops"]


def test_checker_catches_a_narrower_line(tiny: Path) -> None:
    (tiny / "render" / "modal.py").write_text("from tinyhouse.render import blocks\n")
    never = (("tinyhouse.render.modal", "tinyhouse.render.blocks"),)
    assert broken_rules(import_graph("tinyhouse"), TINY_RULES, never) == [
        "tinyhouse.render.modal -> tinyhouse.render.blocks"
    ]


def test_checker_catches_a_name_used_three_times(tiny: Path) -> None:
    for folder in ("store", "render"):
        (tiny / folder / "corrections.py").write_text("")
    assert repeated_names(import_graph("tinyhouse")) == {}  # twice is fine
    (tiny / "corrections.py").write_text("")
    assert repeated_names(import_graph("tinyhouse")) == {
        "corrections": [
            "tinyhouse.corrections",
            "tinyhouse.render.corrections",
            "tinyhouse.store.corrections",
        ]
    }


def test_checker_counts_top_level_modules(tiny: Path) -> None:
    for index in range(ROOT_MODULES_MAX):
        (tiny / f"extra_{index}.py").write_text("")
    modules = top_level_modules(tiny)
    assert len(modules) == ROOT_MODULES_MAX + 2  # __init__ and domain as well
    assert len(top_level_modules(tiny, frozenset({"extra_0", "extra_1"}))) == ROOT_MODULES_MAX
