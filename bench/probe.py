#!/usr/bin/env python3
"""Benchmark the probe against the process monitors users run today, on one target, in one run.

The target is `crates/probe/tests/support/fixture.py` with 100 threads, 10,000 open files and a
known CPU load (20 % of a core), pinned to the last CPU; each monitor is pinned to CPU 0 and
watches it for the same time. Every monitor is measured from outside: CPU time (user + system,
children included) from wait4(2). Its readings are compared with the truth the fixture knows.

  * probe record at 10 Hz and at 100 Hz (`--interval 100ms`, `10ms`);
  * the write-ups' script: `ps -o %cpu,rss,nlwp` and `ls /proc/PID/fd | wc -l` once a second;
  * pidstat -r -u -v -p PID 1 (Debian: sysstat), when installed;
  * psrecord PID --interval 1 (PyPI: psrecord), when installed.

    python3 bench/probe.py [--duration 10]

It also prints the cost of each of the probe's collectors against the same target
(`cargo bench -p probe --bench collectors -- PID`), and where the probe's CPU goes at each rate:
its ticks (the sampling thread's own CPU per sample), its slow collectors (their passes' CPU),
the machine's cost of waking a process that often (bench/floor.c, a bare timerfd loop at the
same rate on the same CPU), and the rest (start-up, writing the file, the history buffer).
And what the four reads of a tick between full reads cost from C after the same sleep
(bench/probe_reads.c): the machine's floor for a tick.

Last, the probe against this machine's floor for the same work, in one run: `probe serve` at
100 Hz with its slow figures every second (`--slow-budget` raised so that the 10,000 FDs are
classified each second) and one subscriber, against `bench/probe_reads.c --schedule`, a bare C
loop making the same reads on the same schedule (ticks at 100 Hz, full reads every 100 ms, slow
reads every second, the scan of parents every 5 s), each pinned to the same CPU, taking turns
`--repeat` times. The probe's CPU is split into wake-ups (bench/floor.c at 100 Hz), its ticks,
its slow collectors (both from its samples) and the rest (streaming to the subscriber, the
buffer, start-up); the C loop's into wake-ups, tick reads, slow reads and the rest.
"""

import argparse
import json
import os
import socket
import struct
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadgen import build_floor  # noqa: E402  (bench/loadgen.py: the same floor for both benches)

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "target" / "release" / "probe"
FIXTURE = ROOT / "crates" / "probe" / "tests" / "support" / "fixture.py"
THREADS, FDS, CPU = 100, 10_000, 0.2

PS_SCRIPT = r"""
pid=$1; out=$2; end=$(( $(date +%s) + $3 ))
echo "time,cpu,rss_kb,threads,fds" > "$out"
while [ "$(date +%s)" -lt "$end" ]; do
  stats=$(ps -p "$pid" -o %cpu=,rss=,nlwp= | awk '{print $1","$2","$3}')
  fds=$(ls /proc/"$pid"/fd | wc -l)
  echo "$(date +%s.%N),$stats,$fds" >> "$out"
  sleep 1
done
"""


def start_target(cpu):
    def raise_fd_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (FDS + 1024, FDS + 1024))
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpu), sys.executable, str(FIXTURE), "--threads", str(THREADS),
         "--fds", str(FDS), "--cpu", str(CPU), "--duration", "3600"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=raise_fd_limit)
    ready = json.loads(proc.stdout.readline())
    return proc, ready


def measured(cmd, cpu, timeout):
    """Runs cmd pinned to `cpu` until it exits (or SIGINT after `timeout`); returns CPU seconds."""
    start = time.monotonic()
    proc = subprocess.Popen(["taskset", "-c", str(cpu)] + cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > timeout:
            proc.send_signal(2)
        time.sleep(0.05)
    return usage.ru_utime + usage.ru_stime, time.monotonic() - start


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def read_probe_jsonl(path, pid):
    """The target's readings and the probe's own costs, from `probe record --out X.jsonl`."""
    samples = [r for r in map(json.loads, open(path)) if r.get("record") == "sample"]
    rows = [p for s in samples for p in s["processes"] if p["pid"] == pid]
    cpu = [p["cpu_pct"] for p in rows if p["cpu_pct"] is not None]
    costs = [s["probe"] for s in samples if s.get("probe")]
    return {
        "samples": len(rows),
        "cpu": mean(cpu[3:]),
        "threads": rows[-1]["threads"],
        "fds": rows[-1]["fds"],
        "ticks_s": sum(c["sample_cpu_ns"] for c in costs) / 1e9,
        "slow_s": sum(c["slow_cpu_ns"] for c in costs) / 1e9,
    }


def read_ps_script(path):
    lines = open(path).read().split("\n")[1:]
    rows = [l.split(",") for l in lines if l.count(",") == 4]
    times = [float(r[0]) for r in rows]
    steps = [b - a for a, b in zip(times, times[1:])]
    return {
        "samples": len(rows),
        "cpu": mean([float(r[1]) for r in rows]),
        "threads": int(rows[-1][3]),
        "fds": int(rows[-1][4]),
        "drift_ms": 1000 * (mean(steps) - 1.0) if steps else None,
    }


def read_pidstat(text):
    cpu, threads, fds = [], None, None
    header = None
    for line in text.splitlines():
        cols = line.split()
        if not cols or line.startswith("Average") or line.startswith("Linux"):
            continue
        if "PID" in cols:
            header = cols
            continue
        if header and len(cols) == len(header):
            row = dict(zip(header, cols))
            if "%CPU" in row:
                cpu.append(float(row["%CPU"]))
            if "threads" in row:
                threads = int(row["threads"])
            if "fd-nr" in row:
                fds = int(row["fd-nr"])
    return {"samples": len(cpu), "cpu": mean(cpu[1:]), "threads": threads, "fds": fds}


def read_psrecord(path):
    rows = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        rows.append([float(x) for x in line.split()])
    return {"samples": len(rows), "cpu": mean([r[1] for r in rows[1:]]), "threads": None, "fds": None}


def subscribe(port, out, seconds):
    """A subscriber of `probe serve` on `port` for `seconds`: writes every sample's `probe`
    costs (one JSON object a line) to `out`. The protocol: 4-byte big-endian lengths, JSON."""
    deadline = time.monotonic() + seconds
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    hello = json.dumps({"type": "hello", "version": 1, "client": "bench", "start": {"from": "live"}})
    conn.sendall(struct.pack(">I", len(hello)) + hello.encode())
    buf = b""
    with open(out, "w") as f:
        while time.monotonic() < deadline:
            conn.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = conn.recv(1 << 16)
            except socket.timeout:
                break
            if not chunk:
                break
            buf += chunk
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                n = struct.unpack(">I", buf[:4])[0]
                message = json.loads(buf[4:4 + n])
                buf = buf[4 + n:]
                if message.get("record") == "sample" and message.get("probe"):
                    f.write(json.dumps(message["probe"]) + "\n")
    conn.close()


def against_floor(pid, mon_cpu, sub_cpu, d, repeat, floor, tmp):
    """`probe serve` at 100 Hz with its slow figures every second against the same reads on the
    same schedule in C; returns one row per round: (probe CPU s, its split, C CPU s, its split,
    wall s)."""
    reads = tmp / "probe_reads"
    subprocess.run(["cc", "-O2", "-o", str(reads), str(ROOT / "bench" / "probe_reads.c")], check=True)
    run = subprocess.run(["taskset", "-c", str(mon_cpu), str(floor), "100", str(d)],
                         capture_output=True, text=True, check=True)
    wake_us = json.loads(run.stdout)["cpu_us_per_wakeup"]
    rows = []
    for i in range(repeat):
        port = 18000 + (os.getpid() + i) % 1000
        start = time.monotonic()
        serve = subprocess.Popen(["taskset", "-c", str(mon_cpu), str(PROBE), "serve", "--pid", str(pid),
                                  "--interval", "10ms", "--slow-budget", "20",
                                  "--listen", f"127.0.0.1:{port}"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        costs = tmp / f"costs-{i}.jsonl"
        os.sched_setaffinity(0, {sub_cpu})
        try:
            subscribe(port, costs, d)
        finally:
            os.sched_setaffinity(0, set(range(os.cpu_count())))
        serve.send_signal(2)
        _, _, usage = os.wait4(serve.pid, 0)
        wall = time.monotonic() - start
        probe_s = usage.ru_utime + usage.ru_stime
        samples = [json.loads(l) for l in open(costs)]
        ticks_s = sum(c["sample_cpu_ns"] for c in samples) / 1e9
        slow_s = sum(c["slow_cpu_ns"] for c in samples) / 1e9
        wakes_s = wake_us * round(wall * 100) / 1e6
        probe_split = {"wake-ups": wakes_s, "ticks": ticks_s, "slow": slow_s,
                       "rest": probe_s - wakes_s - ticks_s - slow_s,
                       "slow passes": sum(1 for c in samples if c["slow_cpu_ns"] > 0), "samples": len(samples)}
        c_start = time.monotonic()
        c = subprocess.Popen(["taskset", "-c", str(mon_cpu), str(reads), "--schedule", str(pid), "10",
                              str(round(wall))], stdout=subprocess.PIPE, text=True)
        c_out = c.stdout.read()
        _, _, usage = os.wait4(c.pid, 0)
        c_wall = time.monotonic() - c_start
        c_s = usage.ru_utime + usage.ru_stime
        r = json.loads(c_out)
        c_wakes = wake_us * r["rounds"] / 1e6
        c_split = {"wake-ups": c_wakes, "ticks": r["ticks_s"], "slow": r["slow_s"] + r["scan_s"],
                   "rest": c_s - c_wakes - r["ticks_s"] - r["slow_s"] - r["scan_s"]}
        rows.append((probe_s, probe_split, wall, c_s, c_split, c_wall))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the probe against its C floor")
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    mon_cpu, target_cpu = cpus[0], cpus[-1]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "probe"], cwd=ROOT, check=True)
    target, ready = start_target(target_cpu)
    pid = ready["pid"]
    tmp = Path(tempfile.mkdtemp(prefix="bench-probe-"))
    d = args.duration
    print(f"target: PID {pid}, {ready['threads']} threads, {ready['fds']} FDs, burning "
          f"{CPU:.0%} of a core on CPU {target_cpu}; monitors on CPU {mon_cpu}, {d}s each\n")
    rows = []
    splits = []
    floor = build_floor(tmp)
    try:
        for label, interval, hz in [("probe record 10 Hz", "100ms", 10), ("probe record 100 Hz", "10ms", 100)]:
            out = tmp / f"probe-{interval}.jsonl"
            cpu_s, wall = measured([str(PROBE), "record", "--pid", str(pid), "--interval", interval,
                                    "--duration", f"{d}s", "--out", str(out)], mon_cpu, d + 10)
            figures = read_probe_jsonl(out, pid)
            rows.append((label, cpu_s, wall, figures))
            wake_s = None
            if floor:
                run = subprocess.run(["taskset", "-c", str(mon_cpu), str(floor), str(hz), str(d)],
                                     capture_output=True, text=True, check=True)
                wake_s = json.loads(run.stdout)["cpu_us_per_wakeup"] * figures["samples"] / 1e6
            splits.append((label, cpu_s, wall, figures, wake_s))
        # The deployed mode: a service streaming to one subscriber (whose own cost is not counted).
        port = 17000 + os.getpid() % 1000
        serve = subprocess.Popen(["taskset", "-c", str(mon_cpu), str(PROBE), "serve", "--pid", str(pid),
                                  "--interval", "100ms", "--listen", f"127.0.0.1:{port}"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        start = time.monotonic()
        viewer = subprocess.Popen([str(PROBE), "top", "--connect", f"127.0.0.1:{port}", "--duration", f"{d}s"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        viewer.wait()
        serve.send_signal(2)
        _, _, usage = os.wait4(serve.pid, 0)
        wall = time.monotonic() - start + 0.5
        rows.append(("probe serve 10 Hz, 1 subscriber", usage.ru_utime + usage.ru_stime, wall,
                     {"samples": round(wall * 10), "cpu": None, "threads": None, "fds": None}))
        script = tmp / "monitor.sh"
        script.write_text(PS_SCRIPT)
        out = tmp / "ps.csv"
        cpu_s, wall = measured(["bash", str(script), str(pid), str(out), str(d)], mon_cpu, d + 10)
        rows.append(("ps + ls script, 1 Hz", cpu_s, wall, read_ps_script(out)))
        if shutil.which("pidstat"):
            out = tmp / "pidstat.txt"
            with open(out, "w") as f:
                start = time.monotonic()
                p = subprocess.Popen(["taskset", "-c", str(mon_cpu), "pidstat", "-r", "-u", "-v", "-p",
                                      str(pid), "1", str(d)], stdout=f, env={**os.environ, "LC_ALL": "C"})
                _, _, usage = os.wait4(p.pid, 0)
            rows.append(("pidstat -r -u -v 1", usage.ru_utime + usage.ru_stime, time.monotonic() - start,
                         read_pidstat(out.read_text())))
        if shutil.which("psrecord"):
            out = tmp / "psrecord.txt"
            cpu_s, wall = measured(["psrecord", str(pid), "--interval", "1", "--duration", str(d),
                                    "--log", str(out)], mon_cpu, d + 10)
            rows.append(("psrecord --interval 1", cpu_s, wall, read_psrecord(out)))
        if floor:
            reads = Path(tmp) / "probe_reads"
            subprocess.run(["cc", "-O2", "-o", str(reads), str(ROOT / "bench" / "probe_reads.c")],
                           check=True)
            for ms, rounds in ((10, 300), (100, 50)):
                run = subprocess.run(["taskset", "-c", str(mon_cpu), str(reads), str(pid), str(ms),
                                      str(rounds)], capture_output=True, text=True, check=True)
                r = json.loads(run.stdout)
                print(f"a tick's reads in C after {ms} ms asleep (bench/probe_reads.c, medians): "
                      f"fstat task {r['fstat_task_us']} µs, statm {r['statm_us']}, CPU clock "
                      f"{r['cpu_clock_us']}, fstat fd {r['fstat_fd_us']}; "
                      f"{r['round_cpu_us']} µs of CPU in all")
            print()
        floor_rows = against_floor(pid, mon_cpu, target_cpu, d, args.repeat, floor, tmp) if floor else []
        print("per-collector costs of the probe against this target:")
        bench = subprocess.run(["cargo", "bench", "-q", "-p", "probe", "--bench", "collectors", "--",
                                str(pid)], cwd=ROOT, capture_output=True, text=True)
        print(bench.stdout)
    finally:
        target.stdin.close()
        target.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    print("Where the probe's CPU went (% of a core over each run):\n")
    print("| run | total | ticks (sampling thread) | slow collectors | wake-ups (floor.c at that rate) | the rest (start-up, file, buffer) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, cpu_s, wall, f, wake_s in splits:
        pct = lambda x: "–" if x is None else f"{100 * x / wall:.2f}"
        rest = None if wake_s is None else cpu_s - f["ticks_s"] - f["slow_s"] - wake_s
        print(f"| {label} | {pct(cpu_s)} | {pct(f['ticks_s'])} | {pct(f['slow_s'])} | {pct(wake_s)} | {pct(rest)} |")
    print()

    if floor_rows:
        print("The probe at 100 Hz, slow figures every second, 1 subscriber, against the same reads on "
              "the same schedule in C (bench/probe_reads.c --schedule); % of a core:\n")
        print("| round | probe | wake-ups | ticks | slow (and scan) | the rest (streaming, buffer) | slow passes/s "
              "| C floor | its wake-ups | tick reads | slow reads | the rest | probe ÷ floor |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for i, (p_s, p, wall, c_s, c, c_wall) in enumerate(floor_rows, 1):
            pct = lambda x, w: f"{100 * x / w:.2f}"
            print(f"| {i} | {pct(p_s, wall)} | {pct(p['wake-ups'], wall)} | {pct(p['ticks'], wall)} | "
                  f"{pct(p['slow'], wall)} | {pct(p['rest'], wall)} | {p['slow passes'] / wall:.2f} | "
                  f"{pct(c_s, c_wall)} | {pct(c['wake-ups'], c_wall)} | {pct(c['ticks'], c_wall)} | "
                  f"{pct(c['slow'], c_wall)} | {pct(c['rest'], c_wall)} | {(p_s / wall) / (c_s / c_wall):.2f}× |")
        print()

    truth_threads = ready["threads"]
    print(f"| monitor | samples | CPU ms/sample | CPU % of a core | CPU reading (truth {CPU:.0%}) | threads (truth {truth_threads}) | FDs (truth {ready['fds']}) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, cpu_s, wall, f in rows:
        n = max(f["samples"], 1)
        reading = "–" if f["cpu"] is None else f"{f['cpu']:.1f} %"
        drift = f" (interval drifts {f['drift_ms']:.0f} ms/sample)" if f.get("drift_ms") else ""
        print(f"| {label}{drift} | {f['samples']} | {1000 * cpu_s / n:.3f} | {100 * cpu_s / wall:.2f} | "
              f"{reading} | {f['threads'] if f['threads'] is not None else '–'} | "
              f"{f['fds'] if f['fds'] is not None else '–'} |")


if __name__ == "__main__":
    main()
