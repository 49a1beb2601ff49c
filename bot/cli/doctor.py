"""`prdigest doctor`: check settings, database, Slack and notes."""

from __future__ import annotations

import typer

from bot.cli.runtime import out
from bot.notes.digest import now_utc


def doctor() -> None:
    """Check settings, database, Slack token, scopes and channel, note files and schedule.

    One line per check: ok, or FAIL with what to do. Changes nothing. Exits 0 when every
    check passes, 1 otherwise.
    """
    from rich.text import Text

    from bot.ops.doctor import FAIL, OK, run_checks

    failed = False
    styles = {OK: "green", FAIL: "bold red"}
    for check in run_checks(now_utc()):
        failed = failed or check.failed
        line = Text.assemble(
            (f"{check.status:<4}", styles.get(check.status, "dim")),
            f"  {check.name:<14}{check.detail}",
        )
        out.print(line, soft_wrap=True, highlight=False)
    if failed:
        raise typer.Exit(1)
