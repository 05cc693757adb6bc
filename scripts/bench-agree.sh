#!/usr/bin/env bash
# Does the search agree with fixed rates? One capacity search of a built-in target, then, in the
# same sitting against the same server, fixed-rate attacks of one window's length (10 s, judged
# on their whole run, start included) at 70–130 % of its figure in 5 % steps, each judged with
# `attack --slo` against the search's SLO. Prints every attack's verdict, the highest fixed rate
# that passed with no warning, and the search's figure as a share of it (the goal: at least 0.9).
# The target on CPU 1, the generator on CPU 0, GET /now, p99 <= 10 ms and errors <= 0.1 %.
#
#   scripts/bench-agree.sh rust      (or go, node; about 8 minutes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=${1:?give a built-in target: go, node or rust}
port=${PORT:-18490}
budget=${BUDGET:-5m}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
start_target "$name" "$port"
url="http://127.0.0.1:$port/now"
slo=(--slo 'p99<=10ms' --slo 'errors<=0.1%')
taskset -c 0 "$loadgen" capacity "$url" --no-store "${slo[@]}" --budget "$budget" \
  --output json >"$out/search.json" 2>"$out/search.log"
if ! figure=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["capacity"]["rate"]))' "$out/search.json" 2>/dev/null); then
  echo "$name: the search gave no figure:" >&2
  tail -5 "$out/search.log" >&2
  exit 1
fi
python3 - "$out/search.json" "$name" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c, s = r["capacity"], r["searches"][0]
low, high = c.get("low"), c.get("high")
interval = f"95 % interval {low:.0f}-{high:.0f}" if low and high else "no interval"
print(f"{sys.argv[2]}: the search's C_0.5 = {c['rate']:.0f} req/s ({interval}), "
      f"{len(s['steps'])} steps, {s['status']}: {s['reason']}")
EOF
for pct in 70 75 80 85 90 95 100 105 110 115 120 125 130; do
  rate=$((figure * pct / 100))
  sleep 2
  set +e
  taskset -c 0 "$loadgen" attack "$url" --rate "$rate" --duration 10s --no-store "${slo[@]}" \
    --output json >"$out/$pct.json" 2>"$out/$pct.log"
  echo "$? $rate" >"$out/$pct.exit"
  set -e
done
python3 - "$out" "$name" "$figure" <<'EOF'
import json, sys
out, name, figure = sys.argv[1], sys.argv[2], float(sys.argv[3])
best = None
for pct in range(70, 135, 5):
    code, rate = open(f"{out}/{pct}.exit").read().split()
    try:
        r = json.load(open(f"{out}/{pct}.json"))
    except ValueError:
        print(f"  {rate} req/s ({pct} %): exit {code}, no summary: {open(f'{out}/{pct}.log').read().strip()[-200:]}")
        continue
    slo = r.get("slo") or {}
    warnings = r.get("warnings") or []
    p99 = r["latency"]["corrected"].get("p99_ns", 0) / 1000
    line = f"  {rate} req/s ({pct} %): exit {code}, {slo.get('outcome')}, p99 {p99:.0f} µs"
    if warnings:
        line += f", warnings: {'; '.join(str(w) for w in warnings)}"
    print(line)
    if code == "0" and not warnings:
        best = max(best or 0, int(rate))
if best:
    print(f"{name}: highest fixed rate passed with no warning {best} req/s; "
          f"the search's figure is {figure / best:.2f} of it (goal: at least 0.90)")
else:
    print(f"{name}: no fixed rate passed")
EOF
