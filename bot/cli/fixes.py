"""Commands that correct notes: fix, reclassify."""

from __future__ import annotations

import getpass
import logging
from typing import Annotated

import typer

from bot.cli.runtime import CliError, open_services, out, say
from bot.domain import Verdict


def _verdict_option(value: str | None) -> Verdict | None:
    if value is None:
        return None
    try:
        return Verdict(value.strip().lower())
    except ValueError:
        raise CliError(f"--verdict: expected deep, skim or skip, not {value!r}") from None


def fix(
    note_id: Annotated[
        str,
        typer.Argument(
            metavar="NOTE_ID",
            help="The note's id as `prdigest notes` and `lookup` show it (12 or #12).",
        ),
    ],
    roles: Annotated[
        str,
        typer.Option("--roles", metavar="ROLES", help="Comma-separated roles (slugs or aliases)."),
    ],
    primary: Annotated[
        str | None,
        typer.Option("--primary", metavar="ROLE", help="The primary role (default: the first)."),
    ] = None,
    verdict: Annotated[
        str | None,
        typer.Option(
            "--verdict", metavar="VERDICT", help="deep, skim or skip (default: the classifier's)."
        ),
    ] = None,
) -> None:
    """Correct a note's roles, primary role and verdict: the fix wins over the classifier
    and survives re-ingestion and re-classification. A note already posted is updated in
    its digest thread by the next `prdigest post` or scheduled run.
    """
    from bot.readers.corrections import FixError, fix_note

    number = note_id.strip().removeprefix("#")
    if not number.isdigit():
        raise CliError(f"NOTE_ID: expected a number such as 12, not {note_id!r}")
    chosen = _verdict_option(verdict)
    words = [w.strip() for w in roles.split(",") if w.strip()]
    with open_services() as services:
        try:
            result = fix_note(
                services, int(number), words, primary, chosen, f"cli:{getpass.getuser()}"[:64]
            )
        except FixError as exc:
            raise CliError(str(exc)) from None
    before, after = result.before, result.after
    out.print(
        f"fixed note #{after.id} {after.title!r}: "
        f"{'/'.join(before.roles)} {before.verdict.value} → "
        f"{'/'.join(after.roles)} {after.verdict.value} (primary {after.primary_role})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def reclassify(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; store nothing.")
    ] = False,
) -> None:
    """Run the classifier over every stored note again and print what changes; fixes
    stay. `serve` and `post` do this on start when the roles file or the rules changed.
    With PRDIGEST_LLM_URL the model server reads the notes it should (a stored reading
    of an unchanged note makes no request; --dry-run asks nothing).
    """
    from bot.llm_reader import build_reader
    from bot.readers.corrections import reclassify as run_reclassify

    with open_services() as services:
        # A dry run asks the model server nothing: it shows what stored readings give.
        reader = build_reader(
            services.settings, services.store, services.taxonomy, requests=not dry_run
        )
        changes = run_reclassify(
            services,
            dry_run=dry_run,
            reader=reader,
            on_change=lambda c: out.print(
                c.describe() + (" (fixed)" if c.fixed else ""),
                highlight=False,
                markup=False,
                soft_wrap=True,
            ),
        )
        if reader is not None:
            problem = reader.finish()
            say(reader.stats.summary(reader.read_by))
            if problem is not None:
                say(problem, logging.WARNING, "[yellow]prdigest:[/yellow] ")
    verb = "would change" if dry_run else "changed"
    out.print(f"{len(changes)} notes {verb}", highlight=False)
