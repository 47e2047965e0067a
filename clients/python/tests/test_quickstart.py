"""The quickstart example, run as a program against the live daemon, and the refusal
parser on the messages the guide lists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from matchmaker_client.errors import parse_refusal

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


@pytest.mark.parametrize("queue,n", [("duo", 4), ("rc", 2)])
def test_quickstart_prints_one_line_per_matched_player(client_url: str, queue: str, n: int) -> None:
    env = dict(os.environ, DATABASE_URL=client_url)
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), queue, str(n), "--timeout", "60"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    matched = [re.fullmatch(r"matched: (qs-\w+-\d+) in match (\d+) \(round \d+\), team \d", l) for l in lines]
    assert all(matched), lines
    players = [m.group(1) for m in matched if m]
    assert len(players) == n and len(set(players)) == n


@pytest.mark.parametrize(
    "message,expected",
    [
        ("latencies.eu-west = -3: must be between 0 and 10000 ms",
         ("latencies.eu-west", "-3", "must be between 0 and 10000 ms")),
        ("player_id = 'alice': is already queued in queue ranked_3v3 (cancel it first)",
         ("player_id", "alice", "is already queued in queue ranked_3v3 (cancel it first)")),
        ("player_id = 'a: b''s': contains control characters",
         ("player_id", "a: b's", "contains control characters")),
        ("latencies = 'moon': unknown region; this queue's regions: eu-west, eu-central",
         ("latencies", "moon", "unknown region; this queue's regions: eu-west, eu-central")),
        ("members[].attributes.build = 1.4.2, 1.5.0: party members must share it (queue q's filters.same)",
         ("members[].attributes.build", "1.4.2, 1.5.0", "party members must share it (queue q's filters.same)")),
        ("player_ids = {alice,NULL}: must not contain NULL",
         ("player_ids", "{alice,NULL}", "must not contain NULL")),
        ("skill = NULL: is required", ("skill", None, "is required")),
        ("player_id = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...: is longer than 64 characters",
         ("player_id", "x" * 76 + "...", "is longer than 64 characters")),
        ("invalid input syntax for type json", None),
    ],
)
def test_parse_refusal(message: str, expected: tuple | None) -> None:
    assert parse_refusal(message) == expected
