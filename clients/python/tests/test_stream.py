"""The event streams across a database restart: every match of the login's players is
delivered, none twice."""

from __future__ import annotations

import asyncio
import collections
import time

import psycopg_pool
import pytest

import matchmaker_client as mc
from conftest import Matchmaker, unique, wait_for

# Patient enough to ride out a restart of the server.
PATIENT = mc.RetryPolicy(attempts=30, initial_delay=0.2, max_delay=1.0)


def _deliveries(events: list[mc.Event]) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for e in events:
        if isinstance(e, mc.MatchEvent) and e.kind == "match":
            counts.update(e.player_ids())
    return counts


def test_sync_stream_recovers_what_it_missed(matchmaker: Matchmaker, client_url: str) -> None:
    with psycopg_pool.ConnectionPool(
        client_url, min_size=1, max_size=2, check=psycopg_pool.ConnectionPool.check_connection
    ) as pool:
        client = mc.Client(pool, retry=PATIENT)
        events: list[mc.Event] = []
        with mc.EventStream(client_url, ["duo"], ping_every=0.5) as stream:

            def drain_until(players: list[str]) -> None:
                def done() -> bool:
                    event = stream.get(timeout=0.5)
                    if event is not None:
                        events.append(event)
                    return set(players) <= set(_deliveries(events))

                wait_for(f"matches of {players}", done)

            wave1 = [unique("w1") for _ in range(4)]
            for p in wave1:
                client.enqueue("duo", p)
            drain_until(wave1)

            # The stream is not read while the server restarts and a match is made: its
            # notification goes to a connection that no longer exists.
            matchmaker.cut_connections()
            wave2 = [unique("w2") for _ in range(4)]
            for p in wave2:
                client.enqueue("duo", p)
            wait_for(
                "wave 2 matched",
                lambda: all(s.status == "matched" for s in client.player_status(wave2, "duo"))
                and len(client.player_status(wave2, "duo")) == 4,
            )
            drain_until(wave2)

            wave3 = [unique("w3") for _ in range(4)]
            for p in wave3:
                client.enqueue("duo", p)
            drain_until(wave3)

    counts = _deliveries(events)
    assert all(counts[p] == 1 for p in wave1 + wave2 + wave3), counts
    assert any(isinstance(e, mc.Reconnected) for e in events)
    recovered = {p for e in events if isinstance(e, mc.MatchEvent) and e.recovered for p in e.player_ids()}
    assert set(wave2) <= recovered
    assert not recovered & set(wave1 + wave3)


async def test_async_stream_across_a_restart(matchmaker: Matchmaker, client_url: str) -> None:
    async with psycopg_pool.AsyncConnectionPool(
        client_url,
        min_size=1,
        max_size=2,
        check=psycopg_pool.AsyncConnectionPool.check_connection,
    ) as pool:
        client = mc.AsyncClient(pool, retry=PATIENT)
        events: list[mc.Event] = []
        async with mc.AsyncEventStream(client_url, ["duo"], ping_every=0.5) as stream:

            async def consume() -> None:
                async for event in stream:
                    events.append(event)

            reader = asyncio.create_task(consume())
            players: list[str] = []
            try:
                for wave in range(4):
                    batch = [unique(f"a{wave}") for _ in range(4)]
                    players += batch
                    for p in batch:
                        await client.enqueue("duo", p)
                    if wave == 1:
                        # Restart while the round of this wave may be committing.
                        await asyncio.to_thread(matchmaker.cut_connections)
                    await asyncio.sleep(0.7)

                deadline = time.monotonic() + 60
                while not set(players) <= set(_deliveries(events)):
                    assert time.monotonic() < deadline, (players, _deliveries(events))
                    await asyncio.sleep(0.2)
                await asyncio.sleep(1.5)  # room for a duplicate to show up
            finally:
                reader.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await reader

    counts = _deliveries(events)
    assert all(counts[p] == 1 for p in players), counts
    assert any(isinstance(e, mc.Reconnected) for e in events)
    statuses = await _statuses(client_url, players)
    assert statuses == {"matched"}


async def _statuses(url: str, players: list[str]) -> set[str]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as conn:
        rows = await mc.AsyncClient(conn).player_status(players, "duo")
    assert len(rows) == len(players)
    return {r.status for r in rows}
