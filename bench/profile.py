#!/usr/bin/env python3
"""What profiling costs the probe: its CPU with `--profile` at 99 Hz against the same probe
without it, watching the same busy one-CPU target, and the bytes a second profiles add to the
stream (and so to the store, which keeps each record's JSON as sent).

The target is `crates/probe/tests/fixtures/burn.c` (a core's worth of SHA-256 rounds in one
function), built with frame pointers and pinned to CPU 1; the probe (`probe record` at its
default 10 Hz, JSON lines) is pinned to CPU 0. The two take turns `--repeat` times, each for
`--duration`; CPU is user + system from wait4(2). The floor: what one wake-up costs here
(bench/floor.c at the profiler's 10 reads a second).

    cargo build --release -p probe && python3 bench/profile.py [--duration 10] [--repeat 3]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadgen import build_floor  # noqa: E402  (bench/loadgen.py: the machine's wake-up floor)

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "target" / "release" / "probe"
BURN = ROOT / "crates" / "probe" / "tests" / "fixtures" / "burn.c"


def timed(cmd):
    """Runs cmd; returns its CPU seconds (user + system) from wait4."""
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        sys.exit(f"{cmd[0]} failed: {child.stderr.read().decode()}")
    return usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not PROBE.exists():
        sys.exit("build it first: cargo build --release -p probe")
    work = Path(tempfile.mkdtemp())
    burn = work / "burn"
    subprocess.run(["cc", "-O2", "-fno-omit-frame-pointer", "-o", burn, BURN], check=True)
    total = args.repeat * 2 * (args.duration + 1) + 10
    target = subprocess.Popen(["taskset", "-c", "1", burn, str(total)], stdout=subprocess.PIPE)
    target.stdout.readline()
    plain, profiled, profile_bytes, samples_bytes = [], [], [], []
    try:
        for _ in range(args.repeat):
            for profile in (False, True):
                out = work / f"{'on' if profile else 'off'}.jsonl"
                cmd = ["taskset", "-c", "0", PROBE, "record", "--pid", str(target.pid),
                       "--duration", f"{args.duration}s", "--format", "jsonl", "--out", out]
                if profile:
                    cmd.append("--profile")
                cpu = timed(cmd)
                (profiled if profile else plain).append(cpu / args.duration * 100)
                if profile:
                    kinds = {"profile": 0, "sample": 0}
                    for line in out.read_text().splitlines():
                        kind = json.loads(line).get("record")
                        if kind in kinds:
                            kinds[kind] += len(line) + 1
                    profile_bytes.append(kinds["profile"] / args.duration)
                    samples_bytes.append(kinds["sample"] / args.duration)
    finally:
        target.kill()
        target.wait()
    floor = build_floor(work)
    wake = timed(["taskset", "-c", "0", floor, "10", str(args.duration)]) / args.duration * 100
    off, on = statistics.median(plain), statistics.median(profiled)
    print(f"probe record at 10 Hz watching a busy one-CPU target, {args.repeat} × {args.duration:g} s each, medians:")
    print(f"  without --profile: {off:.2f} % of a core ({min(plain):.2f}–{max(plain):.2f})")
    print(f"  with --profile (99 Hz): {on:.2f} % of a core ({min(profiled):.2f}–{max(profiled):.2f})")
    print(f"  profiling adds {on - off:.2f} % of a core; the floor of its 10 wake-ups a second here: {wake:.3f} %")
    print(f"  bytes a second: profiles {statistics.median(profile_bytes):,.0f}, samples {statistics.median(samples_bytes):,.0f}"
          " (JSON, as streamed and stored)")


if __name__ == "__main__":
    main()
