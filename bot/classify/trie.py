"""One regex for many literal phrases, factored as a prefix trie (fast to scan with)."""

from __future__ import annotations

import re
from collections.abc import Iterable

ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def trie_regex(terms: Iterable[str], skip_words: bool = False) -> str:
    """A regex matching any of `terms`, factored as a prefix trie (longest match wins).

    With `skip_words`, an ASCII word that does not start with a term is consumed whole,
    so the scan never restarts in the middle of a word (terms must start at a word edge
    anyway); callers drop those filler matches.
    """
    trie: dict[str, object] = {}
    for term in terms:
        node: dict[str, object] = trie
        for ch in term:
            child = node.setdefault(ch, {})
            assert isinstance(child, dict)
            node = child
        node[""] = {}

    def emit(node: dict[str, object]) -> str:
        alts: list[str] = []
        for ch in sorted(k for k in node if k):
            child = node[ch]
            assert isinstance(child, dict)
            piece = r"\s*" if ch == " " else re.escape(ch)
            alts.append(piece + emit(child))
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:
            return "(?:" + body + ")?"
        return body

    if not skip_words:
        return emit(trie)
    alts = []
    for ch in sorted(set(trie) | ASCII_ALNUM):
        child = trie.get(ch)
        if ch not in ASCII_ALNUM:
            assert isinstance(child, dict)
            alts.append(re.escape(ch) + emit(child))
        elif child is None:
            alts.append(ch + "[a-z0-9]*")
        else:
            assert isinstance(child, dict)
            rest = emit(child)
            alts.append(f"{ch}(?:{rest}|[a-z0-9]*)" if rest else f"{ch}[a-z0-9]*")
    return "(?:" + "|".join(alts) + ")"
