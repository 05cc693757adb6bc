#!/usr/bin/env python3
"""Soak: loadgen at a steady rate for a long time, watched by a probe, into a store.

The target is loadgen's built-in one (`loadgen target`) pinned to the last CPU, watched by
`probe serve` at 10 Hz; loadgen attacks it on CPU 0 with `--probe`, keeping the run (and the
probe's samples) in a SQLite store in a temporary directory. Every `--every` seconds the script
reads the resident memory (VmRSS) of loadgen and of the probe from /proc and the store's size
on disk. At the end it prints them over time, the growth per hour of each, and the run's
figures. Memory that climbs with time is a leak; a store that grows faster than its rows is a
bug.

    python3 bench/soak.py                       # an hour at 5,000 req/s (docs/benchmarks/soak.md)
    python3 bench/soak.py --minutes 5 --every 30
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOADGEN = ROOT / "target" / "release" / "loadgen"
PROBE = ROOT / "target" / "release" / "probe"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def size_mib(directory):
    return sum(p.stat().st_size for p in Path(directory).glob("*") if p.is_file()) / 2**20


def wait_for_port(port, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on port {port} after {seconds} s")


def slope_per_hour(points):
    """Least-squares slope of (seconds, value) points, per hour."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return sum((t - mx) * (v - my) for t, v in points) / var * 3600


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60, help="how long to attack (default 60)")
    ap.add_argument("--rate", type=int, default=5000, help="requests per second (default 5000)")
    ap.add_argument("--every", type=int, default=60, help="seconds between readings (default 60)")
    args = ap.parse_args()
    for binary in (LOADGEN, PROBE):
        if not binary.exists():
            sys.exit(f"{binary} is missing: cargo build --release -p loadgen -p probe")
    cpus = sorted(os.sched_getaffinity(0))
    gun_cpu, target_cpu = cpus[0], cpus[-1]
    work = tempfile.mkdtemp(prefix="showdown-soak-")
    port, probe_port = free_port(), free_port()
    children = []
    try:
        target = subprocess.Popen(
            ["taskset", "-c", str(target_cpu), str(LOADGEN), "target", "--listen", f"127.0.0.1:{port}"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(target)
        wait_for_port(port)
        probe = subprocess.Popen(
            ["taskset", "-c", str(target_cpu), str(PROBE), "serve", "--port", str(port),
             "--listen", f"127.0.0.1:{probe_port}", "--interval", "100ms"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(probe)
        wait_for_port(probe_port)
        seconds = int(args.minutes * 60)
        store = Path(work) / "store"
        gun = subprocess.Popen(
            ["taskset", "-c", str(gun_cpu), str(LOADGEN), "attack", "--rate", str(args.rate),
             "--duration", f"{seconds}s", "--probe", f"127.0.0.1:{probe_port}",
             "--db", f"sqlite://{store}/soak.db", "--output", "json", f"http://127.0.0.1:{port}/now"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        children.append(gun)
        started = time.time()
        readings = []
        print(f"soak: {args.rate} req/s for {args.minutes:g} min, probe at 10 Hz, store in {store}", flush=True)
        print("| minute | loadgen RSS MiB | probe RSS MiB | store MiB |\n|---:|---:|---:|---:|", flush=True)
        while gun.poll() is None:
            time.sleep(min(args.every, max(1, seconds + 5 - (time.time() - started))))
            t = time.time() - started
            reading = (t, rss_mib(gun.pid), rss_mib(probe.pid), size_mib(store) if store.exists() else 0.0)
            if reading[1] is None:
                break
            readings.append(reading)
            print(f"| {t / 60:.1f} | {reading[1]:.1f} | {reading[2]:.1f} | {reading[3]:.1f} |", flush=True)
        out, _ = gun.communicate(timeout=120)
        summary = json.loads(out)
        # Growth after the first reading: start-up is not a leak.
        steady = readings[1:] if len(readings) > 2 else readings
        print()
        print(f"loadgen RSS growth: {slope_per_hour([(t, l) for t, l, _, _ in steady]):+.2f} MiB/hour")
        print(f"probe RSS growth:   {slope_per_hour([(t, p) for t, _, p, _ in steady]):+.2f} MiB/hour")
        print(f"store growth:       {slope_per_hour([(t, s) for t, _, _, s in steady]):.1f} MiB/hour "
              f"({size_mib(store):.1f} MiB after {args.minutes:g} min)")
        r = summary["requests"]
        g = summary["generator"]
        print(f"requests ok {r['ok']} of {r['total']}, p99 {summary['latency']['corrected']['p99_ns'] / 1e6:.2f} ms, "
              f"lateness p99 {g['lateness']['p99_ns'] / 1e3:.0f} µs, loadgen CPU {g['cpu_per_request_us']:.1f} µs/request, "
              f"warnings: {summary['warnings'] or 'none'}")
    finally:
        for child in reversed(children):
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
        subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    main()
