"""The picture of a digest in README.md: the sample week as Slack shows it.

    .venv/bin/python -m tests.bench.digest_picture        # writes deploy/img/digest.png

Ingests the sample notes (digests/, copied to a temporary folder) into a temporary store,
takes the Block Kit messages `prdigest post --dry-run --json` would post, lays out the parent
message and one role's thread reply as an HTML page in Slack's message style (header,
sections, context, dividers, buttons; mrkdwn bold, italics, links, code and quotes), and
screenshots it with headless Chromium. Needs `chromium` with CJK and emoji fonts on PATH
(Debian: `apt-get install chromium fonts-noto-cjk fonts-noto-color-emoji`). `--html PATH`
writes the page only, without a browser.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "deploy" / "img" / "digest.png"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")

Block = dict[str, Any]

# The emoji the bot's messages use, as Slack draws them.
EMOJI = {
    "large_green_circle": "\U0001f7e2",
    "large_yellow_circle": "\U0001f7e1",
    "white_circle": "\u26aa",
    "pencil2": "\u270f\ufe0f",
    "warning": "\u26a0\ufe0f",
    "white_check_mark": "\u2705",
    "double_vertical_bar": "\u23f8\ufe0f",
}

# Slack's inline marks: opened after a space or line start, closed before a space, line end
# or punctuation, never around white space.
_MARKS = (
    ("*", "b"),
    ("_", "i"),
    ("~", "s"),
)
_CONTROL = re.compile(r"<([^<>]*)>")
_CODE = re.compile(r"`([^`\n]+)`")
_EMOJI = re.compile(r":([a-z0-9_+-]+):")
_SLOT = "\x00{}\x00"


def _mark(symbol: str) -> re.Pattern[str]:
    s = re.escape(symbol)
    return re.compile(rf"(?<![^\s(\[\x00])({s})(?=\S)([^{s}\n]*?\S)\1(?=[\s.,;:!?)\]\x00]|$)")


_MARK_PATTERNS = [(_mark(symbol), tag) for symbol, tag in _MARKS]


def _control_html(inner: str, label_html: Callable[[str], str]) -> str:
    """A `<...>` sequence: a link (`<url|label>`, `<url>`), a mention or a special word."""
    target, _, label = inner.partition("|")
    if target.startswith(("@", "#")):
        return f'<span class="mention">{target[0]}{label_html(label or target[1:])}</span>'
    if target.startswith("!"):
        return f'<span class="mention">@{label_html(label or target[1:])}</span>'
    href = target.replace('"', "&quot;")
    return f'<a href="{href}">{label_html(label or target)}</a>'


def inline_html(text: str) -> str:
    """One line of mrkdwn as HTML. Slack's text is already entity-escaped (`&amp;`, `&lt;`,
    `&gt;`), which is HTML's escaping too, so it is kept; raw `<` and `>` only open and close
    links and mentions."""
    slots: list[str] = []

    def hold(piece: str) -> str:
        slots.append(piece)
        return _SLOT.format(len(slots) - 1)

    text = _CONTROL.sub(lambda m: hold(_control_html(m[1], inline_html)), text)
    text = _CODE.sub(lambda m: hold(f"<code>{_plain(m[1])}</code>"), text)
    text = _EMOJI.sub(lambda m: hold(EMOJI[m[1]]) if m[1] in EMOJI else m[0], text)
    text = _plain(text)
    for pattern, tag in _MARK_PATTERNS:
        text = pattern.sub(lambda m, tag=tag: f"<{tag}>{m[2]}</{tag}>", text)
    return re.sub("\x00([0-9]+)\x00", lambda m: slots[int(m[1])], text)


def _plain(text: str) -> str:
    """Text already escaped for Slack, made safe for HTML: a stray `<` or `>` is escaped,
    an entity is kept."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def mrkdwn_html(text: str) -> str:
    """A mrkdwn text as HTML: lines kept, `>` lines as one quote."""
    out: list[str] = []
    quote: list[str] = []
    for line in text.split("\n"):
        if line.startswith(">"):
            quote.append(inline_html(line[1:].removeprefix(" ")))
            continue
        if quote:
            out.append(f"<blockquote>{'<br>'.join(quote)}</blockquote>")
            quote = []
        out.append(inline_html(line) + "<br>")
    if quote:
        out.append(f"<blockquote>{'<br>'.join(quote)}</blockquote>")
    joined = "".join(out)
    return joined.removesuffix("<br>")


def text_html(obj: Block) -> str:
    """A text object: mrkdwn is rendered, plain_text shown as written."""
    if obj.get("type") == "mrkdwn":
        return mrkdwn_html(str(obj["text"]))
    return html.escape(str(obj["text"]), quote=False)


def element_html(element: Block) -> str:
    """A block element: a button, an overflow menu (its ⋮), a select, an image."""
    kind = element.get("type")
    if kind == "button":
        style = element.get("style", "")
        return f'<span class="button {style}">{text_html(element["text"])}</span>'
    if kind == "overflow":
        return '<span class="overflow">&#8942;</span>'
    if kind in ("static_select", "multi_static_select"):
        placeholder = element.get("placeholder") or {"type": "plain_text", "text": "Select"}
        return f'<span class="select">{text_html(placeholder)} &#9662;</span>'
    if kind == "image":
        return f'<img class="inline" src="{html.escape(element["image_url"])}" alt="">'
    if kind in ("mrkdwn", "plain_text"):
        return text_html(element)
    raise ValueError(f"no picture for a {kind!r} element; add it to tests/bench/digest_picture.py")


def block_html(block: Block) -> str:
    """One Block Kit block in Slack's look."""
    kind = block.get("type")
    if kind == "header":
        return f'<div class="header">{text_html(block["text"])}</div>'
    if kind == "section":
        parts = [f'<div class="text">{text_html(block["text"])}</div>'] if "text" in block else []
        if block.get("fields"):
            cells = "".join(f"<div>{text_html(f)}</div>" for f in block["fields"])
            parts.append(f'<div class="fields">{cells}</div>')
        if "accessory" in block:
            parts.append(f'<div class="accessory">{element_html(block["accessory"])}</div>')
        return f'<div class="section">{"".join(parts)}</div>'
    if kind == "context":
        items = " ".join(f"<span>{element_html(e)}</span>" for e in block["elements"])
        return f'<div class="context">{items}</div>'
    if kind == "divider":
        return '<hr class="divider">'
    if kind == "actions":
        return f'<div class="actions">{"".join(element_html(e) for e in block["elements"])}</div>'
    raise ValueError(f"no picture for a {kind!r} block; add it to tests/bench/digest_picture.py")


def message_html(message: Block, time: str) -> str:
    """A message of the bot as it stands in a channel or a thread."""
    blocks = "".join(block_html(b) for b in message["blocks"])
    return (
        '<div class="message"><div class="avatar">pr</div><div class="body">'
        f'<div class="meta"><b>prdigest</b><span class="app">APP</span>'
        f'<span class="time">{html.escape(time)}</span></div>{blocks}</div></div>'
    )


STYLE = """
body { margin: 0; background: #fff; color: #1d1c1d;
  font: 15px/1.46668 Lato, "Helvetica Neue", "Liberation Sans", Arial, "Noto Sans CJK SC",
  "Noto Color Emoji", sans-serif; }
.pane { border: 1px solid #ddd; border-radius: 8px; margin: 12px; overflow: hidden; }
.bar { padding: 10px 20px; border-bottom: 1px solid #ddd; font-weight: 900; font-size: 18px; }
.bar small { font-weight: 400; font-size: 13px; color: #616061; margin-left: 8px; }
.message { display: flex; padding: 8px 20px; }
.avatar { flex: none; width: 36px; height: 36px; border-radius: 6px; margin-right: 8px;
  background: #4a154b; color: #fff; font-weight: 900; text-align: center; line-height: 36px; }
.body { flex: 1; min-width: 0; }
.meta b { font-weight: 900; }
.app { background: #e8e8e8; color: #616061; font-size: 10px; font-weight: 700;
  border-radius: 2px; padding: 1px 3px; margin: 0 6px; vertical-align: 2px; }
.time { color: #616061; font-size: 12px; }
.header { font-size: 18px; font-weight: 900; margin: 4px 0 6px; }
.section { display: flex; margin: 6px 0; }
.section .text { flex: 1; min-width: 0; overflow-wrap: anywhere; }
.accessory { margin-left: 12px; }
.fields { display: grid; grid-template-columns: 1fr 1fr; gap: 4px 16px; }
.context { color: #616061; font-size: 13px; margin: 6px 0; }
.divider { border: 0; border-top: 1px solid #ddd; margin: 10px 0; }
.actions { margin: 8px 0; }
b { font-weight: 900; }
a { color: #1264a3; text-decoration: none; }
code { font: 12px/1.5 Monaco, Menlo, "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace;
  color: #e01e5a; background: #f8f8f8; border: 1px solid #e1e1e1; border-radius: 3px;
  padding: 1px 3px; }
blockquote { margin: 2px 0; padding-left: 12px; border-left: 4px solid #ddd; }
.mention { color: #1264a3; background: #e8f5fa; border-radius: 3px; padding: 0 2px; }
.button { display: inline-block; border: 1px solid #bbb; border-radius: 4px;
  padding: 0 12px; line-height: 28px; font-weight: 700; font-size: 14px; margin-right: 8px; }
.button.primary { background: #007a5a; border-color: #007a5a; color: #fff; }
.overflow { display: inline-block; width: 28px; height: 28px; line-height: 28px;
  border: 1px solid #ddd; border-radius: 4px; text-align: center; color: #616061; }
.select { display: inline-block; border: 1px solid #bbb; border-radius: 4px; padding: 0 10px;
  line-height: 28px; }
.replies { margin: -2px 20px 10px 64px; font-size: 13px; color: #616061; }
.replies a { font-weight: 700; margin-right: 6px; }
"""

# Sets the page's height where --dump-dom can read it, so the screenshot fits the page.
MEASURE = (
    "<script>addEventListener('load', () => "
    "document.body.dataset.height = document.documentElement.scrollHeight)</script>"
)


def page_html(parent: Block, reply: Block, replies: int, time: str = "9:00 AM") -> str:
    """The channel with the digest's parent message, and one of its thread replies."""
    channel = html.escape(str(parent.get("channel", "#digest-channel")).lstrip("#"))
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><style>{STYLE}</style></head><body>'
        f'<div class="pane"><div class="bar"># {channel}</div>{message_html(parent, time)}'
        f'<div class="replies"><a>{replies} replies</a>Last reply today at {time}</div></div>'
        f'<div class="pane"><div class="bar">Thread<small># {channel}</small></div>'
        f"{message_html(reply, time)}</div>{MEASURE}</body></html>"
    )


def digest_messages(notes: Path) -> list[Block]:
    """The messages `prdigest post --dry-run --json` would post for the note files in
    `notes`, from a temporary store (no token, no channel: nothing is sent)."""
    script = Path(sys.executable).with_name("prdigest")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        folder.mkdir()
        # The sample notes are never posted, so the picture's week is the same notes written
        # as a team's own (under a team's repository line), as a team's first digest shows them.
        for path in sorted(notes.glob("*.txt")):
            _, rest = path.read_text(encoding="utf-8").split("\n", 1)
            (folder / path.name).write_text(f"example-team/vllm\n{rest}", encoding="utf-8")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))},
            "PRDIGEST_DATABASE_URL": f"sqlite:///{Path(tmp) / 'picture.db'}",
            "PRDIGEST_DIGESTS_DIR": str(folder),
        }
        for args in (["ingest"], ["post", "--dry-run", "--json"]):
            done = subprocess.run(
                [str(script), *args], cwd=tmp, env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"prdigest {' '.join(args)} failed:\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def pick(messages: list[Block], role: str | None) -> tuple[Block, Block, int]:
    """The parent message, the first reply of `role`'s thread (default: the first thread),
    and how many thread replies there are."""
    parts = {m["part"]: m for m in messages}
    replies = [m for m in messages if str(m["part"]).startswith("role:")]
    if "parent" not in parts or not replies:
        raise SystemExit(f"no digest to draw: the messages were {list(parts)}")
    if role is None:
        return parts["parent"], replies[0], len(replies)
    wanted = [m for m in replies if str(m["part"]).startswith(f"role:{role}:")]
    if not wanted:
        roles = sorted({str(m["part"]).split(":")[1] for m in replies})
        raise SystemExit(f"no thread for role {role!r}; the threads are {', '.join(roles)}")
    return parts["parent"], wanted[0], len(replies)


def chromium(binary: str, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium that asks the network for nothing of its own."""
    flags = [
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]
    if os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses to run as root inside its sandbox
    return subprocess.run(
        [binary, *flags, *args], capture_output=True, text=True, timeout=120, check=True
    )


def screenshot(page: Path, out: Path, binary: str, width: int, scale: float) -> None:
    """`page` at `width` CSS pixels, as tall as its content, into the PNG `out`."""
    with tempfile.TemporaryDirectory() as profile:
        dom = chromium(binary, profile, f"--window-size={width},800", "--dump-dom", page.as_uri())
        found = re.search(r'data-height="([0-9]+)"', dom.stdout)
        if not found:
            raise SystemExit("Chromium did not report the page's height")
        height = int(found[1])
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        chromium(
            binary,
            profile,
            f"--window-size={width},{height}",
            f"--force-device-scale-factor={scale}",
            f"--screenshot={out}",
            page.as_uri(),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=Path, default=ROOT / "digests", help="note files")
    parser.add_argument("--role", help="the thread to show (a role slug; default the first)")
    parser.add_argument("--out", type=Path, default=PICTURE, help="the PNG to write")
    parser.add_argument("--html", type=Path, help="write the page here and take no screenshot")
    parser.add_argument("--width", type=int, default=760, help="page width in CSS pixels")
    parser.add_argument("--scale", type=float, default=2, help="device pixels per CSS pixel")
    parser.add_argument("--browser", help="Chromium's executable (default: found on PATH)")
    args = parser.parse_args()

    parent, reply, replies = pick(digest_messages(args.notes), args.role)
    page = page_html(parent, reply, replies)
    if args.html:
        args.html.write_text(page, encoding="utf-8")
        print(f"wrote {args.html}")
        return
    binary = args.browser or next(filter(None, map(shutil.which, BROWSERS)), None)
    if binary is None:
        raise SystemExit("no Chromium on PATH: install chromium, or name it with --browser")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "digest.html"
        path.write_text(page, encoding="utf-8")
        screenshot(path, args.out, binary, args.width, args.scale)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
