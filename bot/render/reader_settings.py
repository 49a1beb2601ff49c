"""What a reader reads about their own DM settings: the reading budget (`/prdigest budget`),
their DM day, time and time zone (`/prdigest dm`), the closing line of a DM that holds more
notes than the budget, and the same settings on App Home.

Pure functions returning text, blocks or message dicts; nothing here talks to Slack.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time

from bot.render.blocks import MORE_ACTION_ID, Block, button, context_block, escaped
from bot.render.replies import Message, MorePage, confirm_reply, error_reply, message

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MAX_BUDGET = 20


@dataclass(frozen=True)
class DmTimes:
    """When a reader's DMs go out, as `/prdigest dm` and App Home show it: their own day
    and time (None: the team's schedule) in `zone`, and the next DM (None: DMs off)."""

    off: bool
    weekday: int | None
    at: time | None
    zone: str
    zone_from_slack: bool
    next_at: datetime | None
    paused_until: datetime | None = None
    due_now: bool = False  # `next_at` has passed and was not sent yet: the next tick sends it


def budget_text(budget: int) -> str:
    """ "up to 5 notes in full", or "every note in full" (0: no budget)."""
    if budget <= 0:
        return "every note in full"
    return f"up to {budget} note{'s' if budget != 1 else ''} in full"


def budget_usage_error(word: str) -> str:
    """`/prdigest budget` got something that is not a budget."""
    shown = f"`{escaped(word, 40)}` is not a budget" if word else "Say how many notes"
    return (
        f"{shown}: a number from 1 to {MAX_BUDGET} or `all`, e.g. `/prdigest budget 5`; "
        "`/prdigest budget default` goes back to the team's. Nothing was changed."
    )


def budget_reply(budget: int, own: bool, changed: bool) -> Message:
    """The reader's budget, shown (`changed` False) or just set."""
    whose = "your own" if own else "the team's default"
    rest = "" if budget <= 0 else "; the rest are counted under it, with a button that lists them"
    if changed:
        text = f"Your weekly DM now shows {budget_text(budget)}, best first ({whose}){rest}."
        return confirm_reply(text)
    text = (
        f"Your weekly DM shows {budget_text(budget)}, best first ({whose}){rest}. "
        f"`/prdigest budget 3`, `/prdigest budget all` or `/prdigest budget default` changes it."
    )
    return message(text)


def dm_usage_error(words: str) -> str:
    """`/prdigest dm` got something that is not a day and time, `on` or `off`."""
    shown = f"`{escaped(words, 60)}` is not a day and time" if words else "Name a day and a time"
    return (
        f"{shown}: e.g. `/prdigest dm mon 09:00` or `/prdigest dm 周二 7:30` (your own time "
        "zone, 24-hour clock), `/prdigest dm off`, `/prdigest dm on` or `/prdigest dm default`. "
        "Nothing was changed."
    )


def _moment(moment: datetime) -> str:
    return f"{WEEKDAYS[moment.weekday()][:3]} {moment:%Y-%m-%d %H:%M}"


def dm_times_text(times: DmTimes) -> str:
    """One line (mrkdwn): when the reader's DMs go out, and the next one."""
    if times.off:
        return (
            "Your weekly DMs are off (watches included); your subscriptions and watches "
            "stay. `/prdigest dm on` turns them back on."
        )
    source = "your Slack time zone" if times.zone_from_slack else "the team's time zone"
    zone = f"{escaped(times.zone, 64)}, {source}"
    if times.weekday is not None and times.at is not None:
        when = f"goes out on {WEEKDAYS[times.weekday]}s at {times.at:%H:%M} ({zone})"
    else:
        when = f"follows the team's schedule on your own clock ({zone})"
    if times.next_at is None:
        upcoming = ""
    elif times.due_now:
        upcoming = (
            f" This week's, due {_moment(times.next_at)}, goes out within a minute "
            "with what is new for you."
        )
    elif times.paused_until is not None:
        upcoming = f" Next, after your pause: {_moment(times.next_at)}."
    else:
        upcoming = f" Next: {_moment(times.next_at)}."
    return f"Your weekly DM {when}.{upcoming}"


DM_CHANGES = ("show", "set", "off", "on", "default")


def dm_reply(times: DmTimes, change: str, was_off: bool = False) -> Message:
    """`/prdigest dm`: the setting shown (`change` "show") or what a change did."""
    line = dm_times_text(times)
    if change == "show":
        hint = (
            ""
            if times.off
            else " `/prdigest dm tue 07:30` picks your own day and time; `/prdigest dm off` "
            "stops your DMs."
        )
        return message(line + hint)
    if change == "off" and was_off:
        return confirm_reply("Your weekly DMs were already off; nothing changed.")
    if change == "on" and not was_off:
        return confirm_reply(f"Your weekly DMs are on; nothing changed. {line}")
    if change == "off":
        return confirm_reply(
            "Weekly DMs stopped (watches included). Your subscriptions and watches stay; "
            "`/prdigest dm on` turns DMs back on."
        )
    again = " DMs are on again." if was_off else ""
    return confirm_reply(f"{line}{again}")


def left_out_blocks(count: int, budget: int, value: str) -> list[Block]:
    """A DM's closing line: how many more notes for the reader were left out (over their
    budget), with a button that lists them; `value` is what the button carries."""
    notes = "note" if count == 1 else "notes"
    text = (
        f"*另有 {count} 篇 / {count} more {notes} for you this week* — over your budget of "
        f"{budget} in full. The button lists them; `/prdigest week` shows the whole week, "
        "`/prdigest budget` changes the budget."
    )
    label = f"Show the {count} more" if count > 1 else "Show it"
    return [
        context_block(text),
        {
            "type": "actions",
            "block_id": "left-out",
            "elements": [button(label, MORE_ACTION_ID, value)],
        },
    ]


def left_out_value(run_key: str) -> str:
    """What the closing line's button carries: the DM whose left-out notes it lists."""
    return MorePage(run_key, 0, MorePage.LEFT_OUT).encode()


def left_out_title(week: str | None) -> str:
    return f"Also for you · {week}" if week else "Also for you this week"


def left_out_gone() -> Message:
    return error_reply("That button no longer works: `/prdigest week` shows the week.")


def home_settings_line(times: DmTimes, budget: int) -> str:
    """App Home: the reader's DM time and budget, and the commands that change them."""
    if times.off:
        return dm_times_text(times)
    return (
        f"{dm_times_text(times)} It shows {budget_text(budget)}, best first "
        "(`/prdigest dm`, `/prdigest budget`)."
    )
