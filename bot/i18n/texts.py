"""Saying a message in a reader's language.

Code names a message by its English text (the gettext message id) with named placeholders;
the catalogue of the language in effect says it. `Language.BOTH` is the bilingual form the
channel digest has always had: messages in English, except the few that the code marks to be
shown side by side (`Texts.side_by_side`: a verdict word, a digest heading).

The catalogues are compiled `.mo` files read with the standard library's `gettext` at run
time; `bot.i18n.catalogues` writes them from the `.po` sources.
"""

from __future__ import annotations

import enum
import functools
import gettext
from dataclasses import dataclass
from importlib import resources

from bot.domain import ReaderProfile, ReaderSettings, Role, Verdict

DOMAIN = "prdigest"
CHINESE_LOCALE_PREFIX = "zh"


class Language(enum.StrEnum):
    """What the bot writes in: Chinese, English, or both side by side."""

    ZH = "zh"
    EN = "en"
    BOTH = "both"


CATALOGUE_LANGUAGES = (Language.ZH, Language.EN)
"""The languages with a catalogue of their own (`BOTH` combines them)."""


@functools.cache
def catalogue(language: Language) -> gettext.GNUTranslations:
    """The compiled catalogue of `language`, read once from the package."""
    path = resources.files(__package__).joinpath(
        "locale", language.value, "LC_MESSAGES", f"{DOMAIN}.mo"
    )
    with path.open("rb") as compiled:
        return gettext.GNUTranslations(compiled)


@dataclass(frozen=True)
class LazyText:
    """A message decided before the reader's language is known (a parser's error): said
    later with `Texts.say`. Made with `lazy_text`, which the extraction knows."""

    message: str
    values: tuple[tuple[str, object], ...] = ()


def lazy_text(message: str, /, **values: object) -> LazyText:
    return LazyText(message, tuple(values.items()))


class Texts:
    """Messages in one language. Every method formats the message's `{name}` placeholders
    with `values` after looking it up, so a translation may move them around."""

    def __init__(self, language: Language) -> None:
        self.language = language

    def __repr__(self) -> str:
        return f"Texts({self.language.value!r})"

    @property
    def _words(self) -> gettext.GNUTranslations:
        return catalogue(Language.ZH if self.language is Language.ZH else Language.EN)

    def gettext(self, message: str, /, **values: object) -> str:
        return self._words.gettext(message).format(**values)

    def ngettext(self, singular: str, plural: str, n: int, /, **values: object) -> str:
        """The form for `n` (English: one or other; Chinese: one form for every count)."""
        return self._words.ngettext(singular, plural, n).format(**values)

    def pgettext(self, context: str, message: str, /, **values: object) -> str:
        """A message whose English is ambiguous, told apart by `context`."""
        return self._words.pgettext(context, message).format(**values)

    def side_by_side(self, message: str, /, both: str = "{zh} / {en}", **values: object) -> str:
        """One language's message, or in `BOTH` the two put together by `both` (`{zh}`
        and `{en}` stand for the two; "{zh}" alone keeps the Chinese)."""
        if self.language is not Language.BOTH:
            return self.gettext(message, **values)
        zh = catalogue(Language.ZH).gettext(message).format(**values)
        en = catalogue(Language.EN).gettext(message).format(**values)
        return both.format(zh=zh, en=en)

    def say(self, text: LazyText) -> str:
        return self.gettext(text.message, **dict(text.values))

    def role_name(self, role: Role, both: str = "{zh} / {en}") -> str:
        """A role's name from the roles file (not the catalogue: a team's file adds roles)."""
        if self.language is Language.ZH:
            return role.name_zh
        if self.language is Language.EN:
            return role.name_en
        return both.format(zh=role.name_zh, en=role.name_en)

    def verdict(self, verdict: Verdict) -> str:
        """The verdict word as a badge says it: 精读, deep, or 精读 deep in `BOTH`."""
        return self.side_by_side(VERDICT_WORDS[verdict], both="{zh} {en}")

    def verdict_word(self, verdict: Verdict) -> str:
        """The verdict word alone: 精读 or deep (`BOTH`: the English, as a fallback text)."""
        return self.gettext(VERDICT_WORDS[verdict])


def N_(message: str) -> str:
    """Marks a message id for extraction where it is written; it is looked up later."""
    return message


# The verdict words of badges and counts.
VERDICT_WORDS = {
    Verdict.DEEP: N_("deep"),
    Verdict.SKIM: N_("skim"),
    Verdict.SKIP: N_("skip"),
}


@functools.cache
def texts_for(language: Language | str) -> Texts:
    return Texts(Language(language))


def reader_language(
    settings: ReaderSettings, profile: ReaderProfile | None, default: Language
) -> Language:
    """A reader's language: their own choice (`/prdigest lang zh|en`), else what Slack says
    of them (a `zh-*` locale reads Chinese, any other English), else `default`
    (PRDIGEST_LANGUAGE), which is also what a reader gets while Slack was never reached."""
    if settings.language in (Language.ZH.value, Language.EN.value):
        return Language(settings.language)
    locale = (profile.locale if profile is not None else None) or ""
    if not locale.strip():
        return default
    folded = locale.strip().replace("_", "-").casefold()
    return Language.ZH if folded.split("-")[0] == CHINESE_LOCALE_PREFIX else Language.EN
