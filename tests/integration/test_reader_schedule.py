"""Each reader's DM at their own day, hour and time zone, exactly once a week, driven with
`prdigest tick --now` (each run its own process state: settings, store, Slack client) against
the fake Slack at its wire, on SQLite and PostgreSQL.

The channel digest is due Mondays 09:00 in Europe/Berlin. Readers in Asia/Shanghai,
Europe/Berlin and America/Los_Angeles (their zones from users.info) get theirs at 09:00 on
their own clocks, across the US (2027-03-14) and European (2027-03-28) clock changes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.delivery.languages import reader_texts
from bot.delivery.scheduler import run_due
from bot.readers.schedule import DmSchedule
from bot.services import Services
from bot.slack.client import build_web_client
from bot.slack.prdigest import parse_command, run_command
from bot.store import Store
from bot.store.ledger import Ledger
from bot.store.schema import reader_dm_messages, reader_dm_runs
from tests.support.cli import cli_env, run
from tests.support.delivery import CHANNEL
from tests.support.fakeslack import FakeSlack

TEAM = "T1"
BERLIN = ZoneInfo("Europe/Berlin")
ZONES = {
    "USHANGHAI": ZoneInfo("Asia/Shanghai"),
    "UBERLIN": BERLIN,
    "ULOSANGELES": ZoneInfo("America/Los_Angeles"),
}
MONDAYS = [datetime(2027, 3, d) for d in (8, 15, 22, 29)]  # W10 … W13
MINUTE = timedelta(minutes=1)


@pytest.fixture
def team(posting: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> Services:
    """`prdigest` set up for the fake Slack: the digest on Mondays 09:00 Berlin time."""
    cli_env(monkeypatch, posting)
    monkeypatch.setenv("PRDIGEST_TIMEZONE", "Europe/Berlin")
    monkeypatch.setenv("PRDIGEST_SCHEDULE", "0 9 * * MON")
    monkeypatch.setenv("PRDIGEST_CHANNEL_RATE", "0")  # unpaced: the fake Slack has no limits
    monkeypatch.setenv("PRDIGEST_DM_RATE", "0")
    posting.settings = posting.settings.model_copy(
        update={"timezone": "Europe/Berlin", "schedule": "0 9 * * MON"}
    )
    for path in posting.settings.digests_dir.iterdir():
        path.unlink()
    return posting


def tick(moment: datetime) -> str:
    code, out, err = run("tick", "--now", moment.astimezone(UTC).isoformat())
    assert code == 0, out + err
    return out


def write_week(services: Services, week: int, count: int = 2) -> list[int]:
    """A note file with `count` MoE notes for week `week`; their PR numbers."""
    prs = [week * 100 + n for n in range(count)]
    blocks = ["vllm-project/vllm"]
    for pr in prs:
        blocks += [
            f"FP8 MoE 量化内核第 {pr} 号改进 (#{pr})",
            "值得精读，适合做 MoE 量化与 FP8 内核的工程师。",
        ]
    path = services.settings.digests_dir / f"week-{week}.txt"
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    return prs


def dm_prs(services: Services, slack: FakeSlack, user: str) -> list[list[int]]:
    """The PR numbers of each DM message `user` got, in order."""
    by_id = {n.id: n.pr for n in services.store.list_notes()}
    out = []
    for message in slack.messages_in(FakeSlack.dm_channel(user)):
        ids = [
            int(str(b["block_id"]).removeprefix("note-"))
            for b in message.get("blocks", [])
            if str(b.get("block_id", "")).startswith("note-")
        ]
        out.append(sorted(by_id[i] or 0 for i in ids))
    return out


def dm_counts(slack: FakeSlack) -> dict[str, int]:
    return {user: len(slack.messages_in(FakeSlack.dm_channel(user))) for user in ZONES}


def at_nine(monday: datetime, zone: ZoneInfo) -> datetime:
    return datetime.combine(monday.date(), time(9), zone)


def moments(monday: datetime, around: bool) -> Iterator[tuple[datetime, str | None]]:
    """The week's key instants in time order, with the reader whose 09:00 each is; with
    `around`, a minute before and after each too."""
    nines = sorted((at_nine(monday, zone), user) for user, zone in ZONES.items())
    for nine, user in nines:
        if around:
            yield nine - MINUTE, None
        yield nine, user
        if around:
            yield nine + MINUTE, None


def test_three_zones_each_get_one_dm_a_week_at_their_own_nine(
    team: Services, slack: FakeSlack
) -> None:
    for user, zone in ZONES.items():
        slack.set_user(user, tz=zone.key, locale="en-US")
        team.store.subscribe(TEAM, user, ["moe-quant"])
    weekly: dict[int, list[int]] = {}
    for index, monday in enumerate(MONDAYS):
        week = monday.isocalendar()[1]
        weekly[week] = write_week(team, week)
        # Around 09:00 in the weeks right after each clock change.
        for moment, whose in moments(monday, around=week in (11, 13)):
            before = dm_counts(slack)
            out = tick(moment)
            got = {u for u, n in dm_counts(slack).items() if n > before[u]}
            # The reader whose 09:00 it is gets their DM then, and nobody else; except
            # Shanghai's first Monday: 09:00 there comes before the first channel digest.
            expected = {whose} if whose and not (whose == "USHANGHAI" and index == 0) else set()
            assert got == expected, (moment, out)
            assert all(n - before[u] <= 1 for u, n in dm_counts(slack).items()), "one message"
            if moment == at_nine(monday, BERLIN):
                assert f"digest to {team.settings.channel}" in out, out
    for user in ("UBERLIN", "ULOSANGELES"):
        assert dm_prs(team, slack, user) == [weekly[w] for w in (10, 11, 12, 13)], user
    # A DM time before the channel's digest: those notes go out at the next DM time.
    assert dm_prs(team, slack, "USHANGHAI") == [weekly[w] for w in (10, 11, 12)]

    ledger = Ledger(team.store.engine)
    for user, zone in ZONES.items():
        dms = ledger.reader_dms(TEAM, user)
        local = [d.due_at.astimezone(zone) for d in dms]
        assert [(t.weekday(), t.hour, t.minute) for t in local] == [(0, 9, 0)] * 4, user
        assert len({t.isocalendar()[:2] for t in local}) == 4, "one a week"
    la_hours = {d.due_at.hour for d in ledger.reader_dms(TEAM, "ULOSANGELES")}
    berlin_hours = {d.due_at.hour for d in ledger.reader_dms(TEAM, "UBERLIN")}
    assert la_hours == {17, 16} and berlin_hours == {8, 7}, "both clock changes crossed"
    assert slack.count("users.info") >= 3


def set_reader(services: Services, user: str, text: str, now: datetime) -> str:
    """`/prdigest <text>` from `user` at `now`, as the listener runs it: Slack is asked for
    their profile (time zone and locale), then the command runs in their language."""
    command = parse_command(text, services.taxonomy)
    client = build_web_client(services.settings)
    t = reader_texts(services, client, TEAM, user, now)
    reply = run_command(services, command, TEAM, user, t, now)
    return str(reply["text"])


def test_own_day_and_time_a_dm_before_the_digest_and_dm_off(
    team: Services, slack: FakeSlack
) -> None:
    shanghai = ZONES["USHANGHAI"]
    slack.set_user("UTUE", tz=shanghai.key)
    slack.set_user("UOFF", tz=BERLIN.key)
    for user in ("UTUE", "UOFF"):
        team.store.subscribe(TEAM, user, ["kernels"])
    team.store.readers.watch(TEAM, "UOFF", "fp8")
    monday = MONDAYS[0]
    asked = datetime.combine(monday.date() - timedelta(days=2), time(12), UTC)
    said = set_reader(team, "UTUE", "dm tue 07:30", asked)
    assert "Tuesdays at 07:30 (Asia/Shanghai" in said and "Next: Tue 2027-03-09 07:30" in said
    assert "Weekly DMs stopped" in set_reader(team, "UOFF", "dm off", asked)

    prs = write_week(team, 10)
    tick(at_nine(monday, BERLIN))  # the channel digest; UOFF's time too
    assert dm_counts_of(slack, "UTUE", "UOFF") == (0, 0)
    tuesday = datetime.combine(monday.date() + timedelta(days=1), time(7, 30), shanghai)
    tick(tuesday - MINUTE)
    assert dm_counts_of(slack, "UTUE", "UOFF") == (0, 0)
    tick(tuesday)
    assert dm_prs(team, slack, "UTUE") == [prs]
    tick(tuesday + timedelta(hours=2))
    assert dm_counts_of(slack, "UTUE", "UOFF") == (1, 0)
    statuses = [d.status for d in Ledger(team.store.engine).reader_dms(TEAM, "UOFF")]
    assert statuses == ["off"], "the moment is settled, nothing sent, watches included"

    # Back on: the next Monday brings that week's notes, not what came while DMs were off.
    assert "DMs are on again" in set_reader(team, "UOFF", "dm on", tuesday)
    later = write_week(team, 11)
    tick(at_nine(MONDAYS[1], BERLIN))
    assert dm_prs(team, slack, "UOFF") == [later]


def dm_counts_of(slack: FakeSlack, *users: str) -> tuple[int, ...]:
    return tuple(len(slack.messages_in(FakeSlack.dm_channel(u))) for u in users)


def test_a_clock_change_moves_a_skipped_time_and_sends_a_repeated_one_once(
    team: Services, slack: FakeSlack
) -> None:
    slack.set_user("UNIGHT", tz=BERLIN.key)
    team.store.subscribe(TEAM, "UNIGHT", ["moe-quant"])
    set_reader(team, "UNIGHT", "dm 周日 02:30", MONDAYS[2].replace(tzinfo=UTC))
    write_week(team, 12)
    tick(at_nine(MONDAYS[2], BERLIN))  # a digest to read on Sunday
    # 2027-03-28: 02:00 -> 03:00 in Berlin. Minute by minute from 01:55 to 03:05 local.
    moment = datetime(2027, 3, 28, 0, 55, tzinfo=UTC)
    sent_at = []
    while moment <= datetime(2027, 3, 28, 1, 5, tzinfo=UTC):
        before = dm_counts_of(slack, "UNIGHT")[0]
        tick(moment)
        if dm_counts_of(slack, "UNIGHT")[0] > before:
            sent_at.append(moment.astimezone(BERLIN))
        moment += MINUTE
    assert [f"{t:%H:%M %Z}" for t in sent_at] == ["03:00 CEST"]

    # 2027-10-31: 03:00 -> 02:00; 02:30 happens twice, the DM goes once.
    write_week(team, 43)
    tick(datetime(2027, 10, 25, 8, 0, tzinfo=UTC))  # Monday's digest (CET from the 31st)
    first_half_two = datetime(2027, 10, 31, 0, 30, tzinfo=UTC)
    for moment in (first_half_two, first_half_two + timedelta(hours=1)):
        assert moment.astimezone(BERLIN).strftime("%H:%M") == "02:30"
        tick(moment)
    dms = Ledger(team.store.engine).reader_dms(TEAM, "UNIGHT")
    assert [d.due_at for d in dms][-1] == first_half_two
    assert dm_counts_of(slack, "UNIGHT") == (2,)


def test_missed_moments_are_caught_up_within_the_grace_only(
    team: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRDIGEST_MISFIRE_GRACE", "6h")
    for user in ("UBERLIN", "ULOSANGELES"):
        slack.set_user(user, tz=ZONES[user].key)
        team.store.subscribe(TEAM, user, ["moe-quant"])
    prs = write_week(team, 10)
    # Nothing ran at 09:00 Berlin; at 14:00 Berlin (5 h late) the digest and the Berlin
    # reader's DM are caught up; Los Angeles' 09:00 has not come yet.
    out = tick(datetime.combine(MONDAYS[0].date(), time(14), BERLIN))
    assert "digest to" in out
    assert dm_counts_of(slack, "UBERLIN", "ULOSANGELES") == (1, 0)
    # Down again until 16:00 in Los Angeles, 7 h after its 09:00: too late for that one.
    tick(datetime.combine(MONDAYS[0].date(), time(16), ZONES["ULOSANGELES"]))
    assert dm_counts_of(slack, "UBERLIN", "ULOSANGELES") == (1, 0)
    assert Ledger(team.store.engine).reader_dms(TEAM, "ULOSANGELES") == []
    # Its next 09:00 brings what it missed.
    tick(at_nine(MONDAYS[1], ZONES["ULOSANGELES"]))
    assert dm_prs(team, slack, "ULOSANGELES") == [prs]


def test_tick_says_what_it_did_and_refuses_a_time_without_a_zone(
    team: Services, slack: FakeSlack
) -> None:
    slack.set_user("UBERLIN", tz=BERLIN.key)
    team.store.subscribe(TEAM, "UBERLIN", ["moe-quant"])
    code, out, err = run("tick", "--now", "2027-03-08T09:00:00")
    assert code == 2 and "names no time zone" in out + err and "+00:00" in out + err
    code, out, err = run("tick", "--now", "next monday")
    assert code == 2 and "is not an ISO 8601 time" in out + err
    assert slack.count("chat.postMessage") == 0

    quiet = tick(datetime(2027, 3, 10, 12, 0, tzinfo=UTC))
    assert "channel: not due (next 2027-03-15 09:00 Europe/Berlin)" in quiet
    assert "DMs: no DM sent" in quiet
    write_week(team, 11)
    busy = tick(at_nine(MONDAYS[1], BERLIN))
    assert "posted the 2027-W11 digest" in busy and "DMs: 1 DM to 1 reader (UBERLIN)" in busy
    again = tick(at_nine(MONDAYS[1], BERLIN) + MINUTE)
    assert "already handled" in again and "no DM sent" in again


def test_post_channel_only_leaves_dms_to_each_readers_time(
    team: Services, slack: FakeSlack
) -> None:
    slack.set_user("ULOSANGELES", tz=ZONES["ULOSANGELES"].key)
    team.store.subscribe(TEAM, "ULOSANGELES", ["moe-quant"])
    prs = write_week(team, 10)
    code, out, err = run("post", "--channel-only", "--channel-rate", "0")
    assert code == 0 and "posted" in out, out + err
    assert dm_counts_of(slack, "ULOSANGELES") == (0,)
    nine = DmSchedule(ZONES["ULOSANGELES"], "0 9 * * MON").next_after(datetime.now(UTC))
    assert nine is not None
    tick(nine)
    assert dm_prs(team, slack, "ULOSANGELES") == [prs]
    # `post` sends every reader's DM now, whatever their time; there is nothing new for
    # them now, so nothing is sent twice.
    code, out, _ = run("post")
    assert code == 0 and dm_counts_of(slack, "ULOSANGELES") == (1,)


def replica(services: Services) -> Services:
    """Another process's view: its own store connections, same database."""
    return Services(
        settings=services.settings,
        store=Store.open(services.settings.database_url),
        taxonomy=services.taxonomy,
    )


def test_replicas_ticking_at_once_send_each_dm_once(team: Services, slack: FakeSlack) -> None:
    users = [f"UR{n}" for n in range(6)]
    for n, user in enumerate(users):
        slack.set_user(user, tz=list(ZONES.values())[n % 3].key)
        team.store.subscribe(TEAM, user, ["moe-quant"])
    write_week(team, 10)
    team.settings = team.settings.model_copy(update={"channel_rate": 0, "dm_rate": 0})
    replicas = [replica(team) for _ in range(3)]
    errors: list[BaseException] = []
    for moment in sorted({at_nine(MONDAYS[0], z) for z in ZONES.values()}):
        barrier = threading.Barrier(len(replicas))

        def tick_in(
            services: Services, at: datetime = moment, start: threading.Barrier = barrier
        ) -> None:
            try:
                start.wait()
                run_due(services, build_web_client(services.settings), at)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=tick_in, args=(r,)) for r in replicas]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    for services in replicas:
        services.close()
    assert not errors
    counts = dict(zip(users, dm_counts_of(slack, *users), strict=True))
    # Shanghai's 09:00 came before the first digest; everyone else got theirs, once.
    assert counts == {u: 0 if n % 3 == 0 else 1 for n, u in enumerate(users)}
    parents = [m for m in slack.messages_in(CHANNEL) if m.get("thread_ts") in (None, m["ts"])]
    assert len(parents) == 1


def test_a_dm_slack_has_but_the_ledger_missed_is_found_not_sent_again(
    team: Services, slack: FakeSlack
) -> None:
    """A process died right after Slack accepted a DM: the next tick takes the DM over,
    finds the message by its metadata in the reader's DM, and sends nothing twice."""
    slack.set_user("UBERLIN", tz=BERLIN.key)
    team.store.subscribe(TEAM, "UBERLIN", ["moe-quant"])
    write_week(team, 10)
    nine = at_nine(MONDAYS[0], BERLIN)
    tick(nine)  # the digest, and the reader's DM
    ledger = Ledger(team.store.engine)
    [sent] = ledger.reader_dms(TEAM, "UBERLIN")
    [part] = ledger.reader_dm_parts(sent.id)
    assert part.ts is not None
    # Wind back: the DM as a dead process left it, the message in Slack, its ts unrecorded.
    with team.store.engine.begin() as conn:
        conn.execute(reader_dm_messages.update().values(ts=None, posted_channel=None))
        conn.execute(
            reader_dm_runs.update().values(
                status="open",
                open_reader=f"{TEAM}:UBERLIN",
                claimed_by="elsewhere:1:x",
                heartbeat=datetime.now(UTC) - timedelta(hours=1),
            )
        )
    before = slack.count("chat.postMessage")
    tick(nine + timedelta(minutes=5))
    [again] = ledger.reader_dms(TEAM, "UBERLIN")
    assert again.status == "done" and again.attempts == 2
    assert ledger.reader_dm_parts(again.id)[0].ts == part.ts, "found in Slack, recorded"
    assert slack.count("chat.postMessage") == before and dm_counts_of(slack, "UBERLIN") == (1,)
    assert all(
        c.params.get("include_all_metadata") for c in slack.calls_for("conversations.history")
    )


def test_without_a_zone_from_slack_the_teams_zone_decides(team: Services, slack: FakeSlack) -> None:
    slack.set_user("UNOZONE")  # Slack reports no time zone
    team.store.subscribe(TEAM, "UNOZONE", ["moe-quant"])
    team.store.subscribe(TEAM, "UDOWN", ["moe-quant"])
    slack.fail("users.info", "ratelimited")  # Slack does not answer for UDOWN...
    write_week(team, 10)
    nine = at_nine(MONDAYS[0], BERLIN)
    tick(nine - MINUTE)
    assert slack.count("users.info") == 1, "one failure: no more asked this tick"
    slack.clear_faults()
    tick(nine)
    # ... both go at 09:00 in PRDIGEST_TIMEZONE (Europe/Berlin).
    assert dm_counts_of(slack, "UNOZONE", "UDOWN") == (1, 1)
    asked = slack.count("users.info")
    for minutes in (2, 3, 30):
        tick(nine + minutes * MINUTE)
    assert slack.count("users.info") == asked, "each reader asked at most hourly, then daily"
    profile = team.store.readers.profile(TEAM, "UNOZONE")
    assert profile is not None and profile.tz is None


def test_a_reader_back_after_weeks_away_starts_with_the_newest_week(
    team: Services, slack: FakeSlack
) -> None:
    slack.set_user("UBERLIN", tz=BERLIN.key)
    team.store.subscribe(TEAM, "UBERLIN", ["moe-quant"])
    write_week(team, 10)
    tick(at_nine(MONDAYS[0], BERLIN))
    team.store.unsubscribe(TEAM, "UBERLIN", None)
    for index in (1, 2):
        write_week(team, 11 + index - 1)
        tick(at_nine(MONDAYS[index], BERLIN))
    team.store.subscribe(TEAM, "UBERLIN", ["moe-quant"])
    newest = write_week(team, 13)
    tick(at_nine(MONDAYS[3], BERLIN))
    assert dm_prs(team, slack, "UBERLIN")[1:] == [newest], "not three weeks at once"
