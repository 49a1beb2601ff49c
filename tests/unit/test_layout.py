"""The tests are laid out like the code: test modules never import each other, helpers live
in tests/support/, and every file in tests/slow/ is marked slow (the default run skips it)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
TEST_FOLDERS = ("", "unit", "integration", "slow")
FOLDERS = {"unit", "integration", "slow", "support", "bench", "fixtures"}
# Scoring code shared by the classifier's tests and the benches (training lives in
# bot/classify/train).
TRAINING = {"labelled.py"}


def imported_test_modules(source: str, package: str) -> list[str]:
    """The test modules (`tests.test_x`, `tests.unit.test_x`) that `source`, a module of
    `package`, imports, however it names them (`from tests.unit import test_x`, `from . ...`)."""

    def is_test_module(name: str) -> bool:
        parts = name.split(".")
        return parts[0] == "tests" and any(part.startswith("test_") for part in parts)

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: package.count(".") + 2 - node.level]
                base = ".".join([*parent, base] if base else parent)
            if is_test_module(base):
                found.append(base)
            else:
                found += [
                    f"{base}.{a.name}" for a in node.names if is_test_module(f"{base}.{a.name}")
                ]
    return found


def misplaced(relative: list[str]) -> list[str]:
    """Of the .py files under tests/ (paths relative to it), those that break the layout:
    a helper outside tests/support/, a test in tests/support/, an unknown folder."""
    wrong = []
    for path in relative:
        *folders, name = path.split("/")
        folder = "/".join(folders)
        if folders and folders[0] not in FOLDERS:
            wrong.append(path)
        elif folder in TEST_FOLDERS:
            allowed = name.startswith("test_") or name in {"conftest.py", "__init__.py"}
            training = folder == "" and name in TRAINING
            if not (allowed or training):
                wrong.append(path)
        elif folder == "support" and name.startswith("test_"):
            wrong.append(path)
    return wrong


def marked_slow(source: str) -> bool:
    """Whether the module sets `pytestmark` to `pytest.mark.slow` (alone or in a list)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            marks = (
                node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else [node.value]
            )
            return any(ast.unparse(mark) == "pytest.mark.slow" for mark in marks)
    return False


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def package_of(path: Path) -> str:
    return ".".join(("tests", *path.relative_to(TESTS).parent.parts))


def test_no_module_imports_a_test_module() -> None:
    found = {
        str(path.relative_to(TESTS)): names
        for path in python_files()
        if (names := imported_test_modules(path.read_text(encoding="utf-8"), package_of(path)))
    }
    assert found == {}, "move what they share to tests/support/ or a conftest.py fixture"


def test_helpers_live_only_in_support() -> None:
    relative = [str(path.relative_to(TESTS)) for path in python_files()]
    assert "support/fakeslack.py" in relative
    assert misplaced(relative) == []


def test_every_file_in_slow_is_marked_slow() -> None:
    files = sorted((TESTS / "slow").glob("test_*.py"))
    assert files
    assert [f.name for f in files if not marked_slow(f.read_text(encoding="utf-8"))] == []


def test_the_rules_catch_a_violation() -> None:
    """Made-up modules that break each rule, so the checks above can fail."""
    assert imported_test_modules("from tests.test_cli import run", "tests.unit") == [
        "tests.test_cli"
    ]
    assert imported_test_modules("import tests.integration.test_cli as cli", "tests.slow") == [
        "tests.integration.test_cli"
    ]
    assert imported_test_modules("from tests.unit import test_digest", "tests") == [
        "tests.unit.test_digest"
    ]
    assert imported_test_modules("from .test_cli import run", "tests.integration") == [
        "tests.integration.test_cli"
    ]
    assert imported_test_modules("from .. import test_x", "tests.unit") == ["tests.test_x"]
    assert imported_test_modules("from tests.support.cli import run", "tests.unit") == []
    assert imported_test_modules("from bot.test_mode import x", "tests.unit") == []

    assert misplaced(["integration/harness.py", "support/test_fake.py", "misc/test_x.py"]) == [
        "integration/harness.py",
        "support/test_fake.py",
        "misc/test_x.py",
    ]
    assert misplaced(["helpers.py", "unit/conftest.py", "support/cli.py", "labelled.py"]) == [
        "helpers.py"
    ]
    assert misplaced(["train_x.py"]) == ["train_x.py"]  # training lives in bot/classify/train

    assert marked_slow("import pytest\npytestmark = [pytest.mark.slow, pytest.mark.postgres]\n")
    assert not marked_slow("import pytest\npytestmark = pytest.mark.postgres\n")
    assert not marked_slow("import pytest\n\n@pytest.mark.slow\ndef test_x() -> None: ...\n")
