"""The synchronous client against the live daemon, as client and server logins."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import matchmaker_client as mc
from conftest import unique, wait_for


@pytest.fixture
def client(client_url: str):
    with psycopg.connect(client_url) as conn:
        yield mc.Client(conn)


@pytest.fixture
def pooled(client_url: str):
    with ConnectionPool(client_url, min_size=1, max_size=4, open=True) as pool:
        yield mc.Client(pool)


def test_catalog_reads_the_queues(client: mc.Client) -> None:
    queues = {q.queue: q for q in client.queues()}
    assert {"duo", "hold", "rc", "srv", "bf"} <= set(queues)
    duo = queues["duo"]
    assert (duo.teams, duo.team_size, duo.max_party_size) == (2, 2, 2)
    assert duo.rated and not duo.has_ready_check
    assert queues["rc"].has_ready_check and queues["rc"].ready_timeout == timedelta(seconds=20)
    assert queues["srv"].network == "dedicated" and queues["srv"].regions == ("eu", "us")
    assert queues["short"].keep_alive_every == timedelta(seconds=1)
    assert client.queue("nope") is None
    countdown = client.countdown("hold")
    assert countdown is not None and countdown.queue == "hold"
    assert client.queue_channel("hold").startswith("matchmaker:")


def test_refusals_are_parsed(client: mc.Client) -> None:
    with pytest.raises(mc.Refusal) as bad:
        client.enqueue("hold", "alice", 1500, latencies={"eu-west": -3})
    r = bad.value
    assert (r.sqlstate, r.field, r.value, r.rule) == (
        "22023", "latencies.eu-west", "-3", "must be between 0 and 10000 ms"
    )

    with pytest.raises(mc.Refusal) as bad:
        client.enqueue("ranked_9v9", "alice", 1500)
    assert (bad.value.field, bad.value.value) == ("queue", "ranked_9v9")
    assert bad.value.rule.startswith("unknown queue; queues: ")

    client.enqueue("hold", "alice", 1500)
    with pytest.raises(mc.Refusal) as bad:
        client.enqueue("hold", "alice", 1500)
    assert (bad.value.field, bad.value.value) == ("player_id", "alice")
    assert bad.value.rule == "is already queued in queue hold (cancel it first)"

    with pytest.raises(mc.Refusal) as bad:
        client.enqueue_party("hold", "crew", [{"player_id": "bob", "skill": 1500, "mmr": 3},
                                              {"player_id": "carol", "skill": 1450}])
    assert (bad.value.field, bad.value.value) == ("members[].mmr", "3")

    with pytest.raises(mc.Refusal) as bad:
        client.enqueue("hold", "dave", 1500, attributes={"build": 142})  # type: ignore[dict-item]
    assert bad.value.field == "attributes.build"
    assert bad.value.rule == "must be a string or a list of strings"

    with pytest.raises(mc.Refusal) as bad:
        client.avoid("alice", "alice")
    assert bad.value.field == "avoided_player_id"

    with pytest.raises(mc.Refusal) as bad:
        client.keep_alive(["alice", None])  # type: ignore[list-item]
    assert (bad.value.field, bad.value.value) == ("player_ids", "{alice,NULL}")

    # A skill is required on a queue without ratings.
    with pytest.raises(mc.Refusal) as bad:
        client.enqueue("hold", "erin")
    assert bad.value.field == "skill"

    # PostgreSQL's own refusal (not JSON-able as a float): no field, the message as rule.
    with pytest.raises(mc.Refusal) as bad:
        client.enqueue("hold", "frank", float("nan"))
    assert bad.value.sqlstate.startswith("22")

    # Nothing of the refused calls was written; the one good enqueue was.
    assert [s.player_id for s in client.player_status(queue="hold")] == ["alice"]


def test_permission_denied_for_the_wrong_role(server_url: str, client_url: str) -> None:
    with psycopg.connect(server_url) as conn:
        with pytest.raises(mc.PermissionDenied) as denied:
            mc.Client(conn).enqueue("hold", "alice", 1500)
        assert denied.value.sqlstate == "42501"
    with psycopg.connect(client_url) as conn:
        with pytest.raises(mc.PermissionDenied):
            mc.Client(conn).request_backfill("bf", "s", [mc.BackfillMember("a", 0, 1500)], [1, 1])


def test_enqueue_status_and_cancel(pooled: mc.Client) -> None:
    entry = pooled.enqueue("hold", "solo", 1510, latencies={"eu": 20}, attributes={"build": "1.0"})
    assert isinstance(entry, int)
    party = pooled.enqueue_party(
        "hold", "crew", [mc.PartyMember("p1", 1400), mc.PartyMember("p2", 1600, side=0.5)]
    )
    assert [p.player_id for p in party] == ["p1", "p2"]

    solo = pooled.status("solo", "hold")
    assert solo is not None and solo.status == "queued" and solo.entry_id == entry
    assert solo.waiting and not solo.done and solo.expires_at is not None
    statuses = {s.player_id: s for s in pooled.player_status(["p1", "p2"], "hold")}
    assert {s.party_id for s in statuses.values()} == {"crew"}

    # Cancelling one member cancels the party; a second cancel finds nothing.
    assert pooled.cancel("p1", "hold") == 2
    assert pooled.cancel("p1", "hold") == 0
    after = {s.player_id: s for s in pooled.player_status(["p1", "p2"])}
    assert after["p1"].status == after["p2"].status == "cancelled"
    assert after["p1"].reason and after["p2"].reason
    assert pooled.cancel("solo") == 1  # every queue
    assert pooled.status("solo", "hold").status == "cancelled"  # type: ignore[union-attr]
    assert pooled.status("nobody", "hold") is None


def test_keep_alive_thread_keeps_tickets(client: mc.Client) -> None:
    client.enqueue("short", "kept", 1500)
    client.enqueue("short", "dropped", 1500)
    errors: list[BaseException] = []
    with mc.KeepAlive(client, "short", players=["kept"], on_error=errors.append) as keeper:
        time.sleep(4.5)  # past the 3 s ttl
        assert keeper.last_refreshed == 1
    assert not errors
    assert client.status("kept", "short").status == "queued"  # type: ignore[union-attr]
    assert client.status("dropped", "short").status == "expired"  # type: ignore[union-attr]


def _wait_matched(client: mc.Client, queue: str, players: list[str], status: str = "matched"):
    def all_there():
        rows = client.player_status(players, queue)
        return rows if len(rows) == len(players) and all(r.status == status for r in rows) else None

    return wait_for(f"{players} {status} in {queue}", all_there)


def test_match_details_results_and_ratings(pooled: mc.Client) -> None:
    players = [unique("r") for _ in range(4)]
    for p in players:
        pooled.enqueue("duo", p)  # no skill: the built-in rating
    rows = _wait_matched(pooled, "duo", players)
    match_ids = {r.match_id for r in rows}
    assert len(match_ids) == 1
    match_id = match_ids.pop()
    roster = pooled.match_details(match_id)
    assert sorted(r.player_id for r in roster) == sorted(players)
    for r in roster:
        assert len(r.teammates) == 1 and len(r.opponents) == 2
        assert r.host_player_id in players
        assert r.win_probability is not None
    mine = pooled.latest_match(players[0], "duo")
    assert mine is not None and mine.match_id == match_id

    winners = {r.player_id for r in roster if r.team == 0}
    assert pooled.report_result(match_id, [1, 2]) == "recorded"
    with pytest.raises(mc.Refusal):
        pooled.report_result(match_id, [1, 2])
    assert {r.team_rank for r in pooled.match_details(match_id) if r.team == 0} == {1}

    # Results are applied before the pool's next round: four more players make one.
    nudge = [unique("n") for _ in range(4)]
    for p in nudge:
        pooled.enqueue("duo", p)
    _wait_matched(pooled, "duo", nudge)

    def rated():
        ratings = pooled.player_ratings(players)
        return ratings if len(ratings) == 4 and all(r.matches == 1 for r in ratings) else None

    for rating in wait_for("the ratings to move", rated):
        if rating.player_id in winners:
            assert rating.rating > 1500
        else:
            assert rating.rating < 1500


def test_avoids(client: mc.Client) -> None:
    assert client.avoid("alice", "mallory") == 1
    assert client.avoid("alice", "trent", timedelta(days=7)) == 2
    assert client.avoid("alice", "trent", timedelta(days=7)) == 2  # renewed, not added
    avoids = {a.avoided_player_id: a for a in client.avoid_list("alice")}
    assert set(avoids) == {"mallory", "trent"}
    assert avoids["mallory"].expires_at is None and avoids["trent"].expires_at is not None
    assert client.unavoid("alice", "trent") is True
    assert client.unavoid("alice", "trent") is False
    assert [a.avoided_player_id for a in client.avoid_list()] == ["mallory"]


def test_ready_check_accept_and_decline(client_url: str, client: mc.Client) -> None:
    with mc.EventStream(client_url, ["rc"]) as stream:
        a, b = unique("a"), unique("b")
        client.enqueue("rc", a, 1500)
        client.enqueue("rc", b, 1500)
        pending = _wait_matched(client, "rc", [a, b], "pending")
        match_id = pending[0].match_id
        assert pending[0].answer_by is not None
        assert client.accept_match(a, match_id) == "accepted"
        assert client.accept_match(a, match_id) == "already_accepted"
        assert client.accept_match(b, match_id) == "accepted"
        _wait_matched(client, "rc", [a, b])

        c, d = unique("c"), unique("d")
        client.enqueue("rc", c, 1500)
        client.enqueue("rc", d, 1500)
        second = _wait_matched(client, "rc", [c, d], "pending")[0].match_id
        assert client.accept_match(c, second) == "accepted"
        assert client.decline_match(d, second) == "declined"
        wait_for("the decline to resolve", lambda: client.status(d, "rc").status == "declined")  # type: ignore[union-attr]
        assert client.status(c, "rc").status == "queued"  # type: ignore[union-attr]
        with pytest.raises(mc.Refusal) as late:
            client.accept_match(d, second)
        assert late.value.field == "match_id"

        kinds: dict[tuple[str, int], list] = {}
        def seen_all():
            event = stream.get(timeout=0.5)
            if event is not None and hasattr(event, "match_id"):
                key = ("cancelled" if isinstance(event, mc.CancelledEvent) else event.kind, event.match_id)
                kinds.setdefault(key, []).append(event)
            return {("ready_check", match_id), ("ready", match_id), ("ready_check", second),
                    ("cancelled", second)} <= set(kinds)

        wait_for("the ready-check events", seen_all)
        assert kinds[("ready_check", match_id)][0].answer_by is not None
        cancelled = kinds[("cancelled", second)][0]
        assert cancelled.requeued == (c,) and cancelled.declined == (d,)
        assert all(len(v) == 1 for v in kinds.values()), kinds


def test_game_servers(server_url: str, client: mc.Client) -> None:
    with psycopg.connect(server_url) as conn:
        server = mc.Client(conn)
        assert server.server_ready("gs-1", "eu", "10.0.0.1:7777") == "ready"
        assert [(s.server_id, s.status) for s in server.my_servers()] == [("gs-1", "ready")]
        a, b = unique("s"), unique("s")
        client.enqueue("srv", a, 1500, latencies={"eu": 20})
        client.enqueue("srv", b, 1500, latencies={"eu": 25, "us": 90})
        rows = _wait_matched(client, "srv", [a, b])
        match_id = rows[0].match_id
        details = client.match_details(match_id)
        assert {(d.server_id, d.server_address, d.region) for d in details} == {
            ("gs-1", "10.0.0.1:7777", "eu")
        }
        allocated = server.my_servers()
        assert [(s.status, s.match_id) for s in allocated] == [("allocated", match_id)]
        assert server.server_ready("gs-1", "eu", "10.0.0.1:7777") == "allocated"
        assert server.server_ready("gs-1", "eu", "10.0.0.1:7777", ended_match=match_id) == "ready"
        # A game server reports any match it hosted.
        assert server.report_result(match_id, [1, 1]) == "recorded"
        assert server.server_gone("gs-1") is True
        assert server.server_gone("gs-1") is False
        assert server.my_servers() == []


def test_backfill(server_url: str, client: mc.Client) -> None:
    with psycopg.connect(server_url) as conn:
        server = mc.Client(conn)
        members = [
            mc.BackfillMember("m1", 0, 1500),
            mc.BackfillMember("m2", 1, 1480),
            mc.BackfillMember("m3", 1, 1520),
        ]
        request = server.request_backfill("bf", "sess-1", members, [1, 0], timedelta(seconds=60))
        [open_] = server.backfill_status("sess-1")
        assert open_.request_id == request and open_.status == "open"
        joiner = unique("j")
        client.enqueue("bf", joiner, 1500)
        filled = wait_for(
            "the fill",
            lambda: [s for s in server.backfill_status(request_id=request) if s.status == "filled"],
        )
        assert filled[0].filled_by == (joiner,)
        status = client.status(joiner, "bf")
        assert status is not None and status.status == "matched" and status.session_id == "sess-1"

        other = server.request_backfill("bf", "sess-2", members, [1, 0])
        assert server.cancel_backfill(other) is True
        assert server.cancel_backfill(other) is False
        assert server.backfill_status("sess-2")[0].status == "cancelled"


def _hold_quota_lock(url: str) -> psycopg.Connection:
    """A connection of the login inside an enqueue it has not committed: the login's
    next enqueue into the queue waits for it (2 s at most, then SQLSTATE 40001)."""
    conn = psycopg.connect(url)
    conn.execute("SELECT enqueue(queue => 'hold', player_id => 'holder', skill => 1500)")
    return conn


def test_timeout_cancels_the_call(client_url: str, client: mc.Client) -> None:
    blocker = _hold_quota_lock(client_url)
    try:
        hasty = client.with_options(timeout=0.5)
        started = time.monotonic()
        with pytest.raises(mc.Timeout):
            hasty.enqueue("hold", "late", 1500)
        assert time.monotonic() - started < 1.5
    finally:
        blocker.rollback()
        blocker.close()
    # The client goes on, and the timed-out enqueue wrote nothing.
    assert client.status("late", "hold") is None
    assert client.enqueue("hold", "late", 1500) > 0


def test_unavailable_is_retried_before_the_commit(client_url: str, pooled: mc.Client) -> None:
    blocker = _hold_quota_lock(client_url)
    # The lock goes after 3 s: the first attempt fails with 40001 after 2 s, nothing was
    # written, so the enqueue is retried and then goes through.
    release = threading.Timer(3.0, blocker.rollback)
    release.start()
    try:
        started = time.monotonic()
        entry = pooled.with_options(retry=mc.RetryPolicy(attempts=5, initial_delay=0.5)).enqueue(
            "hold", "patient", 1500
        )
        assert entry > 0
        assert time.monotonic() - started >= 2.0
    finally:
        release.join()
        blocker.close()
    # Without retries the same wait is an Unavailable error in class 40.
    blocker = _hold_quota_lock(client_url)
    try:
        with pytest.raises(mc.Unavailable) as gave_up:
            pooled.with_options(retry=mc.NO_RETRY).enqueue("hold", "impatient", 1500)
        assert gave_up.value.sqlstate == "40001"
        assert gave_up.value.attempts == 1 and not gave_up.value.may_have_committed
    finally:
        blocker.rollback()
        blocker.close()


def test_reads_go_to_the_standby_source_and_writes_never_do(client_url: str, matchmaker) -> None:
    # The "standby" is a read-only session of another client login: what it serves is
    # that login's view (none of this login's players), and a write sent there would fail
    # in class 25.
    reader_url = matchmaker.login("matchmaker_client")
    with psycopg.connect(client_url) as conn, psycopg.connect(
        reader_url, options="-c default_transaction_read_only=on"
    ) as standby:
        split = mc.Client(conn, reads=standby)
        player = unique("split")
        split.enqueue("hold", player, 1500)  # a write: on the primary source
        assert mc.Client(conn).status(player, "hold") is not None
        assert split.status(player, "hold") is None, "the read went to the primary source"
        assert split.queue("hold") is not None, "the catalog is served by the standby"
        assert split.cancel(player, "hold") == 1  # a write again, on the primary source
