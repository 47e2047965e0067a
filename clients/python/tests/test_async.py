"""The asyncio client against the live daemon."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

import matchmaker_client as mc
from conftest import unique


@pytest.fixture
async def aclient(client_url: str):
    async with AsyncConnectionPool(client_url, min_size=1, max_size=4) as pool:
        yield mc.AsyncClient(pool)


async def _until(what: str, predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)


async def test_async_enqueue_match_and_cancel(client_url: str, aclient: mc.AsyncClient) -> None:
    info = await aclient.queue("duo")
    assert info is not None and info.rated
    entries = await aclient.enqueue_party(
        "duo", "crew", [mc.PartyMember("ap1"), {"player_id": "ap2", "skill": 1500}]
    )
    assert [e.player_id for e in entries] == ["ap1", "ap2"]
    solos = [unique("as") for _ in range(2)]
    async with mc.AsyncEventStream(client_url, ["duo"]) as stream:
        for p in solos:
            await aclient.enqueue("duo", p, 1500)
        event = None
        while not (isinstance(event, mc.MatchEvent) and event.kind == "match"):
            event = await asyncio.wait_for(stream.get(), 30)
    ours = ["ap1", "ap2", *solos]
    assert sorted(event.player_ids()) == sorted(ours)
    crew = {s.team for s in event.players if s.party_id == "crew"}
    assert len(crew) == 1  # a party plays on one team
    statuses = await aclient.player_status(ours, "duo")
    assert {s.status for s in statuses} == {"matched"} and {s.match_id for s in statuses} == {event.match_id}
    roster = await aclient.match_details(event.match_id)
    assert sorted(r.player_id for r in roster) == sorted(ours)
    assert await aclient.cancel("ap1", "duo") == 0  # matched: nothing to cancel

    await aclient.enqueue("hold", "w", 1500)
    assert await aclient.cancel("w", "hold") == 1
    assert (await aclient.status("w", "hold")).status == "cancelled"  # type: ignore[union-attr]


async def test_async_refusal(aclient: mc.AsyncClient) -> None:
    with pytest.raises(mc.Refusal) as bad:
        await aclient.enqueue("hold", "x" * 65, 1500)
    assert bad.value.field == "player_id"
    assert bad.value.rule == "is longer than 64 characters"
    assert bad.value.value is not None and bad.value.value.startswith("xxx")


async def test_async_keep_alive_task(aclient: mc.AsyncClient) -> None:
    await aclient.enqueue("short", "kept", 1500)
    await aclient.enqueue("short", "dropped", 1500)
    async with mc.AsyncKeepAlive(aclient, "short", players=["kept"]) as keeper:
        await asyncio.sleep(4.5)
        assert keeper.last_refreshed == 1 and keeper.last_error is None
    assert (await aclient.status("kept", "short")).status == "queued"  # type: ignore[union-attr]
    assert (await aclient.status("dropped", "short")).status == "expired"  # type: ignore[union-attr]


async def test_async_cancellation_rolls_back(client_url: str, aclient: mc.AsyncClient) -> None:
    # A transaction of the login left open after an enqueue holds the login's next
    # enqueue into the queue.
    blocker = await psycopg.AsyncConnection.connect(client_url)
    await blocker.execute("SELECT enqueue(queue => 'hold', player_id => 'holder', skill => 1500)")
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(aclient.enqueue("hold", "late", 1500), 0.4)
        with pytest.raises(mc.Timeout):
            await aclient.with_options(timeout=0.4).enqueue("hold", "later", 1500)
        assert time.monotonic() - started < 2.0
    finally:
        await blocker.rollback()
        await blocker.close()
    assert await aclient.status("late", "hold") is None
    assert await aclient.status("later", "hold") is None
    assert await aclient.enqueue("hold", "late", 1500) > 0
