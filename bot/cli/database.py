"""`prdigest copy-db`: copy every table to another database."""

from __future__ import annotations

from typing import Annotated

import typer

from bot.cli.runtime import CliError, DependencyError, open_services, out
from bot.config import check_database_url, masked_url
from bot.store import Store, StoreError


def copy_db(
    target_url: Annotated[
        str,
        typer.Argument(
            metavar="URL",
            help="SQLAlchemy URL of an empty database, e.g. postgresql+psycopg://…",
        ),
    ],
) -> None:
    """Copy notes, subscriptions and the delivery ledger into another (empty) database.

    For moving from SQLite to PostgreSQL: afterwards point PRDIGEST_DATABASE_URL at the
    target. Nothing already posted is posted again, because the ledger moves too.
    """
    try:
        target_url = check_database_url(target_url)
    except ValueError as exc:
        raise CliError(f"copy-db URL: {exc} (got {masked_url(target_url)!r})") from None
    with open_services() as services:
        try:
            target = Store.open(target_url, setting="the URL given to copy-db")
        except StoreError as exc:
            raise DependencyError(str(exc)) from None
        try:
            copied = services.store.copy_to(target)
        except StoreError as exc:
            raise CliError(str(exc)) from None
        finally:
            target.close()
    summary = ", ".join(f"{name} {count}" for name, count in copied.items())
    out.print(f"copied: {summary}", highlight=False, soft_wrap=True)
