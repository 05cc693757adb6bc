#!/usr/bin/env python3
"""Replays the kept A/A sittings of one server (docs/benchmarks/data/aa-sittings.jsonl) one
after another, as `loadgen capacity --against` reads them today: the spread between processes
read from the sittings before each (from 3; weighted by precision, as
analysis::capacity::compare::Between::of_logs reads it), each sitting's own interval widened by
it at Student's t on Satterthwaite's df. Prints how many widened intervals exclude 1 (and how
many as read), and sd(z).

    python3 scripts/aa-replay.py [SERVER] [--unweighted]   (default go)

--unweighted reads the spread as loadgen did before 2026-12-07: mean((ln r)^2 - s^2), its df
the sittings' count.

A replay of kept figures, not a new sitting: each sitting's own standard error is read back
from its kept interval (less the spread it was widened by, where it was)."""
import json
import math
import os
import statistics
import sys

from aa_stats import se_of, t975

here = os.path.dirname(os.path.abspath(__file__))
unweighted = "--unweighted" in sys.argv
named = [a for a in sys.argv[1:] if not a.startswith("--")]
server = named[0] if named else "go"


def own_se(r):
    """A sitting's own standard error of ln r, without the spread it was widened by."""
    total = se_of(r)
    if r.get("spread") != "allowed" or not r.get("between_sd"):
        return total
    return math.sqrt(max(total**2 - 2 * r["between_sd"] ** 2, 0))


def between(sittings):
    """2 sigma^2 and its df from (ln r, se, df, centre) sittings, as Between::of_logs."""
    w = [1 / s**2 for _, s, _, _ in sittings]
    q = sum(wi * y * y for wi, (y, _, _, _) in zip(w, sittings))
    weights = sum(w)
    expected = sum(max(df, 3) / (max(df, 3) - 2) for _, _, df, _ in sittings)
    spread = max(0.0, (q - expected) / weights)
    variance = 2 * sum((1 + spread / s**2) ** 2 for _, s, _, _ in sittings) / weights**2
    return spread, (2 * spread * spread / variance if variance > 0 else 0.0)


kept = os.path.join(here, "..", "docs", "benchmarks", "data", "aa-sittings.jsonl")
rows = [json.loads(line) for line in open(kept)]
data = [
    (math.log(r["ratio"]), own_se(r), r["rounds"] - 1, math.log(math.sqrt(r["low"] * r["high"])))
    for r in rows
    if r["server"] == server and r["low"] and r["high"]
]
if len(data) < 5:
    sys.exit(f"{server}: {len(data)} kept sittings with an interval, too few to replay (5 at least)")
z, widened, as_read = [], 0, 0
for i in range(3, len(data)):
    y, s, df, centre = data[i]
    total = s * s
    if unweighted:
        k = i
        spread = max(0.0, statistics.mean(e * e - se * se for e, se, _, _ in data[:i]))
        total += spread
        wide_df = total**2 / (total**2 / k + (s * s) ** 2 * (1 + 1 / k) / df)
    else:
        spread, spread_df = between(data[:i])
        total += spread
        wide_df = total**2 / (spread**2 / spread_df + (s * s) ** 2 / df) if spread > 0 else df
    widened += abs(centre) > t975(wide_df) * math.sqrt(total)
    as_read += abs(centre) > t975(df) * s
    z.append(y / math.sqrt(total))
spread, spread_df = between(data)
if unweighted:
    spread, spread_df = max(0.0, statistics.mean(e * e - se * se for e, se, _, _ in data)), len(data)
print(
    f"{server}{' (unweighted)' if unweighted else ''}: replayed {len(z)} sittings: widened, {widened} exclude 1 (as read, {as_read});"
    f" sd(z) {statistics.stdev(z):.2f}; the spread read from all {len(data)}:"
    f" sd {math.sqrt(spread / 2) * 100:.2f} % on {spread_df:.1f} df"
)
