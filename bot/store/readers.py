"""Readers' preferences beyond plain role subscriptions: verdict filters, saved searches
(`watch`) and pauses. The weekly DM planner reads them all at once with `all_readers`."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from bot.domain import Pause, Reader, ReaderProfile, ReaderSettings, RoleSubscription, Verdict
from bot.store.clock import utcnow
from bot.store.locks import lock_reader
from bot.store.schema import pauses, reader_profiles, reader_settings, subscriptions, watches

MAX_WATCHES = 20  # saved searches per reader

# Every change below that reads before it writes (a limit, "already there", the start of
# a pause) takes the reader's lock first (`lock_reader`), so commands from one reader that
# arrive at once take turns instead of both acting on what they read.


class WatchOutcome(enum.StrEnum):
    ADDED = "added"
    EXISTS = "exists"
    FULL = "full"


def watch_key(query: str) -> str:
    """Two spellings of one search are one watch: case and spacing do not count."""
    return " ".join(query.casefold().split())


def _level(value: str | None) -> Verdict | None:
    return Verdict(value) if value else None


class Readers:
    """Verdict filters, watches and pauses on the store's engine (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- verdict filters ---------------------------------------------------------------

    def set_level(
        self, team_id: str, user_id: str, roles: Iterable[str], level: Verdict | None
    ) -> list[str]:
        """Change the filter of existing subscriptions; returns the roles that changed."""
        value = level.value if level else None
        changed: list[str] = []
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            for sub in self._role_subscriptions(conn, team_id, user_id):
                if sub.role in roles and sub.level != level:
                    conn.execute(
                        subscriptions.update()
                        .where(
                            subscriptions.c.team_id == team_id,
                            subscriptions.c.user_id == user_id,
                            subscriptions.c.role == sub.role,
                        )
                        .values(min_verdict=value)
                    )
                    changed.append(sub.role)
        return changed

    def role_subscriptions(self, team_id: str, user_id: str) -> list[RoleSubscription]:
        with self.engine.connect() as conn:
            return self._role_subscriptions(conn, team_id, user_id)

    @staticmethod
    def _role_subscriptions(conn: Connection, team_id: str, user_id: str) -> list[RoleSubscription]:
        stmt = (
            sa.select(subscriptions.c.role, subscriptions.c.min_verdict)
            .where(subscriptions.c.team_id == team_id, subscriptions.c.user_id == user_id)
            .order_by(subscriptions.c.created_at, subscriptions.c.role)
        )
        return [RoleSubscription(r.role, _level(r.min_verdict)) for r in conn.execute(stmt)]

    # -- watches -----------------------------------------------------------------------

    def watch(self, team_id: str, user_id: str, query: str) -> WatchOutcome:
        """Save a search, unless the reader has it or has MAX_WATCHES already."""
        key = watch_key(query)
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            have = self._watch_keys(conn, team_id, user_id)
            if key in have:
                return WatchOutcome.EXISTS
            if len(have) >= MAX_WATCHES:
                return WatchOutcome.FULL
            conn.execute(
                watches.insert().values(
                    team_id=team_id,
                    user_id=user_id,
                    query_key=key,
                    query=query,
                    created_at=utcnow(),
                )
            )
        return WatchOutcome.ADDED

    def unwatch(self, team_id: str, user_id: str, query: str | None) -> list[str]:
        """Remove one watch (by its text, any case), or all when `query` is None."""
        stmt = watches.delete().where(watches.c.team_id == team_id, watches.c.user_id == user_id)
        if query is not None:
            stmt = stmt.where(watches.c.query_key == watch_key(query))
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            gone = self._watches(
                conn, team_id, user_id, None if query is None else watch_key(query)
            )
            if gone:
                conn.execute(stmt)
        return gone

    def watches_of(self, team_id: str, user_id: str) -> list[str]:
        with self.engine.connect() as conn:
            return self._watches(conn, team_id, user_id)

    @staticmethod
    def _watches(conn: Connection, team_id: str, user_id: str, key: str | None = None) -> list[str]:
        stmt = (
            sa.select(watches.c.query)
            .where(watches.c.team_id == team_id, watches.c.user_id == user_id)
            .order_by(watches.c.id)
        )
        if key is not None:
            stmt = stmt.where(watches.c.query_key == key)
        return list(conn.execute(stmt).scalars())

    @staticmethod
    def _watch_keys(conn: Connection, team_id: str, user_id: str) -> list[str]:
        stmt = sa.select(watches.c.query_key).where(
            watches.c.team_id == team_id, watches.c.user_id == user_id
        )
        return list(conn.execute(stmt).scalars())

    # -- pauses ------------------------------------------------------------------------

    def pause(self, team_id: str, user_id: str, now: datetime, until: datetime) -> Pause:
        """Pause a reader from `now` until `until`; returns the pause as stored.

        Pausing again while paused moves the end and keeps the start, so the notes of the
        whole absence are offered afterwards.
        """
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            current = self._pause(conn, team_id, user_id)
            started = current.started_at if current is not None and current.active(now) else now
            conn.execute(
                pauses.delete().where(pauses.c.team_id == team_id, pauses.c.user_id == user_id)
            )
            conn.execute(
                pauses.insert().values(
                    team_id=team_id, user_id=user_id, started_at=started, until=until
                )
            )
        return Pause(started.astimezone(UTC), until.astimezone(UTC))  # as stored

    def resume(self, team_id: str, user_id: str, now: datetime) -> Pause | None:
        """End an active pause now; returns it as ended, or None when there was none."""
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            current = self._pause(conn, team_id, user_id)
            if current is None or not current.active(now):
                return None
            conn.execute(
                pauses.update()
                .where(pauses.c.team_id == team_id, pauses.c.user_id == user_id)
                .values(until=now)
            )
        return Pause(current.started_at, now)

    def pause_of(self, team_id: str, user_id: str) -> Pause | None:
        with self.engine.connect() as conn:
            return self._pause(conn, team_id, user_id)

    @staticmethod
    def _pause(conn: Connection, team_id: str, user_id: str) -> Pause | None:
        row = conn.execute(
            sa.select(pauses).where(pauses.c.team_id == team_id, pauses.c.user_id == user_id)
        ).first()
        return Pause(row.started_at, row.until) if row is not None else None

    # -- everything at once ------------------------------------------------------------

    def reader(self, team_id: str, user_id: str) -> Reader:
        with self.engine.connect() as conn:
            own = _own_row(conn, team_id, user_id)
            profile = _profile_row(conn, team_id, user_id)
            return Reader(
                team_id,
                user_id,
                tuple(self._role_subscriptions(conn, team_id, user_id)),
                tuple(self._watches(conn, team_id, user_id)),
                self._pause(conn, team_id, user_id),
                _settings(own) if own is not None else ReaderSettings(),
                _profile(profile) if profile is not None else None,
            )

    def all_readers(self) -> list[Reader]:
        """Every user with a role subscription or a watch, for the weekly DMs."""
        roles: dict[tuple[str, str], list[RoleSubscription]] = {}
        saved: dict[tuple[str, str], list[str]] = {}
        paused: dict[tuple[str, str], Pause] = {}
        with self.engine.connect() as conn:
            stmt = sa.select(subscriptions).order_by(
                subscriptions.c.team_id,
                subscriptions.c.user_id,
                subscriptions.c.created_at,
                subscriptions.c.role,
            )
            for row in conn.execute(stmt):
                roles.setdefault((row.team_id, row.user_id), []).append(
                    RoleSubscription(row.role, _level(row.min_verdict))
                )
            for row in conn.execute(sa.select(watches).order_by(watches.c.id)):
                saved.setdefault((row.team_id, row.user_id), []).append(row.query)
            for row in conn.execute(sa.select(pauses)):
                paused[(row.team_id, row.user_id)] = Pause(row.started_at, row.until)
            own = {
                (row.team_id, row.user_id): _settings(row)
                for row in conn.execute(sa.select(reader_settings))
            }
            profiles = {
                (row.team_id, row.user_id): _profile(row)
                for row in conn.execute(sa.select(reader_profiles))
            }
        keys = sorted(set(roles) | set(saved))
        return [
            Reader(
                t,
                u,
                tuple(roles.get((t, u), ())),
                tuple(saved.get((t, u), ())),
                paused.get((t, u)),
                own.get((t, u), ReaderSettings()),
                profiles.get((t, u)),
            )
            for t, u in keys
        ]

    # -- own settings and Slack profiles -------------------------------------------------

    def settings(self, team_id: str, user_id: str) -> ReaderSettings:
        """The reader's own settings (all defaults when they never set one)."""
        with self.engine.connect() as conn:
            row = _own_row(conn, team_id, user_id)
        return _settings(row) if row is not None else ReaderSettings()

    def update_settings(self, team_id: str, user_id: str, **changes: Any) -> ReaderSettings:
        """Change some of the reader's settings (fields of `ReaderSettings`); returns them all."""
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            where = (reader_settings.c.team_id == team_id, reader_settings.c.user_id == user_id)
            row = conn.execute(sa.select(reader_settings).where(*where)).first()
            current = _settings(row) if row is not None else ReaderSettings()
            updated = replace(current, **changes)
            values = _settings_row(updated)
            if row is None:
                conn.execute(
                    reader_settings.insert().values(
                        team_id=team_id, user_id=user_id, updated_at=utcnow(), **values
                    )
                )
            else:
                conn.execute(
                    reader_settings.update().where(*where).values(updated_at=utcnow(), **values)
                )
        return updated

    def profile(self, team_id: str, user_id: str) -> ReaderProfile | None:
        """What Slack last reported of the reader, or None when it was never asked."""
        with self.engine.connect() as conn:
            row = _profile_row(conn, team_id, user_id)
        return _profile(row) if row is not None else None

    def save_profile(self, team_id: str, user_id: str, profile: ReaderProfile) -> None:
        """Keep what Slack reported of the reader (replacing the previous report)."""
        values = {"tz": profile.tz, "locale": profile.locale, "fetched_at": profile.fetched_at}
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            where = (reader_profiles.c.team_id == team_id, reader_profiles.c.user_id == user_id)
            done = conn.execute(reader_profiles.update().where(*where).values(**values))
            if done.rowcount == 0:
                conn.execute(
                    reader_profiles.insert().values(team_id=team_id, user_id=user_id, **values)
                )


def _own_row(conn: Connection, team_id: str, user_id: str) -> Any:
    return conn.execute(
        sa.select(reader_settings).where(
            reader_settings.c.team_id == team_id, reader_settings.c.user_id == user_id
        )
    ).first()


def _profile_row(conn: Connection, team_id: str, user_id: str) -> Any:
    return conn.execute(
        sa.select(reader_profiles).where(
            reader_profiles.c.team_id == team_id, reader_profiles.c.user_id == user_id
        )
    ).first()


def _settings(row: Any) -> ReaderSettings:
    dm_time = None
    if row.dm_time:
        hour, minute = row.dm_time.split(":")
        dm_time = time(int(hour), int(minute))
    return ReaderSettings(
        budget=row.budget,
        dm_weekday=row.dm_weekday,
        dm_time=dm_time,
        dm_off=bool(row.dm_off),
        language=row.language,
    )


def _settings_row(settings: ReaderSettings) -> dict[str, Any]:
    return {
        "budget": settings.budget,
        "dm_weekday": settings.dm_weekday,
        "dm_time": settings.dm_time.strftime("%H:%M") if settings.dm_time else None,
        "dm_off": settings.dm_off,
        "language": settings.language,
    }


def _profile(row: Any) -> ReaderProfile:
    return ReaderProfile(tz=row.tz, locale=row.locale, fetched_at=row.fetched_at)
