#!/usr/bin/env python3
"""How long a capacity search takes to reach its resolution, against a sweep of fixed rates at
the same resolution, and how far apart repeated searches land.

The server is the built-in target spending `--work` of CPU a request on its only thread (its
capacity is known: just under 1 / work), pinned to CPU 1, or any server already running
(`--url`, e.g. `targets/run go` on CPU 1). The generator is pinned to CPU 0. Each search is
`loadgen capacity URL --slo SLO --output json`; its time is measured from outside.

A sweep of fixed rates at the same resolution steps ×(1 + resolution) from the search's start
to its first failing rate, one step of the same length each: the steps it would need are
counted from the search's own bracket, and its time is that many steps at the search's cost
per step.

    python3 bench/capacity.py [--work 1ms] [--url URL] [--repeat 3] [--step 5s] [--slo p99<=20ms]
                              [--arg=--batch=1ms ...]

Against the targets, each on CPU 1 with a cgroup of its own is what `experiments/capacity.toml`
does; by hand, `PORT=8080 taskset -c 1 targets/run go` and `--url http://127.0.0.1:8080/now`,
with `--arg=--batch=1ms --arg=--max-connections=2000` so that the generator outruns the server.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOADGEN = os.path.join(ROOT, "target", "release", "loadgen")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="1ms", help="CPU a request of the built-in target")
    ap.add_argument("--url", help="a server already running instead of the built-in target")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--step", default="5s")
    ap.add_argument("--warmup", default="1s")
    ap.add_argument("--slo", action="append", default=None)
    ap.add_argument("--resolution", default="5%")
    ap.add_argument("--arg", action="append", default=[],
                    help="a flag for loadgen capacity, e.g. --arg=--batch=1ms")
    args = ap.parse_args()
    slo = args.slo or ["p99<=20ms", "errors<=0.1%"]
    if not os.path.exists(LOADGEN):
        sys.exit("build it first: cargo build --release -p loadgen")
    target = None
    url = args.url
    if url is None:
        target = subprocess.Popen(
            ["taskset", "-c", "1", LOADGEN, "target", "--work", args.work],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = target.stdout.readline().strip()
        url = "http://" + line.removeprefix("listening on ") + "/"
    try:
        rows = []
        for i in range(args.repeat):
            cmd = ["taskset", "-c", "0", LOADGEN, "capacity", url, "--no-store", "--output", "json",
                   "--step", args.step, "--warmup", args.warmup, "--resolution", args.resolution]
            for term in slo:
                cmd += ["--slo", term]
            cmd += args.arg
            started = time.monotonic()
            out = subprocess.run(cmd, capture_output=True, text=True)
            took = time.monotonic() - started
            if out.returncode != 0:
                sys.exit(out.stderr)
            s = json.loads(out.stdout)
            steps = len(s["steps"])
            start, found, failed = s["settings"]["start"], s["capacity"], s["failed_at"]
            res = s["settings"]["resolution"]
            sweep_steps = math.ceil(math.log(failed / start) / math.log(1 + res)) + 1 if found else None
            rows.append((found, failed, steps, took, sweep_steps, s["status"]))
            print(f"search {i + 1}: {found} req/s (bracket {found}–{failed}, {s['status']}), "
                  f"{steps} steps in {took:.0f} s; a sweep at {res:.0%} from {start:.0f} would need "
                  f"{sweep_steps} steps, about {sweep_steps * took / steps:.0f} s", flush=True)
        found = [r[0] for r in rows if r[0]]
        if found:
            lo, hi, med = min(found), max(found), statistics.median(found)
            print(f"\ncapacities: median {med:.0f} req/s, {lo:.0f}–{hi:.0f} "
                  f"(spread {100 * (hi - lo) / lo:.1f} % of the lowest)")
            took = statistics.median(r[3] for r in rows)
            steps = statistics.median(r[2] for r in rows)
            sweep = statistics.median(r[4] for r in rows if r[4])
            print(f"a search: {steps:.0f} steps, {took:.0f} s (median); a sweep at the same "
                  f"resolution: {sweep:.0f} steps, {sweep / steps:.1f}× as long")
    finally:
        if target:
            target.kill()
            target.wait()


if __name__ == "__main__":
    main()
