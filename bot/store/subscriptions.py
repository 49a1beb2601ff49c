"""Subscriptions: which roles each reader follows (their filters and watches are in
`readers`)."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.domain import Verdict
from bot.store.clock import utcnow
from bot.store.engine import StorePart
from bot.store.locks import lock_reader
from bot.store.schema import subscriptions


class Subscriptions(StorePart):
    """Who follows which roles."""

    def subscribe(
        self,
        team_id: str,
        user_id: str,
        roles: Iterable[str],
        level: Verdict | None = None,
    ) -> list[str]:
        """Add roles to a user's subscriptions; returns the ones that were new.

        `level` is the least verdict wanted from the new ones (None: every note); an
        existing subscription keeps its filter (`Readers.set_level` changes it).
        """
        added: list[str] = []
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            have = self._user_roles(conn, team_id, user_id)
            for role in dict.fromkeys(roles):
                if role in have:
                    continue
                conn.execute(
                    subscriptions.insert().values(
                        team_id=team_id,
                        user_id=user_id,
                        role=role,
                        created_at=utcnow(),
                        min_verdict=level.value if level else None,
                    )
                )
                added.append(role)
        return added

    def unsubscribe(self, team_id: str, user_id: str, roles: Iterable[str] | None) -> list[str]:
        """Remove roles (all of them when `roles` is None); returns the ones removed."""
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            have = self._user_roles(conn, team_id, user_id)
            gone = have if roles is None else [r for r in dict.fromkeys(roles) if r in have]
            if gone:
                conn.execute(
                    subscriptions.delete().where(
                        subscriptions.c.team_id == team_id,
                        subscriptions.c.user_id == user_id,
                        subscriptions.c.role.in_(gone),
                    )
                )
        return list(gone)

    def subscriptions_of(self, team_id: str, user_id: str) -> list[str]:
        with self.engine.connect() as conn:
            return self._user_roles(conn, team_id, user_id)

    def all_subscriptions(self) -> dict[tuple[str, str], list[str]]:
        """(team, user) -> roles, for the weekly DMs."""
        out: dict[tuple[str, str], list[str]] = {}
        stmt = sa.select(subscriptions).order_by(
            subscriptions.c.team_id, subscriptions.c.user_id, subscriptions.c.created_at
        )
        with self.engine.connect() as conn:
            for row in conn.execute(stmt):
                out.setdefault((row.team_id, row.user_id), []).append(row.role)
        return out

    @staticmethod
    def _user_roles(conn: Connection, team_id: str, user_id: str) -> list[str]:
        stmt = (
            sa.select(subscriptions.c.role)
            .where(subscriptions.c.team_id == team_id, subscriptions.c.user_id == user_id)
            .order_by(subscriptions.c.created_at, subscriptions.c.role)
        )
        return list(conn.execute(stmt).scalars())
