"""Typer classes for plain help text and one-line errors (the app's command and group)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup
from typer.models import CommandFunctionType

from bot.cli.runtime import CliError, say


class PlainGroup(TyperGroup):
    """Turns a CliError from any command into one line on stderr and its exit status."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:
            say(str(exc), logging.ERROR, "[red]prdigest:[/red] ")
            raise typer.Exit(exc.exit_code) from None


_REQUIRED_ARGUMENT = re.compile(r"^\{([A-Z_]+)\}")
_KEEP_HYPHEN = "\u2011"  # a non-breaking hyphen stands in for "-" while help is wrapped


@contextmanager
def _unbroken_hyphens(formatter: Any) -> Iterator[None]:
    """Text written inside has each KEEP_HYPHEN turned back into "-" once wrapped."""
    start = len(formatter.buffer)
    yield
    formatter.buffer[start:] = [p.replace(_KEEP_HYPHEN, "-") for p in formatter.buffer[start:]]


class PlainCommand(TyperCommand):
    """Help that names each argument by its metavar (`PATH`), without a type label, and
    wraps between words only (`--no-scheduler`, `2026-W48` are never split at a hyphen)."""

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        written = self.help
        self.help = written.replace("-", _KEEP_HYPHEN) if written else written
        try:
            with _unbroken_hyphens(formatter):
                super().format_help_text(ctx, formatter)
        finally:
            self.help = written

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        # A required argument reads as `QUERY...`, as in every man page, not `{QUERY}...`.
        return [_REQUIRED_ARGUMENT.sub(r"\1", piece) for piece in super().collect_usage_pieces(ctx)]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                arguments.append((param.metavar or param.name or "", param.help or ""))
            else:
                record = param.get_help_record(ctx)
                if record is not None:
                    options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                kept = [(term, text.replace("-", _KEEP_HYPHEN)) for term, text in rows]
                with formatter.section(title), _unbroken_hyphens(formatter):
                    formatter.write_dl(kept)


class PlainTyper(typer.Typer):
    """Every command of the app gets the plain help of `PlainCommand`."""

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or PlainCommand, **kwargs)
