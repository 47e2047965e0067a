"""Python client of the matchmaker (psycopg 3): enqueue players, follow their status and
matches, answer ready checks, report results, and, for game-server logins, announce
servers and ask for backfill. Sync (:class:`Client`) and asyncio (:class:`AsyncClient`).
"""

from ._version import __version__
from .aio import AsyncClient
from .client import Client
from .errors import MatchmakerError, PermissionDenied, Refusal, Timeout, Unavailable
from .events import (
    CancelledEvent,
    CountdownEvent,
    Event,
    MatchEvent,
    OtherEvent,
    Reconnected,
    Slot,
    parse_payload,
)
from .keepalive import AsyncKeepAlive, KeepAlive
from .models import (
    Avoid,
    BackfillMember,
    BackfillStatus,
    Countdown,
    MatchPlayer,
    PartyEntry,
    PartyMember,
    PlayerStatus,
    QueueInfo,
    Rating,
    Server,
)
from .retry import NO_RETRY, RetryPolicy
from .stream import AsyncEventStream, EventStream

__all__ = [
    "__version__",
    "Client",
    "AsyncClient",
    "EventStream",
    "AsyncEventStream",
    "KeepAlive",
    "AsyncKeepAlive",
    "RetryPolicy",
    "NO_RETRY",
    "MatchmakerError",
    "Refusal",
    "Unavailable",
    "PermissionDenied",
    "Timeout",
    "Event",
    "MatchEvent",
    "CancelledEvent",
    "CountdownEvent",
    "Reconnected",
    "OtherEvent",
    "Slot",
    "parse_payload",
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
