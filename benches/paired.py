#!/usr/bin/env python3
"""Paired comparison of optimizer variants (docs/tuning.md, "Changing the search").

A single run's round score moves by more than most search changes gain, so variants are
compared on the same pools and seeds, run one after the other (the machine is shared
and its speed drifts), and reported as the mean paired difference ± its standard error.

    benches/paired.py NSEEDS NAME:BINARY[:ENV=V,...] NAME:BINARY[:ENV=V,...] ...

The first variant is the reference. Each variant is a `matchmaker` binary, optionally
with environment variables (for experimental knobs compiled into a scratch build). Pools
are /tmp/poolK.json, written by
`matchmaker-lab bench --write-pool /tmp/poolK.json --pool-seed K`, or the files POOL_FILES
names.

Environment: BUDGET (1s), THREADS (2), POOLS (1,2,3), SEED0 (first solver seed, 100),
MOVES (if set: one restart of exactly MOVES steps instead of a time budget),
RESTARTS (if set: that many restarts of the default length, or of MOVES steps: a fixed
amount of work, the same result on a loaded machine), POOL_FILES (comma-separated pool
files instead of POOLS), QUEUES (comma-separated queues; each pool is solved for each),
CONFIG (the config file the queues come from).
"""

import json
import os
import statistics
import subprocess
import sys


def parse_variant(arg):
    name, binary, *rest = arg.split(":")
    env = dict(kv.split("=", 1) for kv in rest[0].split(",")) if rest else {}
    return name, binary, env


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    nseeds = int(sys.argv[1])
    variants = [parse_variant(a) for a in sys.argv[2:]]
    budget = os.environ.get("BUDGET", "1s")
    threads = os.environ.get("THREADS", "2")
    seed0 = int(os.environ.get("SEED0", "100"))
    moves = os.environ.get("MOVES")
    restarts = os.environ.get("RESTARTS")
    if os.environ.get("POOL_FILES"):
        files = os.environ["POOL_FILES"].split(",")
    else:
        files = [f"/tmp/pool{k}.json" for k in os.environ.get("POOLS", "1,2,3").split(",")]
    queues = os.environ["QUEUES"].split(",") if os.environ.get("QUEUES") else [None]
    config = os.environ.get("CONFIG")
    pools = [(f, q) for f in files for q in queues]
    scores = {name: [] for name, _, _ in variants}
    rates = {name: [] for name, _, _ in variants}
    # per (variant, pool): scores and matches without a possible host
    by_pool = {(name, pool): [] for name, _, _ in variants for pool in pools}
    hostless = {(name, pool): [] for name, _, _ in variants for pool in pools}
    unmatched = {(name, pool): [] for name, _, _ in variants for pool in pools}
    for seed in range(seed0, seed0 + nseeds):
        for pool in pools:
            for name, binary, env in variants:
                file, queue = pool
                cmd = [binary, "optimize", "--pool", file, "--seed", str(seed),
                       "--threads", threads]
                cmd += ["--queue", queue] if queue else []
                cmd += ["--config", config] if config else []
                if restarts:
                    cmd += ["--restarts", restarts] + (["--moves-per-restart", moves] if moves else [])
                elif moves:
                    cmd += ["--restarts", "1", "--moves-per-restart", moves]
                else:
                    cmd += ["--budget", budget]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                                     env={**os.environ, **env})
                result = json.loads(out.stdout)
                scores[name].append(result["score"])
                rates[name].append(result["stats"]["moves_per_second"])
                by_pool[name, pool].append(result["score"])
                hostless[name, pool].append(
                    sum(m["factors"].get("two_hosts", 1.0) == 0.0 for m in result["matches"]))
                unmatched[name, pool].append(len(result["unmatched"]))
        print(f"seed {seed} done", file=sys.stderr)
    reference = variants[0][0]
    for name, _, _ in variants:
        diff = [x - y for x, y in zip(scores[name], scores[reference])]
        se = statistics.stdev(diff) / len(diff) ** 0.5 if name != reference and len(diff) > 1 else 0.0
        print(f"{name:12s} mean {statistics.mean(scores[name]):.5f}  "
              f"diff {statistics.mean(diff):+.5f} ± {se:.5f}  n={len(diff)}  "
              f"moves/s {statistics.mean(rates[name]):.0f}  "
              f"unmatched {statistics.mean(sum((unmatched[name, p] for p in pools), [])):.2f}")
    # where a difference comes from: each pool's mean difference, its mean number of
    # matches without any possible host (one such match is 1/11.5 of a match) and of
    # players left unmatched
    for pool in pools:
        for name, _, _ in variants:
            diff = [x - y for x, y in zip(by_pool[name, pool], by_pool[reference, pool])]
            se = statistics.stdev(diff) / len(diff) ** 0.5 if name != reference and len(diff) > 1 else 0.0
            label = pool[0] + (f" {pool[1]}" if pool[1] else "")
            print(f"  {label} {name:12s} mean {statistics.mean(by_pool[name, pool]):.5f}  "
                  f"diff {statistics.mean(diff):+.5f} ± {se:.5f}  "
                  f"hostless {statistics.mean(hostless[name, pool]):.2f}  "
                  f"unmatched {statistics.mean(unmatched[name, pool]):.1f}")


if __name__ == "__main__":
    main()
