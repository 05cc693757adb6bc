#!/usr/bin/env python3
"""Whether profiling a JIT whose perf map keeps growing keeps the probe's memory flat.

A Node process (`--perf-basic-prof`) compiles new functions for ever (`new Function`, each called
until V8 optimizes it), so its `/tmp/perf-PID.map` grows by thousands of lines a second, the way
a long-running server's does over days. `probe record --profile` watches it for `--minutes`;
every `--every` seconds the script prints the map's size and lines and the probe's RSS
(`VmRSS`) and its high-water mark (`VmHWM`). Flat means the last RSS within a few MiB of the
first after warm-up, while the map grows without bound. The probe is pinned to CPU 0, Node to
CPU 1.

    cargo build --release -p probe && python3 bench/profile_soak.py [--minutes 30] [--every 60]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "target" / "release" / "probe"

CHURN = r"""
let n = 0;
const deadline = Date.now() + Number(process.argv[2]) * 1000;
function round() {
  for (let k = 0; k < 20; k++, n++) {
    const f = new Function('x', `let s = ${n}; for (let i = 0; i < x; i++) s = (s + i * ${n % 97}) | 0; return s;`);
    let t = 0;
    for (let i = 0; i < 3000; i++) t += f(50);
    if (t === 42) console.log(t);
  }
  if (Date.now() < deadline) setImmediate(round);
}
console.log('churning');
round();
"""


def status(pid, field):
    """A `status` field of pid, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--every", type=float, default=60)
    args = ap.parse_args()
    if not PROBE.exists():
        sys.exit(f"{PROBE} is missing: cargo build --release -p probe")
    seconds = int(args.minutes * 60)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "churn.js"
        script.write_text(CHURN)
        node = subprocess.Popen(
            ["taskset", "-c", "1", "node", "--perf-basic-prof", str(script), str(seconds + 30)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=tmp,  # V8 may write a log file where it runs
        )
        try:
            assert node.stdout.readline().strip() == "churning"
            perf_map = Path(f"/tmp/perf-{node.pid}.map")
            probe = subprocess.Popen(
                ["taskset", "-c", "0", str(PROBE), "record", "--profile", "--pid", str(node.pid),
                 "--duration", f"{seconds}s", "--format", "jsonl", "--out", str(Path(tmp) / "out.jsonl")],
                stderr=subprocess.PIPE,
                text=True,
            )
            print(f"node {node.pid} (perf map {perf_map}), probe {probe.pid}, {args.minutes:g} min")
            print(f"{'min':>6} {'map MiB':>9} {'map lines':>10} {'probe RSS MiB':>14} {'HWM MiB':>8}")
            started = time.monotonic()
            first = None
            while probe.poll() is None:
                time.sleep(args.every)
                if probe.poll() is not None:
                    break
                size = perf_map.stat().st_size if perf_map.exists() else 0
                with open(perf_map, "rb") as f:
                    lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
                rss, hwm = status(probe.pid, "VmRSS") / 1024, status(probe.pid, "VmHWM") / 1024
                first = first if first is not None else rss
                minutes = (time.monotonic() - started) / 60
                print(f"{minutes:6.1f} {size / 1048576:9.1f} {lines:10d} {rss:14.1f} {hwm:8.1f}", flush=True)
            if probe.wait() != 0:
                sys.exit(f"probe failed: {probe.stderr.read()}")
        finally:
            node.kill()
            node.wait()
            Path(f"/tmp/perf-{node.pid}.map").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
