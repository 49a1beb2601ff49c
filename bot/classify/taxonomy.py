"""Reader roles: loading, validating and looking them up.

The default roles live in ``bot/classify/data/roles.toml``; a team may point the
``PRDIGEST_ROLES_FILE`` setting at its own file, which either extends the
defaults (``mode = "extend"``) or replaces them (``mode = "replace"``). The
file format is documented at the top of ``roles.toml``.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import math
import re
import tomllib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bot.domain import Role

__all__ = ["Taxonomy", "TaxonomyError", "load_taxonomy", "normalise_word"]

_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_ROLE_KEYS = frozenset({"slug", "name_zh", "name_en", "aliases", "audience", "keywords"})
_TOP_KEYS = frozenset({"mode", "version", "roles"})
_MODES = ("extend", "replace")


class TaxonomyError(ValueError):
    """A roles file is malformed; the message names the file and the problem."""


def normalise_word(word: str) -> str:
    """Fold a lookup word: NFKC, trimmed of whitespace and ``#``, case-folded."""
    return unicodedata.normalize("NFKC", word).strip().strip("#").strip().casefold()


@dataclass(frozen=True)
class Taxonomy:
    """An ordered set of reader roles with name/alias lookup."""

    roles: tuple[Role, ...]
    _lookup: dict[str, Role] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )
    _choices: dict[str, Role] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    @functools.cached_property
    def digest(self) -> str:
        """sha256 of the roles: what a classifier built for this taxonomy depends on."""
        return hashlib.sha256(repr(self.roles).encode("utf-8")).hexdigest()

    def __post_init__(self) -> None:
        lookup: dict[str, Role] = {}
        for role in self.roles:
            for word in (role.slug, role.name_en, role.name_zh, *role.aliases):
                key = normalise_word(word)
                if key:
                    lookup.setdefault(key, role)
        self._lookup.update(lookup)
        self._choices.update(lookup)

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(r.slug for r in self.roles)

    def get(self, slug: str) -> Role:
        """The role with this exact slug; KeyError if there is none."""
        for role in self.roles:
            if role.slug == slug:
                return role
        raise KeyError(slug)

    def resolve(self, word: str) -> Role | None:
        """The role a user means by `word` (slug, alias or name), or None."""
        return self._lookup.get(normalise_word(word))

    def resolve_all(self, words: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The slugs `words` name (each once, in order) and the words that name no role."""
        slugs: list[str] = []
        unknown: list[str] = []
        for word in words:
            role = self.resolve(word)
            if role is None:
                unknown.append(word)
            elif role.slug not in slugs:
                slugs.append(role.slug)
        return tuple(slugs), tuple(unknown)

    def suggest(self, word: str, n: int = 3) -> list[Role]:
        """Up to `n` roles whose names look most like `word` ("did you mean")."""
        key = normalise_word(word)
        if not key or n <= 0:
            return []
        scored: dict[str, float] = {}
        for choice, role in self._choices.items():
            ratio = difflib.SequenceMatcher(None, key, choice).ratio()
            if ratio > scored.get(role.slug, 0.0):
                scored[role.slug] = ratio
        ranked = sorted(
            ((score, slug) for slug, score in scored.items() if score >= 0.5),
            key=lambda item: (-item[0], self.slugs.index(item[1])),
        )
        return [self.get(slug) for _, slug in ranked[:n]]


# --------------------------------------------------------------------------- loading


def _fail(source: str, message: str) -> TaxonomyError:
    return TaxonomyError(f"roles file {source}: {message}")


def _str_list(source: str, where: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(source, f"{where}: '{key}' must be a list of strings")
    out: list[str] = []
    for item in value:
        text = item.strip()
        if not text:
            raise _fail(source, f"{where}: '{key}' contains an empty string")
        if text not in out:
            out.append(text)
    return tuple(out)


def _keywords(source: str, where: str, value: object) -> dict[str, float]:
    if not isinstance(value, dict):
        raise _fail(source, f"{where}: 'keywords' must be a table of term = weight")
    out: dict[str, float] = {}
    for term, weight in value.items():
        if not isinstance(term, str) or not term.strip():
            raise _fail(source, f"{where}: keyword terms must be non-empty strings")
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise _fail(source, f"{where}: keyword '{term}' weight must be a number")
        if not math.isfinite(weight):
            raise _fail(source, f"{where}: keyword '{term}' weight must be finite")
        out[unicodedata.normalize("NFKC", term).strip().lower()] = float(weight)
    return out


@dataclass
class _RoleSpec:
    """One ``[[roles]]`` entry as written (fields may be absent in extend mode)."""

    slug: str
    fields: dict[str, Any]


def _parse_file(text: str, source: str) -> tuple[str, list[_RoleSpec]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(source, f"invalid TOML: {exc}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _fail(source, f"unknown top-level key(s): {', '.join(unknown)}")
    mode = data.get("mode", "extend")
    if mode not in _MODES:
        raise _fail(source, f'\'mode\' must be "extend" or "replace", not {mode!r}')
    raw_roles = data.get("roles", [])
    if not isinstance(raw_roles, list) or not all(isinstance(r, dict) for r in raw_roles):
        raise _fail(source, "'roles' must be an array of tables ([[roles]])")
    specs: list[_RoleSpec] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_roles, start=1):
        slug = raw.get("slug")
        if not isinstance(slug, str) or not slug:
            raise _fail(source, f"role #{index}: missing 'slug'")
        if not _SLUG_RE.match(slug):
            raise _fail(
                source,
                f"role #{index}: slug {slug!r} must be lowercase letters, digits and '-'",
            )
        where = f"role '{slug}'"
        if slug in seen:
            raise _fail(source, f"{where}: duplicate slug")
        seen.add(slug)
        unknown = sorted(set(raw) - _ROLE_KEYS)
        if unknown:
            raise _fail(source, f"{where}: unknown key(s): {', '.join(unknown)}")
        fields: dict[str, Any] = {}
        for key in ("name_zh", "name_en"):
            if key in raw:
                value = raw[key]
                if not isinstance(value, str) or not value.strip():
                    raise _fail(source, f"{where}: '{key}' must be a non-empty string")
                fields[key] = value.strip()
        for key in ("aliases", "audience"):
            if key in raw:
                fields[key] = _str_list(source, where, key, raw[key])
        if "keywords" in raw:
            fields["keywords"] = _keywords(source, where, raw["keywords"])
        specs.append(_RoleSpec(slug, fields))
    return mode, specs


def _build_role(source: str, spec: _RoleSpec, base: Role | None) -> Role:
    where = f"role '{spec.slug}'"
    f = spec.fields
    if base is None:
        for key in ("name_zh", "name_en"):
            if key not in f:
                raise _fail(source, f"{where}: missing '{key}'")
        return Role(
            slug=spec.slug,
            name_zh=f["name_zh"],
            name_en=f["name_en"],
            aliases=f.get("aliases", ()),
            keywords={k: w for k, w in f.get("keywords", {}).items() if w != 0},
            audience=f.get("audience", ()),
        )
    # Extend an existing role: names replace, lists add, keyword weights override
    # (a weight of 0 removes a default keyword).
    keywords = dict(base.keywords)
    for term, weight in f.get("keywords", {}).items():
        if weight == 0:
            keywords.pop(term, None)
        else:
            keywords[term] = weight
    aliases = base.aliases + tuple(a for a in f.get("aliases", ()) if a not in base.aliases)
    audience = base.audience + tuple(a for a in f.get("audience", ()) if a not in base.audience)
    return Role(
        slug=base.slug,
        name_zh=f.get("name_zh", base.name_zh),
        name_en=f.get("name_en", base.name_en),
        aliases=aliases,
        keywords=keywords,
        audience=audience,
    )


def _check_unique_words(source: str, roles: tuple[Role, ...]) -> None:
    owner: dict[str, str] = {}
    for role in roles:
        for word in (role.slug, role.name_en, role.name_zh, *role.aliases):
            key = normalise_word(word)
            if not key:
                raise _fail(source, f"role '{role.slug}': empty alias or name")
            other = owner.get(key)
            if other is not None and other != role.slug:
                raise _fail(
                    source,
                    f"alias {word!r} is claimed by both role '{other}' and role '{role.slug}'",
                )
            owner[key] = role.slug


def _taxonomy_from_text(text: str, source: str, base: Taxonomy | None) -> Taxonomy:
    mode, specs = _parse_file(text, source)
    if base is None or mode == "replace":
        roles = [_build_role(source, spec, None) for spec in specs]
    else:
        by_slug = {r.slug: r for r in base.roles}
        order = list(by_slug)
        for spec in specs:
            by_slug[spec.slug] = _build_role(source, spec, by_slug.get(spec.slug))
            if spec.slug not in order:
                order.append(spec.slug)
        roles = [by_slug[s] for s in order]
    if not roles:
        raise _fail(source, "defines no roles")
    result = tuple(roles)
    _check_unique_words(source, result)
    return Taxonomy(result)


@functools.cache
def _default_taxonomy() -> Taxonomy:
    try:
        resource = resources.files("bot.classify").joinpath("data", "roles.toml")
        text = resource.read_text(encoding="utf-8")
        source = str(resource)
    except (OSError, TypeError, ValueError):  # e.g. an unusual import setup
        path = Path(__file__).with_name("data") / "roles.toml"
        text, source = path.read_text(encoding="utf-8"), str(path)
    return _taxonomy_from_text(text, source, None)


def load_taxonomy(path: Path | None = None) -> Taxonomy:
    """The default roles, or the default roles combined with a team file at `path`.

    Raises TaxonomyError (naming the file) when the file is missing or malformed.
    """
    default = _default_taxonomy()
    if path is None:
        return default
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _fail(source, "not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(source, f"cannot be read: {exc}") from None
    return _taxonomy_from_text(text, source, default)
