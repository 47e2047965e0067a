"""Rows of the client views and the inputs of the calls, as frozen dataclasses.

Each row class names the view's columns it reads, so a column the server adds later
changes nothing here. Times are timezone-aware ``datetime``; intervals ``timedelta``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Mapping, Sequence, TypeVar

__all__ = [
    "QueueInfo",
    "Countdown",
    "PlayerStatus",
    "MatchPlayer",
    "PartyEntry",
    "PartyMember",
    "BackfillMember",
    "Avoid",
    "Rating",
    "BackfillStatus",
    "Server",
]

R = TypeVar("R", bound="_Row")


class _Row:
    """A row read from a view: the dataclass fields are the columns selected."""

    VIEW: ClassVar[str]

    @classmethod
    def columns(cls) -> str:
        return ", ".join(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def from_row(cls: type[R], row: Mapping[str, Any]) -> R:
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        values = {n: row[n] for n in names}
        for n, v in values.items():
            if isinstance(v, list):  # arrays: tuples, so the row stays hashable and frozen
                values[n] = tuple(v)
        return cls(**values)


@dataclass(frozen=True, slots=True)
class QueueInfo(_Row):
    """A row of ``queue_catalog``: a queue's format, limits and countdown."""

    VIEW: ClassVar[str] = "queue_catalog"
    queue: str
    teams: int
    team_size: int
    formats: tuple[str, ...]
    min_teams: int
    min_team_size: int
    min_players_per_match: int
    network: str
    roles: tuple[str, ...]
    regions: tuple[str, ...]
    max_party_size: int
    ticket_ttl: timedelta
    keep_alive_every: timedelta
    max_wait: timedelta
    same_attributes: tuple[str, ...]
    max_avoids: int
    ready_timeout: timedelta | None
    decline_cooldown: timedelta | None
    rating_pool: str | None
    recent_median_wait_s: int | None
    next_round_at: datetime | None
    seconds_to_next_round: int | None
    waiting_for: str | None
    pool_size: int | None
    target_pool: int | None
    players_missing_for_early_start: int | None
    players_missing: int | None
    latest_round_at: datetime | None
    seconds_to_latest_round: int | None
    round_started_at: datetime | None

    @property
    def rated(self) -> bool:
        """The queue keeps built-in ratings: ``skill`` may be left out."""
        return self.rating_pool is not None

    @property
    def has_ready_check(self) -> bool:
        return self.ready_timeout is not None


@dataclass(frozen=True, slots=True)
class Countdown(_Row):
    """A row of ``queue_countdown``: when the queue's next round can run."""

    VIEW: ClassVar[str] = "queue_countdown"
    queue: str
    waiting_for: str | None
    next_round_at: datetime | None
    seconds_to_next_round: int | None
    players_missing: int | None
    latest_round_at: datetime | None
    seconds_to_latest_round: int | None
    round_started_at: datetime | None
    pool_size: int | None
    target_pool: int | None
    players_missing_for_early_start: int | None
    min_pool: int | None
    players_per_match: int | None
    schedule: str | None
    last_round_id: int | None
    last_round_at: datetime | None


@dataclass(frozen=True, slots=True)
class PlayerStatus(_Row):
    """A row of ``player_status``: a player's latest entry in a queue.

    ``status`` is one of queued, matched, pending, cancelled, rejected, expired,
    withdrawn, declined; ``reason`` says why in words for every status but queued and
    matched (and for queued after a round left the player over: see ``left_over``).
    """

    VIEW: ClassVar[str] = "player_status"
    queue: str
    player_id: str
    entry_id: int
    status: str
    party_id: str | None
    enqueued_at: datetime
    expires_at: datetime | None
    reason: str | None
    left_over: str | None
    # The countdown, while queued.
    waiting_for: str | None
    next_round_at: datetime | None
    seconds_to_next_round: int | None
    players_missing: int | None
    latest_round_at: datetime | None
    seconds_to_latest_round: int | None
    round_started_at: datetime | None
    may_start_early: bool | None
    players_missing_for_early_start: int | None
    estimated_wait_s: int | None
    # The match, once matched (or pending a ready check, or withdrawn by one).
    match_id: int | None
    team: int | None
    role: str | None
    region: str | None
    hosts: tuple[str, ...] | None
    host_player_id: str | None
    backup_host_player_id: str | None
    relay: bool | None
    session_id: str | None
    answer_by: datetime | None
    answer: str | None

    @property
    def waiting(self) -> bool:
        return self.status == "queued"

    @property
    def done(self) -> bool:
        """The entry is over: matched, or out of the queue without a match."""
        return self.status not in ("queued", "pending")


@dataclass(frozen=True, slots=True)
class MatchPlayer(_Row):
    """A row of ``match_details``: one player of a match, with the match around them."""

    VIEW: ClassVar[str] = "match_details"
    match_id: int
    round_id: int
    queue: str
    created_at: datetime
    player_id: str
    party_id: str | None
    team: int
    role: str | None
    skill: float | None
    waited_seconds: float | None
    teammates: tuple[str, ...]
    opponents: tuple[str, ...]
    region: str | None
    hosts: tuple[str, ...] | None
    host_player_id: str | None
    backup_host_player_id: str | None
    relay: bool | None
    server_id: str | None
    server_address: str | None
    match_score: float | None
    factors: dict[str, Any] | None
    win_probability: float | None
    team_rank: int | None
    left_early: bool | None


@dataclass(frozen=True, slots=True)
class PartyEntry(_Row):
    """A row of ``enqueue_party``: a member's new entry."""

    VIEW: ClassVar[str] = "enqueue_party"
    player_id: str
    entry_id: int


@dataclass(frozen=True, slots=True)
class Avoid(_Row):
    """A row of ``avoid_list``."""

    VIEW: ClassVar[str] = "avoid_list"
    player_id: str
    avoided_player_id: str
    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class Rating(_Row):
    """A row of ``player_ratings``: a player's built-in rating in a pool."""

    VIEW: ClassVar[str] = "player_ratings"
    pool: str
    player_id: str
    rating: float
    uncertainty: float
    matches: int
    updated_at: datetime | None


@dataclass(frozen=True, slots=True)
class BackfillStatus(_Row):
    """A row of ``backfill_status`` (server logins): open, filled, expired or cancelled."""

    VIEW: ClassVar[str] = "backfill_status"
    request_id: int
    queue: str
    session_id: str
    status: str
    reason: str | None
    open_slots: tuple[int, ...]
    created_at: datetime
    expires_at: datetime
    attempted_at: datetime | None
    match_id: int | None
    round_id: int | None
    filled_by: tuple[str, ...] | None
    filled_players: Any


@dataclass(frozen=True, slots=True)
class Server(_Row):
    """A row of ``my_servers`` (server logins): ready or allocated, and to which match."""

    VIEW: ClassVar[str] = "my_servers"
    server_id: str
    region: str
    address: str
    status: str
    match_id: int | None
    announced_at: datetime | None
    ready_since: datetime | None
    allocated_at: datetime | None


def _member_json(m: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"player_id": m.player_id}
    out.update(extra)
    # Left out rather than null: a rated queue reads a missing skill as "their rating".
    for name in ("skill", "skill_sigma", "latencies", "peer_pings", "roles", "side", "attributes"):
        value = getattr(m, name)
        if value is not None:
            out[name] = list(value) if name == "roles" else dict(value) if isinstance(value, Mapping) else value
    return out


@dataclass(frozen=True, slots=True)
class PartyMember:
    """A member of ``enqueue_party``: the fields of ``enqueue``.

    ``skill`` None: the member's built-in rating (rated queues only).
    """

    player_id: str
    skill: float | None = None
    latencies: Mapping[str, float] | None = None
    peer_pings: Mapping[str, float] | None = None
    roles: Sequence[str] | None = None
    side: float | None = None
    skill_sigma: float | None = None
    attributes: Mapping[str, str | Sequence[str]] | None = None

    def to_json(self) -> dict[str, Any]:
        return _member_json(self, {})


@dataclass(frozen=True, slots=True)
class BackfillMember:
    """A current member of a running session, for ``request_backfill``."""

    player_id: str
    team: int
    skill: float | None = None
    latencies: Mapping[str, float] | None = None
    peer_pings: Mapping[str, float] | None = None
    roles: Sequence[str] | None = None
    side: float | None = None
    skill_sigma: float | None = None
    attributes: Mapping[str, str | Sequence[str]] | None = None

    def to_json(self) -> dict[str, Any]:
        return _member_json(self, {"team": self.team})
