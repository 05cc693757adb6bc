#!/usr/bin/env python3
"""Benchmark loadgen against the load generators users know, in one run, on one machine.

The target is nginx (Debian's nginx-light) with one worker pinned to the last CPU; each
generator is pinned to CPU 0 with `taskset`, one thread. Every tool is measured the same way,
from outside:

  * CPU time (user + system) and peak RSS of the generator process, from wait4(2);
  * requests the server handled, from nginx's own stub_status counter (not the tool's claim);
  * latency percentiles and, for loadgen, send lateness, from each tool's JSON output.

Peers are run when they are on PATH: wrk (Debian), oha (`cargo install --locked oha`),
vegeta (v12.12.0, built with `go build`). Absolute figures depend on the machine; compare the
ratios within one run.

    python3 bench/loadgen.py                     # 5,000 and 20,000 req/s, unthrottled, memory
    python3 bench/loadgen.py --duration 5 --rates 5000 --skip-memory
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOADGEN = ROOT / "target" / "release" / "loadgen"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpus():
    return sorted(os.sched_getaffinity(0))


class Nginx:
    """nginx with one worker on the last CPU, counting requests in stub_status."""

    def __init__(self, cpu):
        if not shutil.which("nginx"):
            if os.geteuid() == 0 and shutil.which("apt-get"):
                subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True,
                               stdout=subprocess.DEVNULL)
            else:
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


def measured(cmd, cpu):
    """Runs cmd pinned to `cpu`; returns (stdout, cpu seconds, peak RSS bytes).

    CPU comes from wait4(2). Peak RSS is polled from /proc (VmHWM) while the process runs:
    wait4's ru_maxrss would count the forked Python before exec.
    """
    out = tempfile.TemporaryFile()
    proc = subprocess.Popen(["taskset", "-c", str(cpu)] + cmd, stdout=out, stderr=subprocess.PIPE)
    rss = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        rss = max(rss, peak_rss(proc.pid))
        time.sleep(0.05)
    stderr = proc.stderr.read()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(f"  ! {' '.join(cmd[:3])}… exited {code}: {stderr.decode()[-300:]}", file=sys.stderr)
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
    def value(label):
        m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
        if not m:
            return None
        v, unit = float(m.group(1)), m.group(2)
        return v / 1e3 if unit == "us" else v * 1e3 if unit == "s" else v
    return {"p50": value("50"), "p99": value("99")}


def tools(url, rate, duration, connections, targets):
    """(name, command, parser) for each tool that is installed."""
    d = f"{duration}s"
    out = []
    if rate:
        out.append(("loadgen", [str(LOADGEN), "attack", "--rate", str(rate), "--duration", d,
                                "--threads", "1", "--output", "json", url], parse_loadgen))
        out.append(("loadgen --batch 1ms", [str(LOADGEN), "attack", "--rate", str(rate),
                                            "--duration", d, "--batch", "1ms", "--threads", "1",
                                            "--output", "json", url], parse_loadgen))
        if shutil.which("oha"):
            out.append(("oha", ["oha", "-q", str(rate), "-z", d, "-c", str(connections),
                                "--latency-correction", "--no-tui", "--output-format", "json",
                                url], parse_oha))
        if shutil.which("vegeta"):
            out.append(("vegeta", ["vegeta", "attack", f"-targets={targets}", f"-rate={rate}",
                                   f"-duration={d}"], parse_vegeta))
    else:
        out.append(("loadgen", [str(LOADGEN), "attack", "--connections", str(connections),
                                "--duration", d, "--threads", "1", "--output", "json", url],
                    parse_loadgen))
        if shutil.which("wrk"):
            out.append(("wrk", ["wrk", "-t1", f"-c{connections}", f"-d{d}", "--latency", url],
                        parse_wrk))
        if shutil.which("oha"):
            out.append(("oha", ["oha", "-c", str(connections), "-z", d, "--no-tui",
                                "--output-format", "json", url], parse_oha))
        if shutil.which("vegeta"):
            out.append(("vegeta", ["vegeta", "attack", f"-targets={targets}", "-rate=0",
                                   f"-max-workers={connections}", f"-duration={d}"], parse_vegeta))
    return out


def fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def run_table(nginx, gun_cpu, rates, duration, connections):
    rows = []
    targets = Path(nginx.dir) / "targets.txt"
    targets.write_text(f"GET {nginx.url}\n")
    for rate in rates:
        for name, cmd, parse in tools(nginx.url, rate, duration, connections, targets):
            before = nginx.handled()
            text, cpu_s, rss = measured(cmd, gun_cpu)
            handled = nginx.handled() - before - 1
            try:
                figures = parse(text)
            except (ValueError, KeyError, subprocess.CalledProcessError) as e:
                figures = {}
                print(f"  ! could not read {name}'s output: {e}", file=sys.stderr)
            row = {
                "load": f"{rate} req/s" if rate else f"unthrottled, {connections} conns",
                "tool": name,
                "achieved": handled / duration,
                "cpu_us": 1e6 * cpu_s / max(handled, 1),
                "rss_mib": rss / 1048576,
                **figures,
            }
            rows.append(row)
            print(f"  {row['load']:<24} {name:<20} achieved {row['achieved']:>9.0f}/s  "
                  f"cpu {row['cpu_us']:6.1f} µs/req  rss {row['rss_mib']:6.1f} MiB  "
                  f"p50 {fmt(row.get('p50'), 3)} ms  p99 {fmt(row.get('p99'), 3)} ms  "
                  f"lateness p99 {fmt(row.get('lateness_p99'), 3)} ms", flush=True)
    return rows


def memory_over_time(nginx, gun_cpu, rate, duration):
    """RSS of loadgen (and oha) sampled every few seconds of a long run at a fixed rate."""
    series = {}
    for name, cmd in [("loadgen", [str(LOADGEN), "attack", "--rate", str(rate), "--duration",
                                   f"{duration}s", "--threads", "1", "--output", "json",
                                   nginx.url]),
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
        proc.wait()
        series[name] = samples
        print(f"  {name:<8} RSS over a {duration}s run at {rate} req/s: " +
              ", ".join(f"{t}s {m:.1f} MiB" for t, m in samples), flush=True)
    return series


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10, help="seconds per run (default 10)")
    ap.add_argument("--rates", default="5000,20000", help="fixed rates, comma-separated")
    ap.add_argument("--connections", type=int, default=50, help="connections for closed loops and oha")
    ap.add_argument("--memory-duration", type=int, default=60, help="seconds of the memory run")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--json", help="also write all figures to this file")
    args = ap.parse_args()

    available = cpus()
    if len(available) < 2:
        sys.exit("needs two CPUs: one for the generator, one for nginx")
    gun_cpu, server_cpu = available[0], available[-1]
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "loadgen"], cwd=ROOT, check=True)
    nginx = Nginx(server_cpu)
    try:
        print(f"nginx on CPU {server_cpu}, generators on CPU {gun_cpu}, {args.duration}s per run")
        rates = [int(r) for r in args.rates.split(",") if r] + [0]
        rows = run_table(nginx, gun_cpu, rates, args.duration, args.connections)
        memory = {} if args.skip_memory else memory_over_time(nginx, gun_cpu, 5000, args.memory_duration)
    finally:
        nginx.stop()
    print("\n| load | tool | achieved req/s | CPU µs/request | peak RSS MiB | p50 ms | p99 ms | lateness p99 ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['load']} | {r['tool']} | {r['achieved']:.0f} | {r['cpu_us']:.1f} | {r['rss_mib']:.1f} | "
              f"{fmt(r.get('p50'), 3)} | {fmt(r.get('p99'), 3)} | {fmt(r.get('lateness_p99'), 3)} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "memory": memory}, indent=2))


if __name__ == "__main__":
    main()
