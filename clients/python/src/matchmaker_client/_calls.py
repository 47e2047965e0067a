"""Every client call as data: its SQL, its parameters, how to read its answer, and
whether sending it twice does the same as sending it once. The sync and asyncio clients
run these; neither holds SQL of its own.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Iterable, Mapping, Sequence

from psycopg.types.json import Jsonb

from . import models as m


@dataclass(frozen=True, slots=True)
class Call:
    sql: str
    params: Sequence[Any]
    # "scalar": the first column of the one row; "one": one row or None; "all": the rows.
    fetch: str
    convert: Callable[[Any], Any] = lambda x: x
    # Safe to send again after a lost reply: the second time changes nothing the first
    # did not (a read, a refresh, a removal). A call is always safe to retry when it
    # failed before its commit was sent; this flag decides the ambiguous case.
    idempotent: bool = False
    # A read of a view a hot standby serves (at its replication lag): a client given a
    # standby source runs it there. Calls that write, and LISTEN, stay on the primary.
    standby_ok: bool = False


def _rows(cls: type[m._Row]) -> Callable[[list[dict[str, Any]]], list[Any]]:
    return lambda rows: [cls.from_row(r) for r in rows]


def _one(cls: type[m._Row]) -> Callable[[dict[str, Any] | None], Any]:
    return lambda row: None if row is None else cls.from_row(row)


def _ids(player_ids: str | Iterable[str]) -> list[str]:
    return [player_ids] if isinstance(player_ids, str) else list(player_ids)


def _json(value: Mapping[str, Any] | None) -> Jsonb:
    return Jsonb(dict(value) if value is not None else {})


# ---- reads ------------------------------------------------------------------------------


def _view(make: Callable[..., Call]) -> Callable[..., Call]:
    """Marks a read of a view as one a standby may serve."""

    @functools.wraps(make)
    def wrapped(*args: Any, **kwargs: Any) -> Call:
        return dataclasses.replace(make(*args, **kwargs), standby_ok=True)

    return wrapped


@_view
def queue_catalog(queue: str | None = None) -> Call:
    sql = f"SELECT {m.QueueInfo.columns()} FROM queue_catalog"
    if queue is not None:
        return Call(sql + " WHERE queue = %s", [queue], "one", _one(m.QueueInfo), True)
    return Call(sql + " ORDER BY queue", [], "all", _rows(m.QueueInfo), True)


@_view
def queue_countdown(queue: str | None = None) -> Call:
    sql = f"SELECT {m.Countdown.columns()} FROM queue_countdown"
    if queue is not None:
        return Call(sql + " WHERE queue = %s", [queue], "one", _one(m.Countdown), True)
    return Call(sql + " ORDER BY queue", [], "all", _rows(m.Countdown), True)


@_view
def player_status(player_ids: str | Iterable[str] | None, queue: str | None) -> Call:
    where, params = [], []
    # Named players: the keyed function finds them by index; the view lists them all.
    source = "player_status"
    if player_ids is not None:
        source = "player_status(%s::text[])"
        params.append(_ids(player_ids))
    if queue is not None:
        where.append("queue = %s")
        params.append(queue)
    sql = f"SELECT {m.PlayerStatus.columns()} FROM {source}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return Call(sql + " ORDER BY queue, player_id", params, "all", _rows(m.PlayerStatus), True)


@_view
def match_roster(match_id: int) -> Call:
    return Call(
        f"SELECT {m.MatchPlayer.columns()} FROM match_details(%s::bigint)"
        " ORDER BY team, player_id",
        [match_id],
        "all",
        _rows(m.MatchPlayer),
        True,
    )


@_view
def latest_match(player_id: str, queue: str | None) -> Call:
    sql = f"SELECT {m.MatchPlayer.columns()} FROM player_matches(%s)"
    params: list[Any] = [player_id]
    if queue is not None:
        sql += " WHERE queue = %s"
        params.append(queue)
    sql += " ORDER BY created_at DESC, match_id DESC LIMIT 1"
    return Call(sql, params, "one", _one(m.MatchPlayer), True)


@_view
def avoid_list(player_id: str | None) -> Call:
    sql = f"SELECT {m.Avoid.columns()} FROM avoid_list"
    params: list[Any] = []
    if player_id is not None:
        sql += " WHERE player_id = %s"
        params.append(player_id)
    return Call(sql + " ORDER BY player_id, avoided_player_id", params, "all", _rows(m.Avoid), True)


@_view
def player_ratings(player_ids: str | Iterable[str] | None, pool: str | None) -> Call:
    where, params = [], []
    if player_ids is not None:
        where.append("player_id = ANY (%s::text[])")
        params.append(_ids(player_ids))
    if pool is not None:
        where.append("pool = %s")
        params.append(pool)
    sql = f"SELECT {m.Rating.columns()} FROM player_ratings"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return Call(sql + " ORDER BY pool, player_id", params, "all", _rows(m.Rating), True)


@_view
def backfill_status(session_id: str | None, request_id: int | None) -> Call:
    where, params = [], []
    # One request: the keyed function finds it by index; the view lists them all.
    source = "backfill_status"
    if request_id is not None:
        source = "backfill_status(%s::bigint)"
        params.append(request_id)
    if session_id is not None:
        where.append("session_id = %s")
        params.append(session_id)
    sql = f"SELECT {m.BackfillStatus.columns()} FROM {source}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return Call(sql + " ORDER BY request_id", params, "all", _rows(m.BackfillStatus), True)


@_view
def my_servers() -> Call:
    return Call(
        f"SELECT {m.Server.columns()} FROM my_servers ORDER BY server_id",
        [],
        "all",
        _rows(m.Server),
        True,
    )


def queue_channel(queue: str) -> Call:
    return Call("SELECT queue_channel(queue => %s)", [queue], "scalar", idempotent=True)


# ---- writes -----------------------------------------------------------------------------


def enqueue(
    queue: str,
    player_id: str,
    skill: float | None,
    *,
    latencies: Mapping[str, float] | None,
    peer_pings: Mapping[str, float] | None,
    roles: Sequence[str] | None,
    side: float | None,
    skill_sigma: float | None,
    attributes: Mapping[str, Any] | None,
) -> Call:
    # Not idempotent: a second enqueue of a queued player is refused, and one whose
    # first attempt was lost in a commit must be checked in player_status first.
    return Call(
        "SELECT enqueue(queue => %s, player_id => %s, skill => %s::float8,"
        " latencies => %s::jsonb, peer_pings => %s::jsonb, roles => %s::text[],"
        " side => %s::float8, skill_sigma => %s::float8, attributes => %s::jsonb)",
        [
            queue,
            player_id,
            skill,
            _json(latencies),
            _json(peer_pings),
            list(roles or []),
            side,
            skill_sigma,
            _json(attributes),
        ],
        "scalar",
    )


def enqueue_party(queue: str, party_id: str, members: Sequence[m.PartyMember | Mapping[str, Any]]) -> Call:
    payload = [x.to_json() if isinstance(x, m.PartyMember) else dict(x) for x in members]
    return Call(
        "SELECT player_id, entry_id FROM enqueue_party(queue => %s, party_id => %s,"
        " members => %s::jsonb) ORDER BY player_id",
        [queue, party_id, Jsonb(payload)],
        "all",
        _rows(m.PartyEntry),
    )


def keep_alive(player_ids: str | Iterable[str], queue: str | None) -> Call:
    return Call(
        "SELECT keep_alive(player_ids => %s::text[], queue => %s)",
        [_ids(player_ids), queue],
        "scalar",
        idempotent=True,
    )


def cancel(player_id: str, queue: str | None) -> Call:
    # Idempotent: a second cancel finds nothing queued and answers 0.
    return Call(
        "SELECT cancel(player_id => %s, queue => %s)", [player_id, queue], "scalar", idempotent=True
    )


def accept_match(player_id: str, match_id: int) -> Call:
    # The second answer reads 'already_accepted'.
    return Call(
        "SELECT accept_match(player_id => %s, match_id => %s)",
        [player_id, match_id],
        "scalar",
        idempotent=True,
    )


def decline_match(player_id: str, match_id: int) -> Call:
    return Call(
        "SELECT decline_match(player_id => %s, match_id => %s)",
        [player_id, match_id],
        "scalar",
        idempotent=True,
    )


def avoid(player_id: str, avoided_player_id: str, duration: timedelta | None) -> Call:
    # Idempotent: avoiding again renews the same avoid.
    return Call(
        "SELECT avoid(player_id => %s, avoided_player_id => %s, duration => %s::interval)",
        [player_id, avoided_player_id, duration],
        "scalar",
        idempotent=True,
    )


def unavoid(player_id: str, avoided_player_id: str) -> Call:
    return Call(
        "SELECT unavoid(player_id => %s, avoided_player_id => %s)",
        [player_id, avoided_player_id],
        "scalar",
        idempotent=True,
    )


def report_result(match_id: int, team_ranks: Sequence[int], left_early: Sequence[str] | None) -> Call:
    # Not idempotent: a login's second report of a match is refused.
    return Call(
        "SELECT report_result(match_id => %s, team_ranks => %s::int[], left_early => %s::text[])",
        [match_id, list(team_ranks), None if left_early is None else list(left_early)],
        "scalar",
    )


def request_backfill(
    queue: str,
    session_id: str,
    members: Sequence[m.BackfillMember | Mapping[str, Any]],
    open_slots: Sequence[int],
    expires_in: timedelta | None,
    map: str | None = None,
) -> Call:
    payload = [x.to_json() if isinstance(x, m.BackfillMember) else dict(x) for x in members]
    return Call(
        "SELECT request_backfill(queue => %s, session_id => %s, members => %s::jsonb,"
        " open_slots => %s::int[], expires_in => coalesce(%s::interval, interval '60 seconds'),"
        " map => %s)",
        [queue, session_id, Jsonb(payload), list(open_slots), expires_in, map],
        "scalar",
    )


def cancel_backfill(request_id: int) -> Call:
    return Call(
        "SELECT cancel_backfill(request_id => %s)", [request_id], "scalar", idempotent=True
    )


def server_ready(server_id: str, region: str, address: str, ended_match: int | None) -> Call:
    # A heartbeat: announcing twice is announcing once.
    return Call(
        "SELECT server_ready(server_id => %s, region => %s, address => %s, ended_match => %s::bigint)",
        [server_id, region, address, ended_match],
        "scalar",
        idempotent=True,
    )


def server_gone(server_id: str) -> Call:
    return Call("SELECT server_gone(server_id => %s)", [server_id], "scalar", idempotent=True)


def read_result(call: Call, cur_rows: list[dict[str, Any]]) -> Any:
    """The call's answer from the rows its statement returned."""
    if call.fetch == "scalar":
        return call.convert(next(iter(cur_rows[0].values())) if cur_rows else None)
    if call.fetch == "one":
        return call.convert(cur_rows[0] if cur_rows else None)
    return call.convert(cur_rows)
