"""Reader roles: loading, validating and looking them up.

The defaults are ``bot/classify/data/roles.toml``, whose top documents the format. A team file
named by ``PRDIGEST_ROLES_FILE`` extends them (``mode = "extend"``) or replaces them.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import reprlib
import tomllib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, FiniteFloat, StringConstraints, ValidationError
from pydantic_core import ErrorDetails

from bot.domain import Role

__all__ = ["Taxonomy", "TaxonomyError", "load_taxonomy", "normalise_word"]


class TaxonomyError(ValueError):
    """A roles file is malformed; the message names the file and the problem."""


def normalise_word(word: str) -> str:
    """Fold a lookup word: NFKC, trimmed of whitespace and ``#``, case-folded."""
    return unicodedata.normalize("NFKC", word).strip().strip("#").strip().casefold()


def _words(role: Role) -> tuple[str, ...]:
    """The words a user may type for `role`."""
    return (role.slug, role.name_en, role.name_zh, *role.aliases)


@dataclass(frozen=True)
class Taxonomy:
    """An ordered set of reader roles with name/alias lookup."""

    roles: tuple[Role, ...]

    @functools.cached_property
    def digest(self) -> str:
        """sha256 of the roles: what a classifier built for this taxonomy depends on."""
        return hashlib.sha256(repr(self.roles).encode("utf-8")).hexdigest()

    @functools.cached_property
    def _lookup(self) -> dict[str, Role]:
        """Folded word -> role; the first role to claim a word keeps it."""
        lookup: dict[str, Role] = {}
        for role in self.roles:
            for word in _words(role):
                lookup.setdefault(normalise_word(word), role)
        lookup.pop("", None)
        return lookup

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(r.slug for r in self.roles)

    def get(self, slug: str) -> Role:
        """The role with this exact slug; KeyError if there is none."""
        return {r.slug: r for r in self.roles}[slug]

    def resolve(self, word: str) -> Role | None:
        """The role a user means by `word` (slug, alias or name), or None."""
        return self._lookup.get(normalise_word(word))

    def named_by(self, word: str) -> tuple[Role, str] | None:
        """The role `word` names and how it names it: "slug", "name" or "alias"."""
        role = self.resolve(word)
        if role is None:
            return None
        key = normalise_word(word)
        if key == normalise_word(role.slug):
            return role, "slug"
        if key in {normalise_word(a) for a in role.aliases}:
            return role, "alias"
        return role, "name"

    def resolve_all(self, words: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The slugs `words` name (each once, in order) and the words that name no role."""
        found = [(w, self.resolve(w)) for w in words]
        slugs = dict.fromkeys(r.slug for _, r in found if r is not None)
        return tuple(slugs), tuple(w for w, r in found if r is None)

    def suggest(self, word: str, n: int = 3) -> list[Role]:
        """Up to `n` roles whose names look most like `word` ("did you mean")."""
        key = normalise_word(word)
        if not key or n <= 0:
            return []
        score = dict.fromkeys(self.slugs, 0.0)
        for choice, role in self._lookup.items():
            ratio = difflib.SequenceMatcher(None, key, choice).ratio()
            score[role.slug] = max(ratio, score[role.slug])
        close = [role for role in self.roles if score[role.slug] >= 0.5]
        return sorted(close, key=lambda role: -score[role.slug])[:n]


# --------------------------------------------------------------------------- loading

_Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class _Entry(BaseModel):
    """One ``[[roles]]`` table as written (names may be absent when extending a role)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    slug: Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")]
    name_zh: _Text | None = None
    name_en: _Text | None = None
    aliases: list[_Text] = []
    audience: list[_Text] = []
    keywords: dict[_Text, FiniteFloat] = {}


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    mode: Literal["extend", "replace"] = "extend"
    version: object = None
    roles: list[_Entry] = []


_SAY = {  # by pydantic error type, where its own words would puzzle a roles file's author
    "string_pattern_mismatch": "must be lowercase letters, digits and '-' (at most 40)",
    "string_too_short": "must not be empty",
    "model_type": "must be a table",
    "dict_type": "must be a table",
    "list_type": "must be an array",
}


def _explain(error: ErrorDetails, data: dict[str, Any]) -> str:
    """One validation error as "role 'x': 'key' must be ..., not <value>"."""
    loc = [str(part) or '""' for part in error["loc"] if part != "[key]"]
    where = ""
    if loc[:1] == ["roles"] and len(loc) > 1:  # name the role by its slug, if it has one
        entry = data["roles"][int(loc[1])]
        slug = entry.get("slug") if isinstance(entry, dict) and loc[2:] != ["slug"] else None
        where = f"role '{slug}': " if isinstance(slug, str) else f"role #{int(loc[1]) + 1}: "
        loc = loc[2:]
    key, kind = ".".join(loc), error["type"]
    if kind == "missing":
        return f"{where}missing '{key}'"
    if kind == "extra_forbidden":
        return f"{where}unknown {'' if where else 'top-level '}key '{key}'"
    what = _SAY.get(kind) or error["msg"].replace("Input should be", "must be")
    return f"{where}{f'{key!r} ' if key else ''}{what}, not {reprlib.repr(error['input'])}"


def _fail(source: object, message: str) -> TaxonomyError:
    return TaxonomyError(f"roles file {source}: {message}")


def _load(source: Traversable, base: Taxonomy | None) -> Taxonomy:
    """The roles in file `source`, laid over `base` unless the file replaces them: names
    replace, aliases and audience phrases add, keyword weights override (0 removes one)."""
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
        parsed = _File.model_validate(data)
    except FileNotFoundError:
        raise _fail(source, "not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(source, f"cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise _fail(source, f"invalid TOML: {exc}") from None
    except ValidationError as exc:
        raise _fail(source, "; ".join(_explain(e, data) for e in exc.errors())) from None
    roles = {r.slug: r for r in base.roles} if base and parsed.mode == "extend" else {}
    for index, new in enumerate(parsed.roles):
        if new.slug in (e.slug for e in parsed.roles[:index]):
            raise _fail(source, f"role '{new.slug}': duplicate slug")
        old = roles.get(new.slug) or Role(new.slug, "", "")
        for key in ("name_zh", "name_en"):
            if not (getattr(new, key) or getattr(old, key)):
                raise _fail(source, f"role '{new.slug}': missing '{key}'")
        terms = {
            unicodedata.normalize("NFKC", t).strip().lower(): w for t, w in new.keywords.items()
        }
        roles[new.slug] = Role(
            slug=new.slug,
            name_zh=new.name_zh or old.name_zh,
            name_en=new.name_en or old.name_en,
            aliases=tuple(dict.fromkeys((*old.aliases, *new.aliases))),
            keywords={t: w for t, w in {**old.keywords, **terms}.items() if w != 0},
            audience=tuple(dict.fromkeys((*old.audience, *new.audience))),
        )
    if not roles:
        raise _fail(source, "defines no roles")
    taxonomy = Taxonomy(tuple(roles.values()))
    for role in taxonomy.roles:
        for word in _words(role):
            if (owner := taxonomy.resolve(word)) is None:
                raise _fail(source, f"role '{role.slug}': empty alias or name")
            if owner.slug != role.slug:
                claimed = f"role '{owner.slug}' and role '{role.slug}'"
                raise _fail(source, f"alias {word!r} is claimed by both {claimed}")
    return taxonomy


@functools.cache
def _default_taxonomy() -> Taxonomy:
    return _load(resources.files("bot.classify").joinpath("data", "roles.toml"), None)


def load_taxonomy(path: Path | None = None) -> Taxonomy:
    """The default roles, or the default roles combined with a team file at `path`.

    Raises TaxonomyError (naming the file) when the file is missing or malformed.
    """
    return _default_taxonomy() if path is None else _load(Path(path), _default_taxonomy())
