"""The classifier package keeps to its line: it imports nothing of the product but
`bot.domain`, its training alone reads the labelled sets (through `bot.ingest`), and
scikit-learn is imported only inside the functions that fit a model."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import bot.classify

PACKAGE = Path(bot.classify.__file__).parent


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at module level) of every import in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, id(node) in top))
        elif isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
    return found


def test_the_classifier_imports_only_the_domain_from_the_product() -> None:
    for path in PACKAGE.glob("*.py"):
        for module, _top in _imports(path):
            if module.startswith("bot."):
                assert module.startswith(("bot.classify.", "bot.domain")), (path.name, module)
                assert not module.startswith("bot.classify.train"), (path.name, module)


def test_training_imports_scikit_learn_only_when_fitting() -> None:
    for path in (PACKAGE / "train").glob("*.py"):
        for module, top in _imports(path):
            if module.startswith("bot."):
                assert module.startswith(("bot.classify", "bot.domain", "bot.notes.ingest")), module
            if module.split(".")[0] in ("sklearn", "numpy", "scipy"):
                assert not top, (path.name, module)


def test_classifying_loads_no_training_toolchain() -> None:
    code = (
        "import sys\n"
        "from bot.classify import classify\n"
        "from bot.classify.taxonomy import load_taxonomy\n"
        "import bot.classify.train\n"
        "classify('Fix the fp8 kernel', 'Worth a close read for kernel folks.', load_taxonomy())\n"
        "print(sorted(m for m in ('sklearn', 'numpy', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_classifiers_are_cached_by_what_the_roles_say() -> None:
    """The cache key is the roles' content: equal roles share one classifier, other roles
    get their own, and nothing is keyed by an object's identity."""
    from bot.classify import build_classifier
    from bot.classify.taxonomy import Taxonomy, load_taxonomy

    shipped = load_taxonomy()
    same = Taxonomy(roles=shipped.roles)
    fewer = Taxonomy(roles=shipped.roles[:-1])
    assert same is not shipped and same.digest == shipped.digest
    assert build_classifier(same) is build_classifier(shipped)
    assert fewer.digest != shipped.digest
    assert build_classifier(fewer) is not build_classifier(shipped)
    assert build_classifier(fewer).classify("x", "值得精读。").primary_role in fewer.slugs
