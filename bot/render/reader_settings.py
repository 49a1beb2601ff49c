"""What a reader reads about their own DM settings: the reading budget (`/prdigest budget`),
their DM day, time and time zone (`/prdigest dm`), the closing line of a DM that holds more
notes than the budget, and the same settings on App Home, in the reader's language `t`.

Pure functions returning text, blocks or message dicts; nothing here talks to Slack.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time

from bot.i18n.texts import N_, LazyText, Texts, lazy_text
from bot.render.blocks import MORE_ACTION_ID, Block, button, context_block, escaped
from bot.render.replies import Message, MorePage, confirm_reply, error_reply, message, sentences

# A weekly day, as "goes out on Tuesdays at 07:30" says it (Monday is 0).
WEEKLY_DAYS = (
    N_("Mondays"),
    N_("Tuesdays"),
    N_("Wednesdays"),
    N_("Thursdays"),
    N_("Fridays"),
    N_("Saturdays"),
    N_("Sundays"),
)
# A day of a date, as "Next: Tue 2027-03-09 07:30" says it.
SHORT_DAYS = (N_("Mon"), N_("Tue"), N_("Wed"), N_("Thu"), N_("Fri"), N_("Sat"), N_("Sun"))
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


def budget_text(budget: int, t: Texts) -> str:
    """ "up to 5 notes in full", or "every note in full" (0: no budget)."""
    if budget <= 0:
        return t.gettext("every note in full")
    return t.ngettext(
        "up to {count} note in full", "up to {count} notes in full", budget, count=budget
    )


def budget_usage_error(word: str) -> LazyText:
    """`/prdigest budget` got something that is not a budget (said once the reader's
    language is known)."""
    return lazy_text(
        "`{word}` is not a budget: a number from 1 to {most} or `all`, e.g. "
        "`/prdigest budget 5`; `/prdigest budget default` goes back to the team's. "
        "Nothing was changed.",
        word=escaped(word, 40),
        most=MAX_BUDGET,
    )


def budget_reply(budget: int, own: bool, changed: bool, t: Texts) -> Message:
    """The reader's budget, shown (`changed` False) or just set."""
    whose = t.gettext("your own") if own else t.gettext("the team's default")
    amount = budget_text(budget, t)
    said = [
        t.gettext(
            "Your weekly DM now shows {amount}, best first ({whose}).", amount=amount, whose=whose
        )
        if changed
        else t.gettext(
            "Your weekly DM shows {amount}, best first ({whose}).", amount=amount, whose=whose
        )
    ]
    if budget > 0:
        said.append(t.gettext("The rest are counted at the end, with a button that lists them."))
    if changed:
        return confirm_reply(sentences(said, t))
    said.append(
        t.gettext(
            "`/prdigest budget 3`, `/prdigest budget all` or `/prdigest budget default` changes it."
        )
    )
    return message(sentences(said, t))


def dm_usage_error(words: str) -> LazyText:
    """`/prdigest dm` got something that is not a day and time, `on` or `off`."""
    return lazy_text(
        "`{words}` is not a day and time: e.g. `/prdigest dm mon 09:00` or "
        "`/prdigest dm 周二 7:30` (your own time zone, 24-hour clock), `/prdigest dm off`, "
        "`/prdigest dm on` or `/prdigest dm default`. Nothing was changed.",
        words=escaped(words, 60),
    )


def _moment(moment: datetime, t: Texts) -> str:
    # Translators: a DM's moment, "Tue 2027-03-09 07:30" ({day} is a short weekday).
    return t.gettext(
        "{day} {date} {time}",
        day=t.gettext(SHORT_DAYS[moment.weekday()]),
        date=f"{moment:%Y-%m-%d}",
        time=f"{moment:%H:%M}",
    )


def dm_times_text(times: DmTimes, t: Texts) -> str:
    """When the reader's DMs go out, and the next one (mrkdwn sentences)."""
    if times.off:
        return t.gettext(
            "Your weekly DMs are off (watches included); your subscriptions and watches "
            "stay. `/prdigest dm on` turns them back on."
        )
    shown = escaped(times.zone, 64)
    zone = (
        t.gettext("{zone}, your Slack time zone", zone=shown)
        if times.zone_from_slack
        else t.gettext("{zone}, the team's time zone", zone=shown)
    )
    if times.weekday is not None and times.at is not None:
        when = t.gettext(
            "Your weekly DM goes out on {days} at {time} ({zone}).",
            days=t.gettext(WEEKLY_DAYS[times.weekday]),
            time=f"{times.at:%H:%M}",
            zone=zone,
        )
    else:
        when = t.gettext(
            "Your weekly DM follows the team's schedule on your own clock ({zone}).", zone=zone
        )
    if times.next_at is None:
        return when
    moment = _moment(times.next_at, t)
    if times.due_now:
        upcoming = t.gettext(
            "This week's, due {moment}, goes out within a minute with what is new for you.",
            moment=moment,
        )
    elif times.paused_until is not None:
        upcoming = t.gettext("Next, after your pause: {moment}.", moment=moment)
    else:
        upcoming = t.gettext("Next: {moment}.", moment=moment)
    return sentences([when, upcoming], t)


DM_CHANGES = ("show", "set", "off", "on", "default")


def dm_reply(times: DmTimes, change: str, t: Texts, was_off: bool = False) -> Message:
    """`/prdigest dm`: the setting shown (`change` "show") or what a change did."""
    line = dm_times_text(times, t)
    if change == "show":
        if times.off:
            return message(line)
        hint = t.gettext(
            "`/prdigest dm tue 07:30` picks your own day and time; `/prdigest dm off` "
            "stops your DMs."
        )
        return message(sentences([line, hint], t))
    if change == "off" and was_off:
        return confirm_reply(t.gettext("Your weekly DMs were already off; nothing changed."))
    if change == "on" and not was_off:
        done = t.gettext("Your weekly DMs are on; nothing changed.")
        return confirm_reply(sentences([done, line], t))
    if change == "off":
        return confirm_reply(
            t.gettext(
                "Weekly DMs stopped (watches included). Your subscriptions and watches stay; "
                "`/prdigest dm on` turns DMs back on."
            )
        )
    if was_off:
        return confirm_reply(sentences([line, t.gettext("DMs are on again.")], t))
    return confirm_reply(line)


def left_out_blocks(count: int, budget: int, value: str, t: Texts) -> list[Block]:
    """A DM's closing line: how many more notes for the reader were left out (over their
    budget), with a button that lists them; `value` is what the button carries."""
    text = t.ngettext(
        "*{count} more note for you this week* — over your budget of {budget} in full. "
        "The button shows it; `/prdigest week` shows the whole week, `/prdigest budget` "
        "changes the budget.",
        "*{count} more notes for you this week* — over your budget of {budget} in full. "
        "The button lists them; `/prdigest week` shows the whole week, `/prdigest budget` "
        "changes the budget.",
        count,
        count=count,
        budget=budget,
    )
    # One note is shown, several are listed: two messages, not two forms of one.
    label = t.gettext("Show the {count} more", count=count) if count > 1 else t.gettext("Show it")
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


def left_out_title(week: str | None, t: Texts) -> str:
    if week:
        return t.gettext("Also for you · {week}", week=week)
    return t.gettext("Also for you this week")


def left_out_gone(t: Texts) -> Message:
    return error_reply(t.gettext("That button no longer works: `/prdigest week` shows the week."))


def home_settings_line(times: DmTimes, budget: int, t: Texts) -> str:
    """App Home: the reader's DM time and budget, and the commands that change them."""
    if times.off:
        return dm_times_text(times, t)
    shows = t.gettext(
        "It shows {amount}, best first (`/prdigest dm`, `/prdigest budget`).",
        amount=budget_text(budget, t),
    )
    return sentences([dm_times_text(times, t), shows], t)
