"""Enqueue N players into QUEUE and print one line per player's match as it arrives.

    DATABASE_URL=postgres://game_backend:PASSWORD@HOST/DB python examples/quickstart.py QUEUE N

As a matchmaker_client login: LISTEN first (the event stream), enqueue, keep the tickets
alive, accept a ready check where the queue has one, and print each player's match:

    matched: qs-3f2a09-1 in match 42 (round 7), team 0

Exit status: 0 when every player is matched; 1 when one left the queue without a match
(the reason is printed) or on an error; 2 after --timeout seconds (default 300), having
cancelled the players still waiting.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time

import psycopg

from matchmaker_client import Client, EventStream, KeepAlive, MatchEvent, MatchmakerError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queue")
    parser.add_argument("n", type=int)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL")
    if not url:
        print("error: set DATABASE_URL to a matchmaker_client login", file=sys.stderr)
        return 1
    run = secrets.token_hex(3)
    players = [f"qs-{run}-{i}" for i in range(1, args.n + 1)]
    try:
        with psycopg.connect(url, autocommit=True) as conn, EventStream(url, [args.queue]) as events:
            return wait_for_matches(Client(conn), events, args.queue, players, args.timeout)
    except MatchmakerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def wait_for_matches(
    client: Client, events: EventStream, queue: str, players: list[str], timeout: float
) -> int:
    info = client.queue(queue)
    if info is None:
        print(f"error: no queue {queue!r}; queues: {', '.join(q.queue for q in client.queues())}")
        return 1
    skill = None if info.rated else 1500.0  # a rated queue plays each at their rating
    for p in players:
        client.enqueue(queue, p, skill)
    waiting = set(players)
    left = False
    deadline = time.monotonic() + timeout
    next_poll = time.monotonic() + 5
    with KeepAlive(client, queue, players=players) as keeper:
        while waiting and time.monotonic() < deadline:
            event = events.get(timeout=1.0)
            if isinstance(event, MatchEvent):
                ours = [s for s in event.players if s.player_id in waiting]
                if event.kind == "ready_check":
                    for s in ours:
                        client.accept_match(s.player_id, event.match_id)
                elif event.kind in ("match", "ready"):
                    for s in ours:
                        print(f"matched: {s.player_id} in match {event.match_id} "
                              f"(round {event.round_id}), team {s.team}", flush=True)
                        waiting.discard(s.player_id)
                        keeper.discard(s.player_id)
            if time.monotonic() >= next_poll:  # the stream is the fast path; status the truth
                next_poll = time.monotonic() + 5
                for s in client.player_status(sorted(waiting), queue):
                    if s.status not in ("queued", "pending", "matched"):
                        print(f"left: {s.player_id} is {s.status}: {s.reason}", flush=True)
                        waiting.discard(s.player_id)
                        keeper.discard(s.player_id)
                        left = True
    if waiting:
        for p in sorted(waiting):
            client.cancel(p, queue)
        print(f"timeout: cancelled {', '.join(sorted(waiting))}", flush=True)
        return 2
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
