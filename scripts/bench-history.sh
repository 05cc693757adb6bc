#!/usr/bin/env bash
# A history measured on this machine (docs/history.md): SITTINGS sittings of the nightly
# example (experiments/examples/ci/nightly.toml: the gate example's Go server, its A/A twin, and the
# spin, chase and syscall references, all on CPU 1), one after another, each `--again`. The
# server's build changes twice at known sittings: its WORK goes from 1 ms to 1.08 ms after the
# first third (a regression), then to 1.029 ms after the second (an improvement of 5 %); the
# twin never changes. Then `loadgen history` judges the sittings, raw and with the references,
# and the script prints each series' spread from sitting to sitting, raw against divided.
#
#   scripts/bench-history.sh [SITTINGS] [SCALE] [MEASURE]
#     MEASURE fixed (default): the example as shipped, fixed-rate runs judged by CPU per request
#       (12 sittings at scale 0.3: about 12 minutes);
#     MEASURE capacity: every cell a capacity search instead (p99 <= 20 ms), the five targets'
#       searches interleaved in 8 rounds, as the references are meant to run, judged by capacity
#       within the SLO (12 sittings at scale 1: about half an hour)
#   KEEP=history.db scripts/bench-history.sh      (the store kept, and the sittings' logs beside it)
#   DRIFT=1 scripts/bench-history.sh …            (the host made to drift: in each sitting a process
#     on the targets' CPU 1 busy a share of every 10 ms, the shares 0–30 % in a fixed order, as
#     a neighbour on a shared host would be; the server and the references all slowed alike)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sittings=${1:-12}
scale=${2:-0.3}
measure=${3:-fixed}
case "$measure" in
fixed) judged=cpu name="CPU per request" ;;
capacity) judged=capacity name="capacity within the SLO" ;;
*)
  echo "bench-history.sh: MEASURE is fixed or capacity, not $measure" >&2
  exit 2
  ;;
esac
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
server="$root/experiments/examples/ci/server"
PATH="$(dirname "$loadgen"):$PATH"
export PATH
db="sqlite://$out/runs.db"
third=$((sittings / 3))
# The neighbour's share of CPU 1 in each sitting, with DRIFT=1.
shares=(0 20 10 30 5 25 15 0 30 10 20 5)
neighbour=""
stop_neighbour() { if [ -n "$neighbour" ]; then kill "$neighbour" 2>/dev/null || true; wait "$neighbour" 2>/dev/null || true; neighbour=""; fi; }
trap 'stop_neighbour; cleanup' EXIT
started=$(date +%s)
for i in $(seq 1 "$sittings"); do
  share=0
  if [ -n "${DRIFT:-}" ]; then
    share=${shares[$(((i - 1) % ${#shares[@]}))]}
    # Busy share % of every 10 ms on CPU 1, for at most an hour.
    taskset -c 1 python3 -c '
import sys, time
busy, end = float(sys.argv[1]) / 100 * 0.01, time.monotonic() + 3600
while time.monotonic() < end:
    t = time.perf_counter()
    while time.perf_counter() - t < busy:
        pass
    time.sleep(0.01 - busy)' "$share" &
    neighbour=$!
  fi
  if [ "$i" -le "$third" ]; then work=1ms; elif [ "$i" -le $((2 * third)) ]; then work=1080us; else work=1029us; fi
  # The server's WORK is its build here; its twin keeps 1 ms throughout.
  awk -v work="$work" -v server="$server" '
    /^name = "server"$/ { mine = 1 } /^name = "server-again"$/ { mine = 0 }
    /^cwd = / { print "cwd = \"" server "\""; next }
    /^env = / && mine { print "env = { WORK = \"" work "\" }"; next }
    /^rate = / && capacity { next } /^duration = / && capacity { next }
    /^repetitions = / && capacity { print "repetitions = 1"; next }
    { print }
    END { if (capacity) print "\n[search]\nslo = [\"p99<=20ms\"]\nstep = \"2s\"\nwarmup = \"1s\"\nrounds = 8" }' \
    capacity="$([ "$measure" = capacity ] && echo 1 || echo 0)" "$root/experiments/examples/ci/nightly.toml" |
    sed -e 's/^name = "nightly-example"/name = "nightly-bench"/' >"$out/nightly.toml"
  "$loadgen" experiment run "$out/nightly.toml" --again --scale "$scale" --no-report --db "$db" \
    >"$out/sitting-$i.log" 2>&1 || {
    echo "sitting $i failed:" >&2
    tail -5 "$out/sitting-$i.log" >&2
    exit 1
  }
  stop_neighbour
  # A cell that failed leaves a hole in the sitting: said, not hidden.
  grep -q "(0 failed)" "$out/sitting-$i.log" || echo "sitting $i: a cell failed: $(grep -m1 'failed' "$out/sitting-$i.log")" >&2
  echo "sitting $i of $sittings: server WORK=$work, neighbour ${share} %, $(tail -1 "$out/sitting-$i.log")"
done
echo "$sittings sittings in $(($(date +%s) - started)) s; the server changed after sittings $third and $((2 * third))"
echo
echo "== raw figures"
"$loadgen" history --db "$db" --experiment nightly-bench --raw | grep -A4 -E "^(server|server-again|spin|chase|syscall): $name" || true
echo
echo "== divided by the references"
"$loadgen" history --db "$db" --experiment nightly-bench --reference spin --reference chase --reference syscall |
  grep -A4 -E "^(server|server-again)( ÷ [a-z]+)?: $name" || true
"$loadgen" history --db "$db" --experiment nightly-bench --reference spin --reference chase --reference syscall \
  --output json >"$out/history.json"
python3 - "$out/history.json" "$judged" "$name" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
print()
print(f"== spread from sitting to sitting (von Neumann, of the logarithm), {sys.argv[3]}")
for s in h["series"]:
    k = s["key"]
    if k["measure"] != sys.argv[2]:
        continue
    n = s.get("normalised")
    if n is None:
        continue
    raw = n.get("raw_spread")
    if raw is None:
        print(f"{k['target']}: {n['sittings']} sittings, too few to choose a reference")
        continue
    spreads = ", ".join(f"{r} {v*100:.2f} %" for r, v in n["spreads"])
    ratio = ""
    if n.get("reference") and raw:
        best = dict(n["spreads"])[n["reference"]]
        ratio = f"; divided ÷ raw = {best/raw:.2f}"
    print(f"{k['target']}: raw {raw*100:.2f} %; {spreads}{ratio}")
PY
# The store copied whole (SQLite's backup: what is still in its write-ahead log too), and the
# sittings' logs beside it.
if [ -n "${KEEP:-}" ]; then
  python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' "$out/runs.db" "$KEEP"
  cat "$out"/sitting-*.log >"$KEEP.log"
fi
