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


# -- reading mrkdwn back as a person sees it in Slack (`prdigest post --dry-run`) ----------

_CODE = re.compile(r"```.*?```|`[^`\n]+`", re.DOTALL)
_ANGLE = re.compile(r"<([^<>\n]*)>")
# Slack's emphasis: a marker after a start, a space or punctuation, touching the text it
# wraps, closed on the same line before an end, a space or punctuation.
_EMPHASIS = re.compile(r"(?<![\w*_~])([*_~])(?=\S)([^\n]*?\S)\1(?![\w*_~])")
_STYLES = {"*": "bold", "_": "italic", "~": "strike"}
_SPECIAL = {"here": "@here", "channel": "@channel", "everyone": "@everyone"}


def unescape(text: str) -> str:
    """The text a reader sees for escaped mrkdwn: `&lt;` `&gt;` `&amp;` decoded (last)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _angle_text(match: re.Match[str]) -> str:
    """A `<…>` token as Slack shows it: a link's label and where it goes, a mention's name."""
    target, _, label = match[1].partition("|")
    if target.startswith("@"):
        return f"@{label or target[1:]}"
    if target.startswith("#"):
        return f"#{label or target[1:]}"
    if target.startswith("!"):
        name = target[1:].split("^", 1)[0]
        return label or _SPECIAL.get(name, f"@{name}")
    if label and label != target:
        return f"{label} ({target})"
    return target


def readable(mrkdwn: str) -> list[tuple[str, str]]:
    """mrkdwn as a person reads it in Slack, as (text, style) pieces: style is "", "bold",
    "italic", "strike" or "code". Links show as `label (url)`, mentions as `@name` or
    `#channel`, emphasis markers are dropped for the style, entities are decoded; code keeps
    its backticks and is taken as written."""
    pieces: list[tuple[str, str]] = []
    start = 0
    for code in _CODE.finditer(mrkdwn):
        pieces += _emphasised(mrkdwn[start : code.start()])
        pieces.append((unescape(code[0]), "code"))
        start = code.end()
    pieces += _emphasised(mrkdwn[start:])
    return [(text, style) for text, style in pieces if text]


def _emphasised(text: str) -> list[tuple[str, str]]:
    text = _ANGLE.sub(_angle_text, text)
    pieces: list[tuple[str, str]] = []
    start = 0
    for match in _EMPHASIS.finditer(text):
        pieces.append((unescape(text[start : match.start()]), ""))
        pieces.append((unescape(match[2]), _STYLES[match[1]]))
        start = match.end()
    pieces.append((unescape(text[start:]), ""))
    return pieces


def plain(mrkdwn: str) -> str:
    """mrkdwn as the plain text a person reads in Slack (see `readable`)."""
    return "".join(text for text, _ in readable(mrkdwn))
