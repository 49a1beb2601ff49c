"""Languages: the message catalogues (gettext, one per language: `locale/<code>/LC_MESSAGES/
prdigest.po`, compiled to `.mo`), the `Texts` that say a message in a reader's language, and
the rule that picks that language. `catalogues` rebuilds the catalogues from the code
(`python -m bot.i18n.catalogues`; needs Babel, a development dependency).

May import: `bot.domain` only.
"""
