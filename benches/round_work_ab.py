#!/usr/bin/env python3
"""Round database work of two builds, side by side: does a change make a round's
snapshot and commit dearer?

One run of `matchmaker-lab bench-db` moves by more than 10% on a shared host, and the host's
speed drifts over minutes, so the two builds run alternately in A B B A order, and each
quadruple gives one ratio (B's two mean round totals over A's two). The median and the
range of those ratios are the figure.

    benches/round_work_ab.py A_BINARY B_BINARY [SIZE:REPEAT ...]

A is the reference build (e.g. `git worktree add /tmp/base main && cargo build --release`
there), B the changed one. SIZE:REPEAT defaults to 300:10 10000:3. Each binary is one with the bench-db subcommand (`target/release/matchmaker-lab`). A build whose bench-db
has no `--rounds-only` runs a 1 s enqueue measurement after its rounds instead; only the
round table is read. DATABASE_URL, as bench-db reads it (each run makes and drops its own scratch
database); without it every run starts a private PostgreSQL.

Environment: PAIRS (quadruples per size, 4).
"""

import os
import statistics
import subprocess
import sys


def round_only_args(binary):
    help_text = subprocess.run(
        [binary, "bench-db", "--help"], capture_output=True, text=True, check=True
    ).stdout
    if "--rounds-only" in help_text:
        return ["--rounds-only"]
    return ["--enqueue-for", "1s", "--load-round-size", "300", "--connections", "1"]


def columns(header, row):
    """The row's values by column name: values are right-aligned under their names."""
    values, start, out = row.split(), 0, {}
    for value in values:
        end = row.index(value, start) + len(value)
        out[header[start:end].strip()] = float(value)
        start = end
    return out


def total_ms(binary, extra, size, repeat):
    """Mean round database work (snapshot + commit) of one bench-db run, in ms."""
    run = subprocess.run(
        [binary, "bench-db", "--sizes", str(size), "--repeat", str(repeat), *extra],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        sys.exit(f"{binary} bench-db failed:\n{run.stdout}{run.stderr}")
    lines = run.stdout.splitlines()
    for i, line in enumerate(lines):
        if "players" in line and "total ms" in line:
            return columns(line, lines[i + 1])["total ms"]
    sys.exit(f"{binary} bench-db printed no round table:\n{run.stdout}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    a, b = sys.argv[1], sys.argv[2]
    runs = [tuple(int(x) for x in s.split(":")) for s in sys.argv[3:]] or [
        (300, 10),
        (10000, 3),
    ]
    pairs = int(os.environ.get("PAIRS", "4"))
    extra = {a: round_only_args(a), b: round_only_args(b)}
    print(f"A = {a}\nB = {b}\nround database work, mean ms per round; ratio = B / A")
    for size, repeat in runs:
        ratios = []
        for _ in range(pairs):
            a1 = total_ms(a, extra[a], size, repeat)
            b1 = total_ms(b, extra[b], size, repeat)
            b2 = total_ms(b, extra[b], size, repeat)
            a2 = total_ms(a, extra[a], size, repeat)
            ratio = (b1 + b2) / (a1 + a2)
            ratios.append(ratio)
            print(
                f"{size:>6} players x{repeat}: A {a1:8.1f} {a2:8.1f}  "
                f"B {b1:8.1f} {b2:8.1f}  ratio {ratio:.3f}",
                flush=True,
            )
        print(
            f"{size:>6} players: median ratio {statistics.median(ratios):.3f} "
            f"(range {min(ratios):.3f}-{max(ratios):.3f}, {pairs} A B B A quadruples)",
            flush=True,
        )


if __name__ == "__main__":
    main()
