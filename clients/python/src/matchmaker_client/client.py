"""The synchronous client: every call of the client API on a psycopg connection or pool."""

from __future__ import annotations

import contextlib
import threading
import time
from datetime import timedelta
from typing import Any, Iterable, Iterator, Mapping, Sequence

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

__all__ = ["Client"]


def _is_pool(source: Any) -> bool:
    return not isinstance(source, (psycopg.Connection, psycopg.AsyncConnection)) and hasattr(
        source, "connection"
    )


class Client:
    """The client API on ``source``: a ``psycopg.Connection`` or a
    ``psycopg_pool.ConnectionPool`` that the caller opened and closes.

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
    cancelled on the server and :class:`~matchmaker_client.errors.Timeout` raised.
    """

    def __init__(
        self,
        source: psycopg.Connection[Any] | Any,
        *,
        retry: RetryPolicy | None = RetryPolicy(),
        timeout: float | None = None,
        reads: Any | None = None,
    ) -> None:
        if isinstance(source, psycopg.AsyncConnection):
            raise TypeError("an AsyncConnection goes to AsyncClient")
        self._source = source
        self._pooled = _is_pool(source)
        self._retry = retry or RetryPolicy(attempts=1)
        self._timeout = timeout
        # A bare connection runs one call's transaction at a time (a keep-alive thread
        # shares it with the caller's thread).
        self._lock = threading.RLock()
        # Reads of views may go to a standby; writes and LISTEN never do.
        self._reads = reads
        self._reads_pooled = reads is not None and _is_pool(reads)
        self._reads_lock = threading.RLock()

    def with_options(
        self, *, retry: RetryPolicy | None | object = ..., timeout: float | None | object = ...
    ) -> Client:
        """A client on the same source with other options."""
        clone = Client.__new__(Client)
        clone.__dict__.update(self.__dict__)
        if retry is not ...:
            clone._retry = retry or RetryPolicy(attempts=1)  # type: ignore[assignment]
        if timeout is not ...:
            clone._timeout = timeout  # type: ignore[assignment]
        return clone

    # ---- running a call -----------------------------------------------------------------

    @contextlib.contextmanager
    def _connection(self, call: calls.Call) -> Iterator[psycopg.Connection[Any]]:
        source, pooled, lock = self._source, self._pooled, self._lock
        if call.standby_ok and self._reads is not None:
            source, pooled, lock = self._reads, self._reads_pooled, self._reads_lock
        if pooled:
            with source.connection() as conn:
                yield conn
        else:
            with lock:
                yield source

    def _run(self, call: calls.Call) -> Any:
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        attempt = 0
        while True:
            attempt += 1
            committing = False
            nested = False
            try:
                with self._connection(call) as conn:
                    nested = conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
                    with conn.transaction():
                        with conn.cursor(row_factory=dict_row) as cur:
                            if deadline is not None:
                                left_ms = max(1, int((deadline - time.monotonic()) * 1000))
                                cur.execute(
                                    "SELECT set_config('statement_timeout', %s, true)",
                                    [f"{left_ms}ms"],
                                )
                            cur.execute(call.sql, call.params)
                            rows = cur.fetchall()
                        committing = True
                    return calls.read_result(call, rows)
            except psycopg.Error as exc:
                if (
                    deadline is not None
                    and errors.is_unavailable(exc)
                    and (exc.sqlstate == "57014" or time.monotonic() >= deadline)
                ):
                    raise errors.Timeout(
                        f"no answer within {self._timeout} s", sqlstate=exc.sqlstate
                    ) from exc
                if not self._may_retry(call, exc, attempt, committing, nested, deadline):
                    raise errors.translate(
                        exc, attempts=attempt, may_have_committed=committing
                    ) from exc
                pause = self._retry.delay(attempt)
                if deadline is not None:
                    pause = min(pause, max(0.0, deadline - time.monotonic()))
                time.sleep(pause)

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

    def queues(self) -> list[QueueInfo]:
        """Every queue of ``queue_catalog``, by name."""
        return self._run(calls.queue_catalog())

    def queue(self, queue: str) -> QueueInfo | None:
        """One queue of ``queue_catalog``; None when no daemon serves it."""
        return self._run(calls.queue_catalog(queue))

    def countdown(self, queue: str) -> Countdown | None:
        """The queue's countdown (``queue_countdown``)."""
        return self._run(calls.queue_countdown(queue))

    def countdowns(self) -> list[Countdown]:
        return self._run(calls.queue_countdown())

    def queue_channel(self, queue: str) -> str:
        """This login's notification channel of the queue."""
        return self._run(calls.queue_channel(queue))

    # ---- players --------------------------------------------------------------------------

    def enqueue(
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
        return self._run(
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

    def enqueue_party(
        self, queue: str, party_id: str, members: Sequence[PartyMember | Mapping[str, Any]]
    ) -> list[PartyEntry]:
        """Queue a party (2 to ``max_party_size`` members, one team); one entry each."""
        return self._run(calls.enqueue_party(queue, party_id, members))

    def keep_alive(self, player_ids: str | Iterable[str], queue: str | None = None) -> int:
        """Refresh the players' tickets (queue None: every queue); how many entries were
        refreshed. Fewer than expected: some left the queue, read ``player_status``."""
        return self._run(calls.keep_alive(player_ids, queue))

    def cancel(self, player_id: str, queue: str | None = None) -> int:
        """Take the player (and their party) out of the queue (None: every queue);
        how many entries were cancelled (0: nothing was queued)."""
        return self._run(calls.cancel(player_id, queue))

    def player_status(
        self, player_ids: str | Iterable[str] | None = None, queue: str | None = None
    ) -> list[PlayerStatus]:
        """The players' latest entries (None: every player of this login)."""
        return self._run(calls.player_status(player_ids, queue))

    def status(self, player_id: str, queue: str) -> PlayerStatus | None:
        """One player's latest entry in one queue."""
        rows = self._run(calls.player_status([player_id], queue))
        return rows[0] if rows else None

    def match_details(self, match_id: int) -> list[MatchPlayer]:
        """Every player of a match that holds one of this login's players."""
        return self._run(calls.match_roster(match_id))

    def latest_match(self, player_id: str, queue: str | None = None) -> MatchPlayer | None:
        """The player's latest match, as their row of ``match_details``."""
        return self._run(calls.latest_match(player_id, queue))

    # ---- the ready check -------------------------------------------------------------------

    def accept_match(self, player_id: str, match_id: int) -> str:
        """``accepted`` (``already_accepted`` the second time)."""
        return self._run(calls.accept_match(player_id, match_id))

    def decline_match(self, player_id: str, match_id: int) -> str:
        """``declined`` (``already_declined``)."""
        return self._run(calls.decline_match(player_id, match_id))

    # ---- avoids -------------------------------------------------------------------------------

    def avoid(
        self, player_id: str, avoided_player_id: str, duration: timedelta | None = None
    ) -> int:
        """Keep the two apart (None: until ``unavoid``); how many avoids the player holds."""
        return self._run(calls.avoid(player_id, avoided_player_id, duration))

    def unavoid(self, player_id: str, avoided_player_id: str) -> bool:
        return self._run(calls.unavoid(player_id, avoided_player_id))

    def avoid_list(self, player_id: str | None = None) -> list[Avoid]:
        return self._run(calls.avoid_list(player_id))

    # ---- results ------------------------------------------------------------------------------

    def report_result(
        self, match_id: int, team_ranks: Sequence[int], left_early: Sequence[str] | None = None
    ) -> str:
        """``recorded``, ``confirmed`` or ``disputed``. ``team_ranks[k]`` is the place of the
        k-th team (1 best, equal ranks a draw)."""
        return self._run(calls.report_result(match_id, team_ranks, left_early))

    def player_ratings(
        self, player_ids: str | Iterable[str] | None = None, pool: str | None = None
    ) -> list[Rating]:
        return self._run(calls.player_ratings(player_ids, pool))

    # ---- game servers (matchmaker_server logins) ---------------------------------------------

    def request_backfill(
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
        return self._run(
            calls.request_backfill(queue, session_id, members, open_slots, expires_in, map)
        )

    def cancel_backfill(self, request_id: int) -> bool:
        return self._run(calls.cancel_backfill(request_id))

    def backfill_status(
        self, session_id: str | None = None, request_id: int | None = None
    ) -> list[BackfillStatus]:
        return self._run(calls.backfill_status(session_id, request_id))

    def server_ready(
        self, server_id: str, region: str, address: str, ended_match: int | None = None
    ) -> str:
        """Announce a free server (also the heartbeat): ``ready`` or ``allocated``."""
        return self._run(calls.server_ready(server_id, region, address, ended_match))

    def server_gone(self, server_id: str) -> bool:
        return self._run(calls.server_gone(server_id))

    def my_servers(self) -> list[Server]:
        return self._run(calls.my_servers())
