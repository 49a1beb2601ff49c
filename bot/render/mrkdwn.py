"""Slack mrkdwn text: user text escaped, links the bot makes, and one clipping rule.

Everything that comes from a note, a query, a role file or a button value is data: it is
clipped first, then escaped (`&`, `<`, `>`), so `<!channel>` or `<https://x|click>` in a
note shows as written and neither pings anyone nor becomes a link. Markup the bot makes
itself (links to a PR or a thread, entities, emoji codes) is never cut in half.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"

# What a cut must not split: a `<…>` link or mention, an entity, an emoji code.
_ATOM = re.compile(r"<[^<>]*>|&(?:amp|lt|gt);|:[a-z0-9_+-]+:|.", re.DOTALL)


def escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int, *, plain: bool = False) -> str:
    """`text` in at most `limit` characters, ending in "…" when it had to be cut.

    The cut falls between atoms (a whole link or mention, entity or emoji code, else a
    character), so clipping finished mrkdwn never leaves half a link or a broken `&amp;`.
    `plain`: the text is a `plain_text` field (a header, a button label), where nothing is
    markup, so any character boundary will do.
    """
    if len(text) <= limit:
        return text
    room = limit - len(ELLIPSIS)
    kept: list[str] = []
    used = 0
    for atom in text if plain else _ATOM.findall(text):
        if used + len(atom) > room:
            break
        kept.append(atom)
        used += len(atom)
    return "".join(kept).rstrip() + ELLIPSIS


def escaped(text: str, limit: int | None = None) -> str:
    """User text for mrkdwn: clipped so that it fits in `limit` characters once escaped,
    then escaped."""
    out = escape(text)
    if limit is None or len(out) <= limit:
        return out
    room = limit - len(ELLIPSIS)
    used = 0
    end = len(text)
    for index, char in enumerate(text):
        width = len(escape(char))
        if used + width > room:
            end = index
            break
        used += width
    return escape(text[:end].rstrip()) + ELLIPSIS


def link(url: str, label: str, limit: int) -> str:
    """A mrkdwn link the bot makes: `<url|label>`, the label user text clipped to `limit`."""
    target = escape(url).replace("|", "%7C")
    return f"<{target}|{escaped(' '.join(label.split()), limit)}>"
