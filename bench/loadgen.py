#!/usr/bin/env python3
"""Benchmark loadgen against the load generators users know, in one run, on one machine.

The target is nginx (Debian's nginx-light) with one worker pinned to the last CPU; each
generator is pinned to CPU 0 with `taskset`, one thread. Every tool is measured the same way,
from outside:

  * CPU time (user + system) and peak RSS of the generator process, from wait4(2);
  * requests the server handled, from nginx's own stub_status counter (not the tool's claim);
  * latency percentiles and, for loadgen, send lateness, from each tool's own output;
  * system calls per request, from one extra short run per tool under `strace -f -c` (strace
    slows a tool down: that run only counts calls, its timing is not used);
  * resident memory of loadgen and oha every 10 s of a minute at --memory-rate (20,000 req/s).

Each measurement is repeated --repeat rounds (the tools take turns within a round) and
reported as the median with the min–max; ratios between tools are taken from the medians of
the same run. Absolute figures depend on the machine; compare the ratios within one run.

Peers are run when they are on PATH: wrk2 (built from github.com/giltene/wrk2, see docs/benchmarks/loadgen.md),
wrk (Debian), oha (`cargo install --locked oha`), vegeta (v12.12.0, built with `go build`).
wrk2 runs open loop with -R at the fixed rates; unthrottled, the wrk2 column is plain wrk when
it is installed, else wrk2 with -R far above what it can reach. wrk2 spends its first 10 s
calibrating and leaves them out of its percentiles: with --duration under 10 its percentiles
cover the whole run, like everyone else's.

The floor column is bench/floor.c, compiled with `cc -O2`: a bare loop that sleeps on a
timerfd to each request's absolute time at the same rate, on the generator's CPU, and does
nothing else: what one wake-up costs this machine in CPU, and how late it comes.

    python3 bench/loadgen.py                     # 5,000 and 20,000 req/s, unthrottled, memory
    python3 bench/loadgen.py --duration 2 --repeat 1 --rates 5000 --skip-memory
    python3 bench/loadgen.py --static target/image/usr/local/bin/loadgen   # the image's build too
    python3 bench/loadgen.py --pacing 0.5,0.6,0.7,0.8,0.9 --rates "" --skip-strace --skip-memory

--pacing: loadgen (one request at a time, and --batch 1ms, wrk2's grid) and wrk2 each paced at
shares of their own unthrottled rate (loadgen's closed loop; wrk2 with -R far above what it
reaches), one thread, the same connections: the highest share each paces cleanly. Clean: nginx
counted at least 97 % of the asked rate (wrk2 opens its connections 5 ms apart and so falls
about 1 % short in 10 s), and the sends kept their schedule: loadgen by its own record of every
send (not behind: under 1 % of sends over 1 ms late, plus the batch window), wrk2, which keeps
no such record, by its corrected p99 (from each request's intended time: lateness and service
together) at most twice its p99 at the first share and at least 2 ms (its 1 ms grid alone shows
about 2 ms): a generator falling behind shows as its queue growing in that p99. Corrected p99
also grows with the server's own queue, which is why loadgen is judged on its sends.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOADGEN = ROOT / "target" / "release" / "loadgen"
FLOOR_C = ROOT / "bench" / "floor.c"

# The table's columns, in order. "wrk2" is plain wrk in the unthrottled rows when wrk is there.
COLUMNS = ["loadgen", "loadgen static", "loadgen --batch 1ms", "wrk2", "oha", "vegeta", "floor"]
# wrk2's -R for "as fast as it can": far above what one thread reaches.
WRK2_UNTHROTTLED = 100_000_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpus():
    return sorted(os.sched_getaffinity(0))


def apt_install(package):
    """Installs a Debian package, refreshing the package lists once if the first try fails."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    cmd = ["apt-get", "install", "-y", "-qq", package]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    if subprocess.run(cmd, **quiet).returncode == 0:
        return True
    subprocess.run(["apt-get", "update", "-qq"], **quiet)
    return subprocess.run(cmd, **quiet).returncode == 0


class Nginx:
    """nginx with one worker on the last CPU, counting requests in stub_status."""

    def __init__(self, cpu):
        if not shutil.which("nginx") and not apt_install("nginx-light"):
            sys.exit("nginx is needed: apt-get install nginx-light")
        self.dir = tempfile.mkdtemp(prefix="bench-nginx-")
        self.port = free_port()
        conf = Path(self.dir) / "nginx.conf"
        conf.write_text(f"""
worker_processes 1;
daemon off;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
worker_rlimit_nofile 65536;
events {{ worker_connections 60000; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server {{
    listen 127.0.0.1:{self.port} backlog=8192;
    location = /nginx_status {{ stub_status; }}
    location / {{ return 200 "hello, world\\n"; }}
  }}
}}
""")
        self.proc = subprocess.Popen(["taskset", "-c", str(cpu), "nginx", "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.handled()
                return
            except OSError:
                time.sleep(0.05)
        sys.exit("nginx did not start")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def handled(self):
        """Requests nginx has handled so far (stub_status counts its own query too)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/nginx_status", timeout=2) as r:
            text = r.read().decode()
        return int(text.splitlines()[2].split()[2])

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def peak_rss(pid):
    """VmHWM of a live process, in bytes (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) * 1024
    except (OSError, AttributeError):
        return 0


def measured(cmd, cpu, timeout):
    """Runs cmd pinned to `cpu`; returns (stdout, cpu seconds, peak RSS bytes).

    CPU comes from wait4(2). Peak RSS is polled from /proc (VmHWM) while the process runs:
    wait4's ru_maxrss would count the forked Python before exec. A run still going after
    `timeout` seconds is stopped (its process group: strace and its tracee alike). The run
    gets a process group of its own but stays in this session: a new session would also be a
    new scheduler autogroup, weighted apart from nginx and everything else on the machine.
    """
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(["taskset", "-c", str(cpu)] + cmd, stdout=out, stderr=err,
                            preexec_fn=os.setpgrp)
    deadline = time.monotonic() + timeout
    rss, stopping = 0, None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        rss = max(rss, peak_rss(proc.pid))
        now = time.monotonic()
        if now > deadline and stopping is None:
            print(f"  ! {' '.join(cmd[:3])}… still running after {timeout:.0f}s: stopped",
                  file=sys.stderr)
            os.killpg(proc.pid, signal.SIGTERM)
            stopping = now
        elif stopping is not None and now > stopping + 5:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err.seek(0)
        print(f"  ! {' '.join(cmd[:3])}… exited {proc.returncode}: "
              f"{err.read().decode(errors='replace')[-300:]}", file=sys.stderr)
    out.seek(0)
    return out.read().decode("latin-1"), usage.ru_utime + usage.ru_stime, rss


def ms(ns):
    return None if ns is None else ns / 1e6


def parse_loadgen(text):
    s = json.loads(text)
    lat = s["latency"]["corrected"]
    return {"p50": ms(lat["p50_ns"]), "p99": ms(lat["p99_ns"]),
            "service_p50": ms(s["latency"]["service"]["p50_ns"]),
            "lateness_p99": ms(s["generator"]["lateness"]["p99_ns"]),
            "behind": bool(s["generator"]["behind"]),
            "errors": sum(s["errors"].values())}


def parse_oha(text):
    s = json.loads(text)
    p = s.get("latencyPercentiles", {})
    return {"p50": p.get("p50", 0) * 1e3 if p.get("p50") is not None else None,
            "p99": p.get("p99", 0) * 1e3 if p.get("p99") is not None else None}


def parse_vegeta(results):
    """vegeta attack writes binary results; vegeta report turns them into JSON (not timed)."""
    report = subprocess.run(["vegeta", "report", "-type=json"], input=results.encode("latin-1"),
                            capture_output=True, check=True)
    s = json.loads(report.stdout)
    lat = s["latencies"]
    return {"p50": ms(lat["50th"]), "p99": ms(lat["99th"]), "errors": len(s.get("errors") or [])}


def parse_wrk(text):
    """wrk's and wrk2's --latency percentiles ("50%" and "50.000%": wrk2's are its corrected
    HdrHistogram ones, from each request's intended time), in ms."""
    units = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}

    def value(label):
        m = re.search(rf"^\s*{label}(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)
        return float(m.group(1)) * units[m.group(2)] if m else None
    return {"p50": value("50"), "p99": value("99")}


def parse_floor(text):
    s = json.loads(text)
    lat = s["lateness_ns"]
    return {"wakeups": s["wakeups"], "cpu_us": s["cpu_us_per_wakeup"],
            "lateness_p50": ms(lat["p50"]), "lateness_p99": ms(lat["p99"]),
            "lateness_max": ms(lat["max"])}


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stdout + out.stderr).strip().splitlines()
    return lines[0].split("[")[0].strip() if lines else None


def build_floor(workdir):
    """Compiles bench/floor.c with `cc -O2`; returns the binary's path, or None without cc."""
    if not shutil.which("cc"):
        print("floor: no C compiler (cc) on PATH: skipped (apt-get install build-essential)")
        return None
    binary = Path(workdir) / "floor"
    subprocess.run(["cc", "-O2", "-o", str(binary), str(FLOOR_C)], check=True)
    return binary


class Setup:
    """What this run measures with: the binaries found, the target, the connections."""

    def __init__(self, loadgen, floor, url, targets, connections, static=None):
        self.loadgen, self.floor, self.url = str(loadgen), floor, url
        self.static = str(static) if static else None
        self.targets, self.connections = targets, connections
        self.wrk2 = shutil.which("wrk2")
        self.wrk = shutil.which("wrk")
        self.oha = shutil.which("oha")
        self.vegeta = shutil.which("vegeta")

    def columns(self):
        present = {"wrk2": self.wrk2 or self.wrk, "oha": self.oha, "vegeta": self.vegeta,
                   "floor": self.floor, "loadgen static": self.static}
        return [c for c in COLUMNS if present.get(c, True)]

    def unthrottled_wrk2(self):
        """What the wrk2 column runs unthrottled."""
        if self.wrk:
            return f"plain {version([self.wrk, '-v']) or 'wrk'}"
        return f"wrk2 -R {WRK2_UNTHROTTLED:,}"

    def command(self, tool, rate, duration):
        """(command, parser) for `tool` at `rate` req/s (0: unthrottled), or None if it has none."""
        d = f"{duration}s"
        url, conns = self.url, str(self.connections)
        loadgen = [self.loadgen, "attack", "--duration", d, "--threads", "1", "--no-store",
                   "--output", "json"]
        if tool in ("loadgen", "loadgen static"):
            load = ["--rate", str(rate)] if rate else ["--connections", conns]
            binary = [self.static] if tool == "loadgen static" else []
            return binary + loadgen[len(binary):] + load + [url], parse_loadgen
        if tool == "loadgen --batch 1ms" and rate:
            return loadgen + ["--rate", str(rate), "--batch", "1ms", url], parse_loadgen
        if tool == "wrk2" and not rate and self.wrk:
            return [self.wrk, "-t1", f"-c{conns}", f"-d{d}", "--latency", url], parse_wrk
        if tool == "wrk2" and self.wrk2:
            r = rate or WRK2_UNTHROTTLED
            return ([self.wrk2, "-t1", f"-c{conns}", f"-d{d}", f"-R{r}", "--latency", url],
                    parse_wrk)
        if tool == "oha" and self.oha:
            load = ["-q", str(rate), "--latency-correction"] if rate else []
            return ([self.oha, "-c", conns, "-z", d] + load +
                    ["--no-tui", "--output-format", "json", url], parse_oha)
        if tool == "vegeta" and self.vegeta:
            load = [f"-rate={rate}"] if rate else ["-rate=0", f"-max-workers={conns}"]
            return ([self.vegeta, "attack", f"-targets={self.targets}", f"-duration={d}"] + load,
                    parse_vegeta)
        if tool == "floor" and self.floor and rate:
            return [str(self.floor), str(rate), str(duration)], parse_floor
        return None


def fmt(v, digits=2):
    return "–" if v is None else f"{v:,.{digits}f}"


def load_name(rate, connections):
    return f"{rate} req/s" if rate else f"unthrottled, {connections} conns"


def measure(setup, nginx, gun_cpu, tool, rate, duration):
    """One run of one tool: its figures, or None if it has no run at this load."""
    spec = setup.command(tool, rate, duration)
    if spec is None:
        return None
    cmd, parse = spec
    row = measure_cmd(setup, nginx, gun_cpu, cmd, parse, duration)
    if tool == "floor":
        # No requests: its own count of wake-ups, and its own CPU for the loop alone.
        # (Its parsed figures carry its own cpu_us, per wake-up; none when they did not parse.)
        row = {**row, "achieved": row.get("wakeups", 0) / duration, "rss_mib": None}
        if "wakeups" not in row:
            row.pop("cpu_us", None)
        return row
    return row


def run_rounds(setup, nginx, gun_cpu, rates, duration, repeat):
    """Every tool at every load, `repeat` rounds; returns {(rate, tool): [figures per round]}."""
    samples = {}
    for round_ in range(1, repeat + 1):
        for rate in rates:
            load = load_name(rate, setup.connections)
            for tool in setup.columns():
                row = measure(setup, nginx, gun_cpu, tool, rate, duration)
                if row is None:
                    continue
                samples.setdefault((rate, tool), []).append(row)
                unit = "wake-up" if tool == "floor" else "req"
                print(f"  [{round_}/{repeat}] {load:<22} {tool:<20} achieved "
                      f"{row['achieved']:>9.0f}/s  cpu {fmt(row.get('cpu_us'), 1):>6} µs/{unit}  "
                      f"rss {fmt(row['rss_mib'], 1):>6} MiB  p50 {fmt(row.get('p50'), 3)} ms  "
                      f"p99 {fmt(row.get('p99'), 3)} ms  "
                      f"lateness p99 {fmt(row.get('lateness_p99'), 3)} ms", flush=True)
    return samples


def parse_strace(text):
    """strace -c's summary: (total calls, {syscall: calls})."""
    total, calls = None, {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) in (5, 6) and re.fullmatch(r"[\d.]+", parts[0]):
            if parts[-1] == "total":
                total = int(parts[3])
            else:
                calls[parts[-1]] = int(parts[3])
    return total, calls


def count_syscalls(setup, nginx, gun_cpu, rate, duration, workdir):
    """One run per tool under `strace -f -c` at `rate`: {tool: figures} with calls per request
    (per wake-up for the floor) and the top three calls. strace and the tool share the
    generator's CPU; the run's timing is not used."""
    if not shutil.which("strace"):
        print("syscalls: strace not on PATH: skipped (apt-get install strace)")
        return {}
    out = {}
    for tool in setup.columns():
        spec = setup.command(tool, rate, duration)
        if spec is None:
            continue
        cmd, parse = spec
        summary = Path(workdir) / f"strace-{tool.replace(' ', '_')}.txt"
        before = nginx.handled()
        text, _, _ = measured(["strace", "-f", "-c", "-S", "calls", "-o", str(summary)] + cmd,
                              gun_cpu, timeout=5 * duration + 30)
        handled = nginx.handled() - before - 1
        try:
            figures = parse(text)
        except (ValueError, KeyError, TypeError, subprocess.CalledProcessError):
            figures = {}
        if tool == "floor":
            handled = figures.get("wakeups", 0)
        try:
            total, calls = parse_strace(summary.read_text())
        except OSError:
            total, calls = None, {}
        if not total or not handled:
            print(f"  ! {tool} under strace: no count ({handled} requests)", file=sys.stderr)
            continue
        top = sorted(calls.items(), key=lambda kv: -kv[1])[:3]
        out[tool] = {"per_request": total / handled, "requests": handled,
                     "achieved": handled / duration,
                     "top": [(name, n / handled) for name, n in top]}
        unit = "wake-up" if tool == "floor" else "request"
        print(f"  strace {load_name(rate, setup.connections):<15} {tool:<20} "
              f"{total / handled:6.2f} calls/{unit} ({handled} in {duration}s): " +
              ", ".join(f"{name} {n:.2f}" for name, n in out[tool]["top"]), flush=True)
        # A generator that strace has put behind schedule sends without sleeping in between:
        # fewer wake-ups, and fewer calls, than in a real run. Say so when its own record shows it.
        late = figures.get("lateness_p50")
        if late is not None and late > 1:
            out[tool]["behind_ms"] = late
            print(f"  ! {tool} was behind schedule under strace (send lateness p50 {late:.1f} ms):"
                  " its count misses wake-ups", file=sys.stderr)
    return out


def medians(samples):
    """{(rate, tool): {metric: (median, min, max)}} over the rounds."""
    out = {}
    for key, rows in samples.items():
        metrics = {}
        for metric in rows[0]:
            values = [r[metric] for r in rows if isinstance(r.get(metric), (int, float))]
            if values:
                metrics[metric] = (statistics.median(values), min(values), max(values))
        out[key] = metrics
    return out


def cell(stat, digits, repeat):
    if stat is None:
        return "–"
    med, lo, hi = stat
    return fmt(med, digits) if repeat == 1 else f"{fmt(med, digits)} ({fmt(lo, digits)}–{fmt(hi, digits)})"


def ratio(a, b):
    return None if a is None or b is None or not b[0] else a[0] / b[0]


def print_tables(setup, med, syscalls, rates, strace, duration, repeat, connections):
    """The Markdown tables: every figure by tool, the ratios of medians, the floor's margins."""
    strace_rate, strace_duration = strace
    columns = setup.columns()
    fixed = [r for r in rates if r]
    unthrottled = 0 in rates

    def get(rate, tool, metric):
        return med.get((rate, tool), {}).get(metric)

    rows = []  # (label, {tool: cell})
    for rate in fixed:
        rows.append((f"CPU µs/request at {rate} req/s (floor: per wake-up)",
                     {t: cell(get(rate, t, "cpu_us"), 1, repeat) for t in columns}))
    if unthrottled:
        rows.append((f"req/s unthrottled, 1 thread, {connections} conns",
                     {t: cell(get(0, t, "achieved"), 0, repeat) for t in columns}))
        rows.append(("CPU µs/request unthrottled",
                     {t: cell(get(0, t, "cpu_us"), 1, repeat) for t in columns}))
    for rate in fixed:
        rows.append((f"send lateness p99 ms at {rate} req/s",
                     {t: cell(get(rate, t, "lateness_p99"), 3, repeat) for t in columns}))
    if syscalls:
        rows.append((f"syscalls/request at {strace_rate} req/s (strace; floor: per wake-up)",
                     {t: fmt(syscalls[t]["per_request"], 2) if t in syscalls else "–"
                      for t in columns}))
    for rate in rates:
        rows.append((f"peak RSS MiB, {load_name(rate, connections)}",
                     {t: cell(get(rate, t, "rss_mib"), 1, repeat) for t in columns}))
    for rate in fixed:
        rows.append((f"achieved req/s at {rate} req/s (nginx's count)",
                     {t: cell(get(rate, t, "achieved"), 0, repeat) for t in columns}))
    for rate in rates:
        for p in ("p50", "p99"):
            rows.append((f"latency {p} ms, {load_name(rate, connections)} (each tool's own)",
                         {t: cell(get(rate, t, p), 3, repeat) for t in columns}))

    spread = "median (min–max) of " + (f"{repeat} rounds" if repeat > 1 else "1 round")
    print(f"\n{spread}, {duration} s each; generator on one CPU, one thread; nginx on the other.\n")
    print("| | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for label, cells in rows:
        if all(cells[t] == "–" for t in columns):
            continue
        print(f"| {label} | " + " | ".join(cells[t] for t in columns) + " |")
    print()
    if setup.wrk2 and fixed:
        print("- wrk2 opens its connections 5 ms apart (0.25 s for 50) and sends on each only "
              "once it is open: at the fixed rates it falls short of the rate by that much "
              "(the achieved rows).")
    if "wrk2" in columns and unthrottled:
        print(f"- Unthrottled, the wrk2 column is {setup.unthrottled_wrk2()}.")
    print("- Send lateness is how late each request left against its own scheduled time "
          "(loadgen's record of itself; floor: how late the bare loop woke). wrk2 and oha report "
          "no such figure: their corrected latency (the latency rows) also counts from each "
          "request's intended time, but it is lateness and service time together, a different "
          "thing.")
    if "floor" in columns:
        print("- floor: bench/floor.c, a bare C loop sleeping on a timerfd to each request's "
              "absolute time at the same rate on the same CPU; its CPU is per wake-up, from "
              "getrusage(2).")
    if syscalls:
        print(f"- System calls from one extra {strace_duration} s run per tool at "
              f"{strace_rate} req/s under `strace -f -c`, divided by the requests nginx "
              "handled; the most frequent, per request:")
        for tool in columns:
            if tool in syscalls:
                s = syscalls[tool]
                behind = (f", behind schedule: send lateness p50 {s['behind_ms']:.1f} ms, so "
                          "fewer wake-ups than a real run" if "behind_ms" in s else "")
                print(f"  - {tool}: " + ", ".join(f"`{n}` {v:.2f}" for n, v in s["top"]) +
                      f" (achieved {s['achieved']:.0f}/s under strace{behind})")

    # Ratios, from the medians of this run.
    peers = [p for p in ("wrk2", "oha") if p in columns]
    ours = [t for t in ("loadgen", "loadgen --batch 1ms") if t in columns]
    if peers:
        heads = [f"{t} ÷ {p}" for t in ours for p in peers]
        print("\nRatios of medians, this run:\n")
        print("| | " + " | ".join(heads) + " |")
        print("|---|" + "---:|" * len(heads))

        def line(label, rate, metric):
            vals = [ratio(get(rate, t, metric), get(rate, p, metric)) for t in ours for p in peers]
            if any(v is not None for v in vals):
                print(f"| {label} | " + " | ".join(f"{fmt(v, 2)}×" if v is not None else "–"
                                                   for v in vals) + " |")
        for rate in fixed:
            line(f"CPU µs/request at {rate} req/s", rate, "cpu_us")
        if unthrottled:
            line("req/s unthrottled", 0, "achieved")
            line("CPU µs/request unthrottled", 0, "cpu_us")
        if syscalls:
            vals = [syscalls[t]["per_request"] / syscalls[p]["per_request"]
                    if t in syscalls and p in syscalls else None for t in ours for p in peers]
            print(f"| syscalls/request at {strace_rate} req/s | " +
                  " | ".join(f"{fmt(v, 2)}×" if v is not None else "–" for v in vals) + " |")
        for rate in rates:
            line(f"peak RSS, {load_name(rate, connections)}", rate, "rss_mib")
        if "wrk2" in peers and unthrottled:
            print(f"\nUnthrottled, ÷ wrk2 is ÷ {setup.unthrottled_wrk2()}.")

    if "loadgen static" in columns:
        print("\nThe static build (musl) against the dynamic one (glibc), ratios of medians, this "
              "run:\n")
        print("| | loadgen static ÷ loadgen |\n|---|---:|")
        for label, rate, metric in (
                [(f"CPU µs/request at {r} req/s", r, "cpu_us") for r in fixed]
                + [(f"send lateness p99 at {r} req/s", r, "lateness_p99") for r in fixed]
                + ([("req/s unthrottled", 0, "achieved"), ("CPU µs/request unthrottled", 0, "cpu_us")]
                   if unthrottled else [])
                + [(f"peak RSS, {load_name(r, connections)}", r, "rss_mib") for r in rates]):
            v = ratio(get(rate, "loadgen static", metric), get(rate, "loadgen", metric))
            if v is not None:
                print(f"| {label} | {fmt(v, 2)}× |")

    if "floor" in columns:
        # Only loadgen's default pacing wakes once per request as the floor does; --batch 1ms
        # wakes once a millisecond, so a difference per request would mean nothing.
        print("\nThe machine's floor for releasing one request at its own time (bench/floor.c, "
              "medians), and loadgen against it at the same rate on the same CPU:\n")
        for rate in fixed:
            floor, ours_ = med.get((rate, "floor"), {}), med.get((rate, "loadgen"), {})
            if "cpu_us" not in floor:
                continue
            print(f"- {rate} req/s: the floor costs {floor['cpu_us'][0]:.1f} µs of CPU per "
                  "wake-up and wakes late by " +
                  ", ".join(f"{fmt(floor.get('lateness_' + p, (None,))[0], 3)} ms at {p}"
                            for p in ("p50", "p99", "max")) + ".")
            late, floor_late = ours_.get("lateness_p99"), floor.get("lateness_p99")
            cpu, floor_cpu = ours_.get("cpu_us"), floor.get("cpu_us")
            if None in (late, floor_late, cpu):
                continue
            above = cpu[0] - floor_cpu[0]
            print(f"  loadgen: send lateness p99 {late[0]:.3f} ms, "
                  f"{fmt(ratio(late, floor_late), 2)}× the floor's; CPU {cpu[0]:.1f} µs/request, "
                  f"{abs(above):.1f} µs {'above' if above >= 0 else 'below'} the floor's "
                  f"{floor_cpu[0]:.1f} µs/wake-up.")


PACED_ACHIEVED = 0.97
PACED_P99_MS = 2.0
PACED_P99_GROWTH = 2.0


def pacing(setup, nginx, gun_cpu, shares, duration):
    """loadgen and wrk2 paced at `shares` of their own unthrottled rate, until one is not clean:
    {tool: {"unthrottled": req/s, "tried": [(share, rate, figures, clean)], "clean": share}}."""
    out = {}
    for tool in ("loadgen", "loadgen --batch 1ms", "wrk2"):
        if tool == "wrk2" and not setup.wrk2:
            print("pacing: wrk2 not on PATH: loadgen alone")
            continue
        if tool == "loadgen --batch 1ms" and "loadgen" in out:
            top = {"achieved": out["loadgen"]["unthrottled"]}
        elif tool == "wrk2":
            top = measure_cmd(setup, nginx, gun_cpu, [setup.wrk2, "-t1", f"-c{setup.connections}",
                              f"-d{duration}s", f"-R{WRK2_UNTHROTTLED}", "--latency",
                              setup.url], parse_wrk, duration)
        else:
            top = measure(setup, nginx, gun_cpu, tool, 0, duration)
        unthrottled = top["achieved"]
        print(f"  pacing {tool:<19} unthrottled {unthrottled:,.0f} req/s", flush=True)
        tried, clean_share, bound = [], 0.0, None
        for share in shares:
            rate = round(unthrottled * share)
            row = measure(setup, nginx, gun_cpu, tool, rate, duration)
            p99 = row.get("p99")
            if bound is None and p99 is not None:
                bound = max(PACED_P99_MS, PACED_P99_GROWTH * p99)
            on_time = (not row.get("behind", True) if tool.startswith("loadgen")
                       else p99 is not None and p99 <= bound)
            clean = row["achieved"] >= PACED_ACHIEVED * rate and on_time
            extra = (f"  lateness p99 {fmt(row.get('lateness_p99'), 3)} ms, "
                     f"{'behind' if row.get('behind') else 'on schedule'} by its own record"
                     if tool.startswith("loadgen") else "")
            print(f"  pacing {tool:<19} {share:.2f}× = {rate:>7,} req/s: achieved "
                  f"{row['achieved']:>9,.0f}/s  p99 {fmt(p99, 3)} ms  cpu "
                  f"{fmt(row.get('cpu_us'), 1)} µs/req  {'clean' if clean else 'NOT clean'}{extra}",
                  flush=True)
            tried.append((share, rate, row, clean))
            if not clean:
                break
            clean_share = share
        out[tool] = {"unthrottled": unthrottled, "tried": tried, "clean": clean_share}
    if out:
        print("\nPaced cleanly (nginx counted >= 97 % of the rate; loadgen not behind by its "
              "record of every send, wrk2's corrected p99 at most twice that at the first share, "
              "at least 2 ms), as a share of the tool's own unthrottled rate:\n")
        print("| tool | unthrottled req/s | highest clean share | its rate |\n|---|---:|---:|---:|")
        for tool, r in out.items():
            print(f"| {tool} | {r['unthrottled']:,.0f} | {r['clean']:.2f}× | "
                  f"{r['unthrottled'] * r['clean']:,.0f} |")
    return out


def measure_cmd(setup, nginx, gun_cpu, cmd, parse, duration):
    """One run of a command not in Setup.command: achieved (nginx's count), CPU, its figures."""
    before = nginx.handled()
    text, cpu_s, rss = measured(cmd, gun_cpu, timeout=3 * duration + 30)
    handled = nginx.handled() - before - 1
    try:
        figures = parse(text)
    except (ValueError, KeyError, TypeError, subprocess.CalledProcessError) as e:
        figures = {}
        print(f"  ! could not read {cmd[0]}'s output: {e}", file=sys.stderr)
    return {"achieved": handled / duration, "cpu_us": 1e6 * cpu_s / max(handled, 1),
            "rss_mib": rss / 1048576, **figures}


def memory_over_time(loadgen, nginx, gun_cpu, rate, duration):
    """RSS of loadgen (and oha) sampled every few seconds of a long run at a fixed rate."""
    series = {}
    for name, cmd in [("loadgen", [str(loadgen), "attack", "--rate", str(rate), "--duration",
                                   f"{duration}s", "--threads", "1", "--no-store", "--output",
                                   "json", nginx.url]),
                      ("oha", ["oha", "-q", str(rate), "-z", f"{duration}s", "-c", "50",
                               "--no-tui", "--output-format", "quiet", nginx.url])]:
        if name == "oha" and not shutil.which("oha"):
            continue
        proc = subprocess.Popen(["taskset", "-c", str(gun_cpu)] + cmd,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples = []
        step = max(duration / 6, 1)
        t0 = time.monotonic()
        while proc.poll() is None:
            time.sleep(step)
            try:
                status = Path(f"/proc/{proc.pid}/status").read_text()
                kb = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
                samples.append((round(time.monotonic() - t0), kb / 1024))
            except (OSError, AttributeError):
                break
            if time.monotonic() - t0 > duration + 60:
                proc.kill()
        proc.wait()
        series[name] = samples
        print(f"  {name:<8} RSS over a {duration}s run at {rate} req/s: " +
              ", ".join(f"{t}s {m:.1f} MiB" for t, m in samples), flush=True)
    return series


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--rates", default="5000,20000", help="fixed rates, comma-separated")
    ap.add_argument("--connections", type=int, default=50,
                    help="connections for closed loops, wrk2 and oha")
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds of every measurement, reported as median and min–max (default 3)")
    ap.add_argument("--strace-rate", type=int,
                    help="rate of the runs under strace that count system calls (default: the "
                         "first of --rates)")
    ap.add_argument("--strace-duration", type=int, default=3,
                    help="seconds of each run under strace (default 3)")
    ap.add_argument("--skip-strace", action="store_true")
    ap.add_argument("--memory-duration", type=int, default=60, help="seconds of the memory run")
    ap.add_argument("--memory-rate", type=int, default=20000,
                    help="req/s of the memory run (default 20000, issue 10's)")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--loadgen", type=Path,
                    help="the loadgen binary to measure, as it is (default: build "
                         "target/release/loadgen with cargo first)")
    ap.add_argument("--static", type=Path,
                    help="also measure this loadgen (the image's static build, "
                         "scripts/static-build.sh), taking turns with the first")
    ap.add_argument("--pacing", default="",
                    help="shares of each tool's own unthrottled rate to pace loadgen and wrk2 "
                         "at, comma-separated, e.g. 0.5,0.6,0.7,0.8,0.9 (default: none)")
    ap.add_argument("--json", help="also write all figures to this file")
    args = ap.parse_args()
    if args.repeat < 1 or args.duration < 1:
        ap.error("--repeat and --duration must be at least 1")

    available = cpus()
    if len(available) < 2:
        sys.exit("needs two CPUs: one for the generator, one for nginx")
    gun_cpu, server_cpu = available[0], available[-1]
    loadgen = args.loadgen
    if loadgen is None:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "loadgen"], cwd=ROOT, check=True)
        loadgen = LOADGEN
    rates = [int(r) for r in args.rates.split(",") if r] + [0]
    strace_rate = args.strace_rate or rates[0] or 5000

    workdir = tempfile.mkdtemp(prefix="bench-loadgen-")
    nginx = Nginx(server_cpu)
    try:
        targets = Path(workdir) / "targets.txt"
        targets.write_text(f"GET {nginx.url}\n")
        setup = Setup(loadgen, build_floor(workdir), nginx.url, targets, args.connections,
                      args.static)
        for tool, path in [("wrk2", setup.wrk2), ("oha", setup.oha), ("vegeta", setup.vegeta)]:
            if not path:
                print(f"{tool}: not on PATH: skipped" +
                      (" at the fixed rates" if tool == "wrk2" and setup.wrk else ""))
        print(f"nginx on CPU {server_cpu}, generators on CPU {gun_cpu}, {args.duration}s per run, "
              f"{args.repeat} round(s)")
        samples = run_rounds(setup, nginx, gun_cpu, rates, args.duration, args.repeat)
        syscalls = {} if args.skip_strace else count_syscalls(
            setup, nginx, gun_cpu, strace_rate, args.strace_duration, workdir)
        shares = [float(x) for x in args.pacing.split(",") if x]
        paced = pacing(setup, nginx, gun_cpu, shares, args.duration) if shares else {}
        memory = {} if args.skip_memory else memory_over_time(
            loadgen, nginx, gun_cpu, args.memory_rate, args.memory_duration)
    finally:
        nginx.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    med = medians(samples)
    print_tables(setup, med, syscalls, rates, (strace_rate, args.strace_duration), args.duration,
                 args.repeat, args.connections)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "runs": [{"load": load_name(rate, args.connections), "rate": rate, "tool": tool,
                      "rounds": rows} for (rate, tool), rows in samples.items()],
            "medians": [{"rate": rate, "tool": tool, **{m: list(v) for m, v in metrics.items()}}
                        for (rate, tool), metrics in med.items()],
            "syscalls": syscalls, "memory": memory, "pacing": paced}, indent=2))


if __name__ == "__main__":
    main()
