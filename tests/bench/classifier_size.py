"""The classifier's size: lines per module of `bot/classify/` (training aside), counted two ways.

- all lines, as `wc -l bot/classify/*.py` counts them;
- lines of code: lines that hold a token of a statement, so neither blank lines, comments
  nor docstrings (a line with code and a comment counts once).

A checkout from before the package (its classifier in `bot/classify.py`, `bot/verdicts.py`,
`bot/verdict_model.py`, `bot/audience_model.py`, `bot/role_model.py`, `bot/taxonomy.py`,
`bot/trie.py`) is counted the same way with `--against CHECKOUT`.

.venv/bin/python -m tests.bench.classifier_size [--against CHECKOUT]
"""

from __future__ import annotations

import argparse
import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where the classifier lived before it was one package.
_EARLIER = (
    "classify.py", "verdicts.py", "verdict_model.py", "audience_model.py", "role_model.py",
    "taxonomy.py", "trie.py",
)  # fmt: skip
_LAYOUT = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)


def code_lines(source: str) -> int:
    """The lines of `source` that hold a token of a statement (no blank, comment or docstring)."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _LAYOUT and token.type != tokenize.ENDMARKER:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def modules(checkout: Path) -> list[Path]:
    """The classifier's modules in `checkout`, training aside."""
    package = checkout / "bot" / "classify"
    if package.is_dir():
        return sorted(package.glob("*.py"))
    return [checkout / "bot" / name for name in _EARLIER]


def table(checkout: Path) -> tuple[int, int]:
    """Print each module's lines and lines of code; return the totals."""
    total = code = 0
    print(f"{checkout}:")
    for path in modules(checkout):
        source = path.read_text(encoding="utf-8")
        lines, statements = source.count("\n"), code_lines(source)
        total, code = total + lines, code + statements
        print(f"  {path.name:<20} {lines:>5} lines {statements:>5} lines of code")
    print(f"  {'total':<20} {total:>5} lines {code:>5} lines of code")
    return total, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", type=Path, help="another checkout to count the same way")
    args = parser.parse_args()
    total, code = table(ROOT)
    if args.against is not None:
        before_total, before_code = table(args.against)
        print(
            f"here {total / before_total:.0%} of the lines there, "
            f"{code / before_code:.0%} of the lines of code"
        )


if __name__ == "__main__":
    main()
