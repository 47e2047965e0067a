#!/usr/bin/env python3
"""Paired speed comparison of two `matchmaker` binaries that make the same decisions.

On a shared host one run's speed moves by 10-20%, so a few timed runs cannot tell apart
changes of 5%. This runs N back-to-back pairs of identical work (one restart of a fixed
number of steps, one thread, pinned to one core; the order inside a pair alternates),
and reports B's speed relative to A as the mean log ratio of the pairs' times with its
standard error. 60-80 pairs give a standard error of about 1%.

    benches/speed.py N BINARY_A BINARY_B

Pools are /tmp/poolK.json (`matchmaker-lab bench --write-pool /tmp/poolK.json --pool-seed K`).
Environment: STEPS (500000), POOLS (1,2,3), CORE (1: the CPU to pin the runs to).

Use it only for changes that keep the search's decisions (the fixed-step check in
docs/tuning.md): with other changes the two binaries do different work.
"""

import json
import math
import os
import statistics
import subprocess
import sys

UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))


def seconds(humantime):
    """`1s 474us 810ns` (the `elapsed` of `optimize` output) in seconds."""
    total = 0.0
    for part in humantime.split():
        for suffix, scale in UNITS:
            if part.endswith(suffix):
                total += float(part[: -len(suffix)]) * scale
                break
    return total


def elapsed(binary, pool, seed, steps, core):
    cmd = ["taskset", "-c", core, binary, "optimize", "--pool", f"/tmp/pool{pool}.json",
           "--restarts", "1", "--moves-per-restart", steps, "--threads", "1",
           "--seed", str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return seconds(json.loads(out.stdout)["stats"]["elapsed"])


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    n, a, b = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    steps = os.environ.get("STEPS", "500000")
    pools = os.environ.get("POOLS", "1,2,3").split(",")
    core = os.environ.get("CORE", "1")
    logs = []
    for r in range(n):
        pool, seed = pools[r % len(pools)], r % 7 + 1
        if r % 2 == 0:
            ta = elapsed(a, pool, seed, steps, core)
            tb = elapsed(b, pool, seed, steps, core)
        else:
            tb = elapsed(b, pool, seed, steps, core)
            ta = elapsed(a, pool, seed, steps, core)
        logs.append(math.log(ta / tb))
    mean = statistics.mean(logs)
    se = statistics.stdev(logs) / len(logs) ** 0.5 if n > 1 else 0.0
    print(f"B / A speed: {math.exp(mean):.4f} (mean log ratio {mean:+.4f} ± {se:.4f}, "
          f"{n} pairs)")


if __name__ == "__main__":
    main()
