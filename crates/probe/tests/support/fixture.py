"""A process whose figures are known, for the probe's tests.

    fixture.py [--threads N] [--fds N] [--cpu SHARE] [--children K] [--child-cpu SHARE]
               [--rss-step-mb M --rss-step-after S] [--listen PORT] [--duration S]

It starts N idle threads, opens N extra file descriptors, burns SHARE of one core (busy for
SHARE of every 10 ms), starts K children that each burn --child-cpu, optionally listens on a
TCP port, and after S seconds allocates and touches M MiB. On standard output it prints one
JSON line when ready (its own view of itself), then one when the RSS step is done, with the
monotonic time in ns. It exits after --duration seconds, or when its standard input closes.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=0)
ap.add_argument("--fds", type=int, default=0)
ap.add_argument("--cpu", type=float, default=0.0)
ap.add_argument("--children", type=int, default=0)
ap.add_argument("--child-cpu", type=float, default=0.0)
ap.add_argument("--rss-step-mb", type=int, default=0)
ap.add_argument("--rss-step-after", type=float, default=1.0)
ap.add_argument("--listen", type=int, default=0)
ap.add_argument("--duration", type=float, default=60.0)
args = ap.parse_args()

stop = threading.Event()
for _ in range(args.threads):
    threading.Thread(target=stop.wait, daemon=True).start()
files = [os.open("/dev/null", os.O_RDONLY) for _ in range(args.fds)]
listener = None
if args.listen:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.listen))
    listener.listen(16)
children = [
    subprocess.Popen([sys.executable, __file__, "--cpu", str(args.child_cpu),
                      "--duration", str(args.duration)],
                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    for _ in range(args.children)
]


def watch_stdin():
    # The test holds our standard input: when it goes, so do we.
    sys.stdin.read()
    stop.set()


threading.Thread(target=watch_stdin, daemon=True).start()

# Our own count of FDs: the directory listing itself opens one more while it runs.
fds = len(os.listdir("/proc/self/fd")) - 1
print(json.dumps({"event": "ready", "pid": os.getpid(),
                  "threads": threading.active_count(), "fds": fds,
                  "children": [c.pid for c in children]}), flush=True)

start = time.monotonic()
ballast = None
period = 0.01
while not stop.is_set() and time.monotonic() - start < args.duration:
    if args.rss_step_mb and ballast is None and time.monotonic() - start >= args.rss_step_after:
        # Multiplying writes every byte, so every page is resident.
        ballast = bytearray(b"\x01") * (args.rss_step_mb << 20)
        print(json.dumps({"event": "rss_step", "mono_ns": time.monotonic_ns(),
                          "bytes": len(ballast)}), flush=True)
    tick = time.perf_counter()
    if args.cpu > 0:
        while time.perf_counter() - tick < period * args.cpu:
            pass
    time.sleep(max(0.0, period - (time.perf_counter() - tick)))
for c in children:
    c.kill()
