#!/usr/bin/env bash
# An interleaved comparison of built-in targets, as docs/benchmarks/capacity.md reports it: the
# targets on CPU 1 (each its own process, taking turns), the generator on CPU 0, GET /now,
# p99 <= 10 ms and errors <= 0.1 %, C_0.5 of 5 s windows after 1 s, 16 rounds. One name is an
# A/A control (the same server entered twice); two names compare the second with the first.
# Prints the ratio with its 95 % interval and each search's figure.
#
#   scripts/bench-compare.sh go          (A/A, about 5 minutes)
#   scripts/bench-compare.sh node go     (go ÷ node)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
first=${1:?give one or two built-in targets: go, node or rust}
second=${2:-}
rounds=${ROUNDS:-16}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
start_target "$first" 18480
against=http://127.0.0.1:18480
if [ -n "$second" ]; then
  start_target "$second" 18481
  against=http://127.0.0.1:18481
fi
begun=$(date +%s)
taskset -c 0 "$loadgen" capacity "http://127.0.0.1:18480/now" --against "$against" --no-store \
  --slo 'p99<=10ms' --slo 'errors<=0.1%' --step 5s --warmup 1s --rounds "$rounds" \
  --output json >"$out/compared.json" 2>"$out/compared.log"
minutes=$(( ($(date +%s) - begun) / 60 ))
python3 - "$out/compared.json" "$first" "${second:-$first}" "$minutes" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
a, b, minutes = sys.argv[2], sys.argv[3], sys.argv[4]
for r in c["ratios"]:
    low, high = r.get("low"), r.get("high")
    interval = f"95 % interval {low:.3f}-{high:.3f}" if low and high else "no interval: " + r.get("note", "")
    print(f"{b} / {a}: {r['ratio']:.3f}x ({interval}), {c['rounds']} rounds, about {minutes} min")
for s in c["searches"]:
    e = (s.get("estimates") or [{}])[0]
    print(f"  {s['name']}: C_0.5 {e.get('rate', 0):.0f} req/s "
          f"(95 % interval {e.get('low') or 0:.0f}-{e.get('high') or 0:.0f}), {len(s['steps'])} steps")
PY
