"""The asyncio client: every call of the client API on a psycopg async connection or pool."""

from __future__ import annotations

import contextlib
import asyncio
import time
from datetime import timedelta
from typing import Any, AsyncIterator, Iterable, Mapping, Sequence

import psycopg
from psycopg.rows import dict_row

from . import _calls as calls
from . import errors
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
from .retry import RetryPolicy

__all__ = ["AsyncClient"]


def _is_pool(source: Any) -> bool:
    return not isinstance(source, (psycopg.Connection, psycopg.AsyncConnection)) and hasattr(
        source, "connection"
    )


class AsyncClient:
    """The client API on ``source``: a ``psycopg.AsyncConnection`` or a
    ``psycopg_pool.AsyncConnectionPool`` that the caller opened and closes.

    Each call runs in a transaction of its own and is committed before it returns (an
    answer to a ready check counts only once committed). On a connection already inside
    a transaction the call joins it (as a savepoint) and the commit is the caller's.

    Errors are typed (:mod:`matchmaker_client.errors`). While the server is unavailable
    a call is retried by ``retry`` when a second attempt cannot write twice: any call
    that failed before its commit was sent, and an idempotent call (the reads,
    ``keep_alive``, ``cancel``, the ready-check answers, ``avoid`` and ``unavoid``, the
    server announcements) in every case. A bare connection that broke cannot be
    retried on; a pool hands out a fresh one.

    ``reads``, a second connection or pool on a hot standby (a multi-host URL with
    ``target_session_attrs=prefer-standby``), takes the reads of views (status,
    countdown, catalog, match details, avoids, ratings, backfill status, servers), as
    old as the standby's replay lag; every call that writes stays on ``source``.

    ``timeout`` (seconds) bounds each call, retries included: its statement is
    cancelled on the server and :class:`~matchmaker_client.errors.Timeout` raised. A
    call whose task is cancelled (``asyncio.timeout``, ``Task.cancel``) is cancelled the
    same way and rolled back.
    """

    def __init__(
        self,
        source: psycopg.AsyncConnection[Any] | Any,
        *,
        retry: RetryPolicy | None = RetryPolicy(),
        timeout: float | None = None,
        reads: Any | None = None,
    ) -> None:
        if isinstance(source, psycopg.Connection):
            raise TypeError("a (sync) Connection goes to Client")
        self._source = source
        self._pooled = _is_pool(source)
        self._retry = retry or RetryPolicy(attempts=1)
        self._timeout = timeout
        # A bare connection runs one call's transaction at a time (a keep-alive task
        # shares it with the caller's tasks).
        self._lock = asyncio.Lock()
        # Reads of views may go to a standby; writes and LISTEN never do.
        self._reads = reads
        self._reads_pooled = reads is not None and _is_pool(reads)
        self._reads_lock = asyncio.Lock()

    def with_options(
        self, *, retry: RetryPolicy | None | object = ..., timeout: float | None | object = ...
    ) -> AsyncClient:
        """A client on the same source with other options."""
        clone = AsyncClient.__new__(AsyncClient)
        clone.__dict__.update(self.__dict__)
        if retry is not ...:
            clone._retry = retry or RetryPolicy(attempts=1)  # type: ignore[assignment]
        if timeout is not ...:
            clone._timeout = timeout  # type: ignore[assignment]
        return clone

    # ---- running a call -----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _connection(self, call: calls.Call) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        source, pooled, lock = self._source, self._pooled, self._lock
        if call.standby_ok and self._reads is not None:
            source, pooled, lock = self._reads, self._reads_pooled, self._reads_lock
        if pooled:
            async with source.connection() as conn:
                yield conn
        else:
            async with lock:
                yield source

    async def _run(self, call: calls.Call) -> Any:
        if self._timeout is None:
            return await self._attempts(call, None)
        deadline = time.monotonic() + self._timeout
        try:
            async with asyncio.timeout(self._timeout):
                return await self._attempts(call, deadline)
        except TimeoutError as exc:
            if isinstance(exc, errors.MatchmakerError):
                raise
            raise errors.Timeout(f"no answer within {self._timeout} s") from exc

    async def _attempts(self, call: calls.Call, deadline: float | None) -> Any:
        attempt = 0
        while True:
            attempt += 1
            committing = False
            nested = False
            try:
                async with self._connection(call) as conn:
                    nested = conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
                    async with conn.transaction():
                        async with conn.cursor(row_factory=dict_row) as cur:
                            await cur.execute(call.sql, call.params)
                            rows = await cur.fetchall()
                        committing = True
                    return calls.read_result(call, rows)
            except psycopg.Error as exc:
                if not self._may_retry(call, exc, attempt, committing, nested, deadline):
                    raise errors.translate(
                        exc, attempts=attempt, may_have_committed=committing
                    ) from exc
                await asyncio.sleep(self._retry.delay(attempt))

    def _may_retry(
        self,
        call: calls.Call,
        exc: psycopg.Error,
        attempt: int,
        committing: bool,
        nested: bool,
        deadline: float | None,
    ) -> bool:
        if attempt >= self._retry.attempts or nested or not errors.is_unavailable(exc):
            return False
        if committing and not call.idempotent:
            return False
        if not self._pooled and self._source.closed:
            return False
        return deadline is None or time.monotonic() < deadline

    # ---- queues ---------------------------------------------------------------------------

    async def queues(self) -> list[QueueInfo]:
        """Every queue of ``queue_catalog``, by name."""
        return await self._run(calls.queue_catalog())

    async def queue(self, queue: str) -> QueueInfo | None:
        """One queue of ``queue_catalog``; None when no daemon serves it."""
        return await self._run(calls.queue_catalog(queue))

    async def countdown(self, queue: str) -> Countdown | None:
        """The queue's countdown (``queue_countdown``)."""
        return await self._run(calls.queue_countdown(queue))

    async def countdowns(self) -> list[Countdown]:
        return await self._run(calls.queue_countdown())

    async def queue_channel(self, queue: str) -> str:
        """This login's notification channel of the queue."""
        return await self._run(calls.queue_channel(queue))

    # ---- players --------------------------------------------------------------------------

    async def enqueue(
        self,
        queue: str,
        player_id: str,
        skill: float | None = None,
        *,
        latencies: Mapping[str, float] | None = None,
        peer_pings: Mapping[str, float] | None = None,
        roles: Sequence[str] | None = None,
        side: float | None = None,
        skill_sigma: float | None = None,
        attributes: Mapping[str, str | Sequence[str]] | None = None,
    ) -> int:
        """Queue a solo player; returns the entry id. ``skill`` None: the player's
        built-in rating (rated queues; other queues refuse it)."""
        return await self._run(
            calls.enqueue(
                queue,
                player_id,
                skill,
                latencies=latencies,
                peer_pings=peer_pings,
                roles=roles,
                side=side,
                skill_sigma=skill_sigma,
                attributes=attributes,
            )
        )

    async def enqueue_party(
        self, queue: str, party_id: str, members: Sequence[PartyMember | Mapping[str, Any]]
    ) -> list[PartyEntry]:
        """Queue a party (2 to ``max_party_size`` members, one team); one entry each."""
        return await self._run(calls.enqueue_party(queue, party_id, members))

    async def keep_alive(self, player_ids: str | Iterable[str], queue: str | None = None) -> int:
        """Refresh the players' tickets (queue None: every queue); how many entries were
        refreshed. Fewer than expected: some left the queue, read ``player_status``."""
        return await self._run(calls.keep_alive(player_ids, queue))

    async def cancel(self, player_id: str, queue: str | None = None) -> int:
        """Take the player (and their party) out of the queue (None: every queue);
        how many entries were cancelled (0: nothing was queued)."""
        return await self._run(calls.cancel(player_id, queue))

    async def player_status(
        self, player_ids: str | Iterable[str] | None = None, queue: str | None = None
    ) -> list[PlayerStatus]:
        """The players' latest entries (None: every player of this login)."""
        return await self._run(calls.player_status(player_ids, queue))

    async def status(self, player_id: str, queue: str) -> PlayerStatus | None:
        """One player's latest entry in one queue."""
        rows = await self._run(calls.player_status([player_id], queue))
        return rows[0] if rows else None

    async def match_details(self, match_id: int) -> list[MatchPlayer]:
        """Every player of a match that holds one of this login's players."""
        return await self._run(calls.match_roster(match_id))

    async def latest_match(self, player_id: str, queue: str | None = None) -> MatchPlayer | None:
        """The player's latest match, as their row of ``match_details``."""
        return await self._run(calls.latest_match(player_id, queue))

    # ---- the ready check -------------------------------------------------------------------

    async def accept_match(self, player_id: str, match_id: int) -> str:
        """``accepted`` (``already_accepted`` the second time)."""
        return await self._run(calls.accept_match(player_id, match_id))

    async def decline_match(self, player_id: str, match_id: int) -> str:
        """``declined`` (``already_declined``)."""
        return await self._run(calls.decline_match(player_id, match_id))

    # ---- avoids -------------------------------------------------------------------------------

    async def avoid(
        self, player_id: str, avoided_player_id: str, duration: timedelta | None = None
    ) -> int:
        """Keep the two apart (None: until ``unavoid``); how many avoids the player holds."""
        return await self._run(calls.avoid(player_id, avoided_player_id, duration))

    async def unavoid(self, player_id: str, avoided_player_id: str) -> bool:
        return await self._run(calls.unavoid(player_id, avoided_player_id))

    async def avoid_list(self, player_id: str | None = None) -> list[Avoid]:
        return await self._run(calls.avoid_list(player_id))

    # ---- results ------------------------------------------------------------------------------

    async def report_result(
        self, match_id: int, team_ranks: Sequence[int], left_early: Sequence[str] | None = None
    ) -> str:
        """``recorded``, ``confirmed`` or ``disputed``. ``team_ranks[k]`` is the place of the
        k-th team (1 best, equal ranks a draw)."""
        return await self._run(calls.report_result(match_id, team_ranks, left_early))

    async def player_ratings(
        self, player_ids: str | Iterable[str] | None = None, pool: str | None = None
    ) -> list[Rating]:
        return await self._run(calls.player_ratings(player_ids, pool))

    # ---- game servers (matchmaker_server logins) ---------------------------------------------

    async def request_backfill(
        self,
        queue: str,
        session_id: str,
        members: Sequence[BackfillMember | Mapping[str, Any]],
        open_slots: Sequence[int],
        expires_in: timedelta | None = None,
        map: str | None = None,
    ) -> int:
        """Ask for players to refill a running session; returns the request id.

        ``map``: the map the session is played on, in a queue with maps; nobody who
        vetoes it is sent.
        """
        return await self._run(
            calls.request_backfill(queue, session_id, members, open_slots, expires_in, map)
        )

    async def cancel_backfill(self, request_id: int) -> bool:
        return await self._run(calls.cancel_backfill(request_id))

    async def backfill_status(
        self, session_id: str | None = None, request_id: int | None = None
    ) -> list[BackfillStatus]:
        return await self._run(calls.backfill_status(session_id, request_id))

    async def server_ready(
        self, server_id: str, region: str, address: str, ended_match: int | None = None
    ) -> str:
        """Announce a free server (also the heartbeat): ``ready`` or ``allocated``."""
        return await self._run(calls.server_ready(server_id, region, address, ended_match))

    async def server_gone(self, server_id: str) -> bool:
        return await self._run(calls.server_gone(server_id))

    async def my_servers(self) -> list[Server]:
        return await self._run(calls.my_servers())
