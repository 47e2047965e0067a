"""Event streams: a login's notifications of some queues, on a LISTEN connection of their
own, that survive a lost connection.

On every (re)connect a stream asks ``queue_channel`` again (the operators may change the
key), LISTENs, and only then reads ``player_status`` and ``match_details`` for what it
missed while it was down. Every match is delivered, each player of it once per kind,
whether it came as a notification or from the read.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from datetime import datetime, timedelta
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Iterator

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from . import errors
from .events import (
    COUNTDOWN_SQL,
    QUEUE_RULES_SQL,
    ROSTER_SQL,
    STATUS_SQL,
    Event,
    Ledger,
    Reconnected,
    parse_payload,
    recovered_events,
)
from .retry import RetryPolicy

__all__ = ["EventStream", "AsyncEventStream"]

# Reconnect forever, at most every few seconds: a stream outlives any outage.
RECONNECT = RetryPolicy(attempts=1_000_000_000, initial_delay=0.2, max_delay=5.0)


class _Core:
    """What the sync and async streams share: the queues, the channels, the time to
    recover from, and what was delivered."""

    def __init__(
        self,
        queues: Iterable[str],
        since: datetime | None,
        recover_window: timedelta,
        ping_every: float,
        reconnect: RetryPolicy,
    ) -> None:
        self.queues = list(dict.fromkeys(queues))
        if not self.queues:
            raise ValueError("a stream needs at least one queue")
        self._since = since
        self._window = recover_window
        self._ping_every = ping_every
        self._reconnect = reconnect
        self._ledger = Ledger()
        self._buffer: deque[Event] = deque()
        self._channels: dict[str, str] = {}
        # The server's clock at the last moment the connection was known to be up.
        self._alive_at: datetime | None = None
        self._last_ping = 0.0
        self._failures = 0
        self._next_try = 0.0
        self._lost: str | None = None
        self._closed = False

    def _window_start(self, now: datetime) -> datetime:
        if self._alive_at is None:  # the first connect
            if self._since is None:
                self._since = now
            return self._since
        assert self._since is not None
        return max(self._since, self._alive_at - self._window)

    def _recovered(
        self,
        rules: list[dict[str, Any]],
        statuses: list[dict[str, Any]],
        rosters: list[dict[str, Any]],
        countdowns: list[dict[str, Any]],
    ) -> None:
        ready = {r["queue"] for r in rules if r["ready_timeout"] is not None}
        if self._lost is not None:
            self._buffer.append(Reconnected(self._lost, self._failures))
        for event in recovered_events(ready, statuses, rosters, countdowns):
            admitted = self._ledger.admit(event)
            if admitted is not None:
                self._buffer.append(admitted)
        self._lost = None
        self._failures = 0

    def _ready_bound(self, rules: list[dict[str, Any]], start: datetime) -> datetime:
        # A ready check resolves within its timeout: a match made that long before the
        # window may have turned ready (or been cancelled) inside it.
        longest = max(
            (r["ready_timeout"] for r in rules if r["ready_timeout"] is not None),
            default=timedelta(0),
        )
        assert self._since is not None
        return max(self._since, start - longest)

    def _notification(self, channel: str, payload: str) -> None:
        queue = self._channels.get(channel)
        if queue is None:
            return
        admitted = self._ledger.admit(parse_payload(payload, queue))
        if admitted is not None:
            self._buffer.append(admitted)

    def _connection_lost(self, exc: BaseException) -> None:
        self._lost = str(exc).strip() or type(exc).__name__
        self._failures += 1
        self._next_try = time.monotonic() + self._reconnect.delay(self._failures)


class EventStream(_Core):
    """The notifications of ``queues`` for the login of ``connect``: a conninfo string,
    or a function returning a new ``psycopg.Connection`` (the stream owns it and sets it
    to autocommit). Use it as a context manager, then iterate or call :meth:`get`.

    ``since``: also deliver the matches made since then (default: from the first
    connect). ``recover_window``: how far before the last sign of life a reconnect looks
    for missed matches (longer than the queues' round budgets). ``ping_every``: how
    often an idle connection is checked.
    """

    def __init__(
        self,
        connect: str | Callable[[], psycopg.Connection[Any]],
        queues: Iterable[str],
        *,
        since: datetime | None = None,
        recover_window: timedelta = timedelta(minutes=2),
        ping_every: float = 5.0,
        reconnect: RetryPolicy = RECONNECT,
    ) -> None:
        super().__init__(queues, since, recover_window, ping_every, reconnect)
        if isinstance(connect, str):
            conninfo = connect
            self._factory: Callable[[], psycopg.Connection[Any]] = lambda: psycopg.connect(
                conninfo, autocommit=True
            )
        else:
            self._factory = connect
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> EventStream:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Connect and LISTEN (the first connect raises its error)."""
        try:
            self._connect()
        except psycopg.Error as exc:
            raise errors.translate(exc) from exc

    def close(self) -> None:
        self._closed = True
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connect(self) -> None:
        conn = self._factory()
        try:
            conn.autocommit = True
            with conn.cursor(row_factory=dict_row) as cur:
                now = cur.execute("SELECT now() AS now").fetchone()["now"]  # type: ignore[index]
                channels = {}
                for q in self.queues:
                    ch = cur.execute("SELECT queue_channel(queue => %s) AS c", [q]).fetchone()["c"]  # type: ignore[index]
                    cur.execute(sql.SQL("LISTEN {}").format(sql.Identifier(ch)))
                    channels[ch] = q
                self._channels = channels
                start = self._window_start(now)
                rules = cur.execute(QUEUE_RULES_SQL, [self.queues]).fetchall()
                statuses = cur.execute(STATUS_SQL, [self.queues]).fetchall()
                ids = [s["match_id"] for s in statuses]
                rosters = cur.execute(
                    ROSTER_SQL, [self.queues, start, ids, self._ready_bound(rules, start)]
                ).fetchall()
                countdowns = (
                    cur.execute(COUNTDOWN_SQL, [self.queues]).fetchall() if self._lost else []
                )
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._alive_at = now
        self._last_ping = time.monotonic()
        self._recovered(rules, statuses, rosters, countdowns)

    def _ping(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute("SELECT now()").fetchone()
        assert row is not None
        self._alive_at = row[0]
        self._last_ping = time.monotonic()

    def get(self, timeout: float | None = None) -> Event | None:
        """The next event; None when ``timeout`` seconds pass without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._buffer:
            if self._closed:
                raise RuntimeError("the stream is closed")
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return None
            if self._conn is None:
                wait = self._next_try - now
                if deadline is not None:
                    wait = min(wait, deadline - now)
                if wait > 0:
                    time.sleep(wait)
                    continue
                try:
                    self._connect()
                except psycopg.Error as exc:
                    self._connection_lost(exc)
                continue
            conn = self._conn
            slice_ = self._ping_every
            if deadline is not None:
                slice_ = min(slice_, max(0.0, deadline - now))
            try:
                for note in conn.notifies(timeout=slice_, stop_after=1):
                    self._notification(note.channel, note.payload)
                if time.monotonic() - self._last_ping >= self._ping_every:
                    self._ping(conn)
            except psycopg.Error as exc:
                conn.close()
                self._conn = None
                self._connection_lost(exc)
        return self._buffer.popleft()

    def __iter__(self) -> Iterator[Event]:
        while True:
            event = self.get()
            if event is not None:
                yield event


class AsyncEventStream(_Core):
    """The asyncio twin of :class:`EventStream`: ``connect`` is a conninfo string or a
    coroutine function returning a new ``psycopg.AsyncConnection``. ``async with`` it,
    then ``async for`` or ``await get()``."""

    def __init__(
        self,
        connect: str | Callable[[], Awaitable[psycopg.AsyncConnection[Any]]],
        queues: Iterable[str],
        *,
        since: datetime | None = None,
        recover_window: timedelta = timedelta(minutes=2),
        ping_every: float = 5.0,
        reconnect: RetryPolicy = RECONNECT,
    ) -> None:
        super().__init__(queues, since, recover_window, ping_every, reconnect)
        if isinstance(connect, str):
            conninfo = connect

            async def factory() -> psycopg.AsyncConnection[Any]:
                return await psycopg.AsyncConnection.connect(conninfo, autocommit=True)

            self._factory: Callable[[], Awaitable[psycopg.AsyncConnection[Any]]] = factory
        else:
            self._factory = connect
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def __aenter__(self) -> AsyncEventStream:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        try:
            await self._connect()
        except psycopg.Error as exc:
            raise errors.translate(exc) from exc

    async def close(self) -> None:
        self._closed = True
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def _connect(self) -> None:
        conn = await self._factory()
        try:
            await conn.set_autocommit(True)
            async with conn.cursor(row_factory=dict_row) as cur:
                now = (await (await cur.execute("SELECT now() AS now")).fetchone())["now"]  # type: ignore[index]
                channels = {}
                for q in self.queues:
                    await cur.execute("SELECT queue_channel(queue => %s) AS c", [q])
                    ch = (await cur.fetchone())["c"]  # type: ignore[index]
                    await cur.execute(sql.SQL("LISTEN {}").format(sql.Identifier(ch)))
                    channels[ch] = q
                self._channels = channels
                start = self._window_start(now)
                rules = await (await cur.execute(QUEUE_RULES_SQL, [self.queues])).fetchall()
                statuses = await (await cur.execute(STATUS_SQL, [self.queues])).fetchall()
                ids = [s["match_id"] for s in statuses]
                await cur.execute(
                    ROSTER_SQL, [self.queues, start, ids, self._ready_bound(rules, start)]
                )
                rosters = await cur.fetchall()
                countdowns = []
                if self._lost:
                    countdowns = await (await cur.execute(COUNTDOWN_SQL, [self.queues])).fetchall()
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        self._alive_at = now
        self._last_ping = time.monotonic()
        self._recovered(rules, statuses, rosters, countdowns)

    async def _ping(self, conn: psycopg.AsyncConnection[Any]) -> None:
        row = await (await conn.execute("SELECT now()")).fetchone()
        assert row is not None
        self._alive_at = row[0]
        self._last_ping = time.monotonic()

    async def get(self, timeout: float | None = None) -> Event | None:
        """The next event; None when ``timeout`` seconds pass without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._buffer:
            if self._closed:
                raise RuntimeError("the stream is closed")
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return None
            if self._conn is None:
                wait = self._next_try - now
                if deadline is not None:
                    wait = min(wait, deadline - now)
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                try:
                    await self._connect()
                except psycopg.Error as exc:
                    self._connection_lost(exc)
                continue
            conn = self._conn
            slice_ = self._ping_every
            if deadline is not None:
                slice_ = min(slice_, max(0.0, deadline - now))
            try:
                async for note in conn.notifies(timeout=slice_, stop_after=1):
                    self._notification(note.channel, note.payload)
                if time.monotonic() - self._last_ping >= self._ping_every:
                    await self._ping(conn)
            except psycopg.Error as exc:
                await conn.close()
                self._conn = None
                self._connection_lost(exc)
        return self._buffer.popleft()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while True:
            event = await self.get()
            if event is not None:
                yield event
