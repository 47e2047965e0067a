"""The events of a login's notification channels, and the bookkeeping that lets a stream
recover what it missed while its connection was down without delivering anything twice.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Literal, Mapping, Union

__all__ = [
    "Slot",
    "MatchEvent",
    "CancelledEvent",
    "CountdownEvent",
    "Reconnected",
    "OtherEvent",
    "Event",
    "parse_payload",
]


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class Slot:
    """A player of a match as a notification names them."""

    player_id: str
    team: int
    party_id: str | None = None
    role: str | None = None


MatchKind = Literal["match", "backfill", "ready_check", "ready"]


@dataclass(frozen=True, slots=True)
class MatchEvent:
    """A match holding a player of this login: ``match`` (final), ``backfill`` (players
    added to a running session), ``ready_check`` (pending; accept by ``answer_by``) or
    ``ready`` (every player accepted: final).

    ``players`` is the roster (of this part, for a match too large for one payload;
    empty with ``players_omitted``: read ``match_details``). ``recovered`` is true for
    an event rebuilt from ``player_status`` / ``match_details`` after a reconnect. A
    stream delivers each player of a match once per kind.
    """

    kind: MatchKind
    queue: str
    match_id: int
    round_id: int | None
    players: tuple[Slot, ...]
    part: int = 1
    parts: int = 1
    answer_by: datetime | None = None
    relay: bool = False
    server_id: str | None = None
    server_address: str | None = None
    players_omitted: bool = False
    recovered: bool = False

    def player_ids(self) -> list[str]:
        return [p.player_id for p in self.players]


@dataclass(frozen=True, slots=True)
class CancelledEvent:
    """A match cancelled by its ready check: this login's players queued again
    (``requeued``) and out (``declined``)."""

    queue: str
    match_id: int
    reason: str | None
    requeued: tuple[str, ...]
    declined: tuple[str, ...]
    players_omitted: bool = False
    recovered: bool = False


@dataclass(frozen=True, slots=True)
class CountdownEvent:
    """The queue's countdown moved (the fields of ``queue_countdown``); ``cause`` is
    round, round_start, config, pool or start (``resync`` after a reconnect)."""

    queue: str
    cause: str
    waiting_for: str | None
    next_round_at: datetime | None
    seconds_to_next_round: int | None
    players_missing: int | None
    latest_round_at: datetime | None
    seconds_to_latest_round: int | None
    round_started_at: datetime | None
    round_id: int | None = None
    trigger: str | None = None
    recovered: bool = False


@dataclass(frozen=True, slots=True)
class Reconnected:
    """The stream's connection was lost and is back; the events that follow it with
    ``recovered=True`` are what it missed meanwhile."""

    error: str
    attempts: int


@dataclass(frozen=True, slots=True)
class OtherEvent:
    """A payload of an event this version does not know, kept as parsed JSON."""

    queue: str | None
    payload: Mapping[str, Any] = field(default_factory=dict)


Event = Union[MatchEvent, CancelledEvent, CountdownEvent, Reconnected, OtherEvent]


def parse_payload(payload: str, queue: str | None = None) -> Event:
    """An event from a notification's JSON; ``queue`` fills in a payload without one."""
    try:
        note = json.loads(payload)
    except ValueError:
        return OtherEvent(queue, {"raw": payload})
    if not isinstance(note, dict):
        return OtherEvent(queue, {"raw": note})
    event = note.get("event")
    q = note.get("queue") or queue or ""
    if event in ("match", "backfill", "ready_check", "ready"):
        return MatchEvent(
            kind=event,
            queue=q,
            match_id=int(note["match_id"]),
            round_id=note.get("round_id"),
            players=tuple(
                Slot(p["player_id"], int(p["team"]), p.get("party_id"), p.get("role"))
                for p in note.get("players") or ()
            ),
            part=int(note.get("part", 1)),
            parts=int(note.get("parts", 1)),
            answer_by=_time(note.get("answer_by")),
            relay=bool(note.get("relay", False)),
            server_id=note.get("server_id"),
            server_address=note.get("server_address"),
            players_omitted=bool(note.get("players_omitted", False)),
        )
    if event == "cancelled":
        return CancelledEvent(
            queue=q,
            match_id=int(note["match_id"]),
            reason=note.get("reason"),
            requeued=tuple(note.get("requeued") or ()),
            declined=tuple(note.get("declined") or ()),
            players_omitted=bool(note.get("players_omitted", False)),
        )
    if event == "countdown":
        return CountdownEvent(
            queue=q,
            cause=note.get("cause") or "",
            waiting_for=note.get("waiting_for"),
            next_round_at=_time(note.get("next_round_at")),
            seconds_to_next_round=note.get("seconds_to_next_round"),
            players_missing=note.get("players_missing"),
            latest_round_at=_time(note.get("latest_round_at")),
            seconds_to_latest_round=note.get("seconds_to_latest_round"),
            round_started_at=_time(note.get("round_started_at")),
            round_id=note.get("round_id"),
            trigger=note.get("trigger"),
        )
    return OtherEvent(q, note)


# ---- what a stream delivered, and what it recovers ------------------------------------------

# The statements a stream runs after each (re)connect, as this login. Matches are read
# from match_details (which keeps a match after its player queued again); the ready-check
# states from player_status.
QUEUE_RULES_SQL = (
    "SELECT queue, ready_timeout FROM queue_catalog WHERE queue = ANY (%s::text[])"
)
STATUS_SQL = (
    "SELECT queue, player_id, status, match_id, session_id, answer_by, reason"
    "  FROM player_status"
    " WHERE queue = ANY (%s::text[]) AND match_id IS NOT NULL"
    "   AND status IN ('matched', 'pending', 'declined')"
)
ROSTER_SQL = (
    "SELECT match_id, round_id, queue, created_at, player_id, party_id, team, role,"
    "       relay, server_id, server_address"
    "  FROM match_details"
    " WHERE queue = ANY (%s::text[])"
    "   AND (created_at >= %s OR (match_id = ANY (%s::bigint[]) AND created_at >= %s))"
    " ORDER BY match_id, team, player_id"
)
COUNTDOWN_SQL = (
    "SELECT queue, waiting_for, next_round_at, seconds_to_next_round, players_missing,"
    "       latest_round_at, seconds_to_latest_round, round_started_at, last_round_id"
    "  FROM queue_countdown WHERE queue = ANY (%s::text[]) ORDER BY queue"
)


class Ledger:
    """What a stream has delivered: each player of a match once per kind.

    Bounded: the oldest matches are forgotten past ``capacity`` (a stream recovers
    only the matches of a short window before its connection was lost).
    """

    def __init__(self, capacity: int = 20_000) -> None:
        self._seen: OrderedDict[tuple[str, int], set[str] | None] = OrderedDict()
        self._capacity = capacity

    def _mark(self, key: tuple[str, int], players: Iterable[str] | None) -> None:
        if players is None:
            self._seen[key] = None  # the whole match
        else:
            seen = self._seen.setdefault(key, set())
            if seen is not None:
                seen.update(players)
        self._seen.move_to_end(key)
        while len(self._seen) > self._capacity:
            self._seen.popitem(last=False)

    def _fresh(self, key: tuple[str, int], players: Iterable[str]) -> list[str]:
        if key not in self._seen:
            return list(players)
        seen = self._seen[key]
        if seen is None:
            return []
        return [p for p in players if p not in seen]

    def admit(self, event: Event) -> Event | None:
        """The event as far as it is new (None: already delivered in full)."""
        if isinstance(event, MatchEvent):
            key = (event.kind, event.match_id)
            if event.players_omitted:
                if key in self._seen and self._seen[key] is None:
                    return None
                self._mark(key, None)
                return event
            ids = [p.player_id for p in event.players]
            fresh = set(self._fresh(key, ids))
            if not fresh:
                return None
            self._mark(key, fresh)
            if len(fresh) == len(ids):
                return event
            return _replace_players(event, tuple(p for p in event.players if p.player_id in fresh))
        if isinstance(event, CancelledEvent):
            key = ("cancelled", event.match_id)
            if event.players_omitted:
                if key in self._seen:
                    return None
                self._mark(key, None)
                return event
            ids = list(event.requeued) + list(event.declined)
            fresh = set(self._fresh(key, ids))
            if key in self._seen and not fresh:
                return None
            self._mark(key, ids)
            return CancelledEvent(
                event.queue,
                event.match_id,
                event.reason,
                tuple(p for p in event.requeued if p in fresh),
                tuple(p for p in event.declined if p in fresh),
                False,
                event.recovered,
            )
        return event


def _replace_players(event: MatchEvent, players: tuple[Slot, ...]) -> MatchEvent:
    import dataclasses

    return dataclasses.replace(event, players=players)


def recovered_events(
    ready_check_queues: set[str],
    statuses: list[dict[str, Any]],
    roster_rows: list[dict[str, Any]],
    countdowns: list[dict[str, Any]],
) -> list[Event]:
    """The events a stream rebuilds after a reconnect, oldest match first.

    A match of a queue without a ready check is ``match`` (``backfill`` when its player
    joined a session). In a queue with one, the player's status says which: ``pending``
    is a ``ready_check``, ``matched`` is ``ready``, ``declined`` a ``cancelled``. A match
    whose players of this login were queued again by its ready check is not rebuilt:
    ``player_status`` shows them queued.
    """
    by_match: dict[int, list[dict[str, Any]]] = {}
    for s in statuses:
        by_match.setdefault(s["match_id"], []).append(s)
    rosters: dict[int, list[dict[str, Any]]] = {}
    for r in roster_rows:
        rosters.setdefault(r["match_id"], []).append(r)
    out: list[Event] = []
    for match_id in sorted(rosters):
        rows = rosters[match_id]
        head = rows[0]
        queue = head["queue"]
        mine = by_match.get(match_id, [])
        slots = tuple(Slot(r["player_id"], r["team"], r["party_id"], r["role"]) for r in rows)
        common = dict(
            queue=queue,
            match_id=match_id,
            round_id=head["round_id"],
            players=slots,
            relay=bool(head["relay"]),
            server_id=head["server_id"],
            server_address=head["server_address"],
            recovered=True,
        )
        if queue not in ready_check_queues:
            kind = "backfill" if any(s["session_id"] for s in mine) else "match"
            out.append(MatchEvent(kind=kind, **common))  # type: ignore[arg-type]
            continue
        pending = [s for s in mine if s["status"] == "pending"]
        if pending:
            out.append(MatchEvent(kind="ready_check", answer_by=pending[0]["answer_by"], **common))  # type: ignore[arg-type]
        if any(s["status"] == "matched" for s in mine):
            out.append(MatchEvent(kind="ready", **common))  # type: ignore[arg-type]
        declined = tuple(s["player_id"] for s in mine if s["status"] == "declined")
        if declined:
            out.append(
                CancelledEvent(queue, match_id, declined and mine[0]["reason"], (), declined, False, True)
            )
    for c in countdowns:
        out.append(
            CountdownEvent(
                queue=c["queue"],
                cause="resync",
                waiting_for=c["waiting_for"],
                next_round_at=c["next_round_at"],
                seconds_to_next_round=c["seconds_to_next_round"],
                players_missing=c["players_missing"],
                latest_round_at=c["latest_round_at"],
                seconds_to_latest_round=c["seconds_to_latest_round"],
                round_started_at=c["round_started_at"],
                round_id=c["last_round_id"],
                recovered=True,
            )
        )
    return out
