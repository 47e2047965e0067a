"""Keep waiting players' tickets alive on a timer: a thread for :class:`Client`, a task
for :class:`AsyncClient`. A ticket not kept alive for the queue's ``ticket_ttl`` expires.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from .aio import AsyncClient
    from .client import Client

__all__ = ["KeepAlive", "AsyncKeepAlive"]

# keep_alive takes at most this many ids per call.
MAX_IDS = 10_000


class _Players:
    def __init__(self, players: Iterable[str]) -> None:
        self._players: set[str] = set(players)
        self._mutex = threading.Lock()
        self.last_refreshed: int | None = None
        self.last_error: BaseException | None = None

    def add(self, *player_ids: str) -> None:
        with self._mutex:
            self._players.update(player_ids)

    def discard(self, *player_ids: str) -> None:
        """Stop keeping these alive (matched, cancelled, gone)."""
        with self._mutex:
            self._players.difference_update(player_ids)

    @property
    def players(self) -> frozenset[str]:
        with self._mutex:
            return frozenset(self._players)

    def _batches(self) -> list[list[str]]:
        ids = sorted(self.players)
        return [ids[i : i + MAX_IDS] for i in range(0, len(ids), MAX_IDS)]


class KeepAlive(_Players):
    """A daemon thread that calls ``keep_alive`` for its players every ``every`` seconds
    (None: the queue's ``keep_alive_every``). Errors go to ``on_error`` (and
    ``last_error``) and the timer goes on: the next tick tries again."""

    def __init__(
        self,
        client: Client,
        queue: str | None = None,
        *,
        every: float | None = None,
        players: Iterable[str] = (),
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        super().__init__(players)
        if every is None and queue is None:
            raise ValueError("give `every` when keeping every queue alive")
        self._client = client
        self._queue = queue
        self._every = every
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> KeepAlive:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._every is None:
            assert self._queue is not None
            info = self._client.queue(self._queue)
            if info is None:
                raise ValueError(f"no queue {self._queue!r} in queue_catalog")
            self._every = info.keep_alive_every.total_seconds()
        self._thread = threading.Thread(target=self._loop, name="matchmaker-keep-alive", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def tick(self) -> int:
        """Refresh now; how many entries were refreshed."""
        total = 0
        for batch in self._batches():
            total += self._client.keep_alive(batch, self._queue)
        self.last_refreshed = total
        return total

    def _loop(self) -> None:
        assert self._every is not None
        while not self._stop.wait(self._every):
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - reported, and the next tick retries
                self.last_error = exc
                if self._on_error is not None:
                    self._on_error(exc)


class AsyncKeepAlive(_Players):
    """The asyncio twin of :class:`KeepAlive`: a task on the running loop."""

    def __init__(
        self,
        client: AsyncClient,
        queue: str | None = None,
        *,
        every: float | None = None,
        players: Iterable[str] = (),
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        super().__init__(players)
        if every is None and queue is None:
            raise ValueError("give `every` when keeping every queue alive")
        self._client = client
        self._queue = queue
        self._every = every
        self._on_error = on_error
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AsyncKeepAlive:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._every is None:
            assert self._queue is not None
            info = await self._client.queue(self._queue)
            if info is None:
                raise ValueError(f"no queue {self._queue!r} in queue_catalog")
            self._every = info.keep_alive_every.total_seconds()
        self._task = asyncio.create_task(self._loop(), name="matchmaker-keep-alive")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def tick(self) -> int:
        total = 0
        for batch in self._batches():
            total += await self._client.keep_alive(batch, self._queue)
        self.last_refreshed = total
        return total

    async def _loop(self) -> None:
        assert self._every is not None
        while True:
            await asyncio.sleep(self._every)
            try:
                await self.tick()
            except Exception as exc:  # noqa: BLE001 - reported, and the next tick retries
                self.last_error = exc
                if self._on_error is not None:
                    self._on_error(exc)
