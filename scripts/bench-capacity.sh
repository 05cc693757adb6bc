#!/usr/bin/env bash
# Two capacity searches of one built-in target back to back, as docs/benchmarks/capacity.md
# reports them: the target on CPU 1, the generator on CPU 0, GET /now, p99 <= 10 ms and errors
# <= 0.1 %, C_0.5 of 10 s windows after 2 s, until the 95 % interval is within ±5 % or 5 minutes
# pass. Prints each search's figure, interval, steps and minutes, and whether each interval holds
# the other's figure.
#
#   scripts/bench-capacity.sh go      (or node, rust; about 10 minutes)
#   KEEP=dir scripts/bench-capacity.sh node   # also keeps both searches' JSON (every step) in dir
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=${1:?give a built-in target: go, node or rust}
port=${PORT:-18480}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
start_target "$name" "$port"
for n in 1 2; do
  start=$(date +%s)
  taskset -c 0 "$loadgen" capacity "http://127.0.0.1:$port/now" --no-store \
    --slo 'p99<=10ms' --slo 'errors<=0.1%' --budget 5m --output json \
    >"$out/$n.json" 2>"$out/$n.log"
  echo "$(( $(date +%s) - start ))" >"$out/$n.seconds"
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$out/$n.json" "$KEEP/$name-$n.json"; fi
done
python3 - "$out" "$name" <<'EOF'
import json, sys
out, name = sys.argv[1], sys.argv[2]
searches = []
for n in (1, 2):
    r = json.load(open(f"{out}/{n}.json"))
    s = r["searches"][0]
    e = (s.get("estimates") or [{}])[0]
    searches.append((s, e, int(open(f"{out}/{n}.seconds").read())))
def limited(s):
    # A search the generator ended gives a lower bound (the highest rate it drove validly with
    # the SLO met), not a fitted figure.
    return s["status"] == "generatorlimited"
for i, (s, e, secs) in enumerate(searches, 1):
    if limited(s):
        figure = f"at least {s.get('generator_limit') or s.get('highest_pass') or 0:.0f} req/s, no interval (the generator's limit)"
    else:
        figure = (f"C_0.5 {e.get('rate', 0):.0f} req/s, 95 % interval "
                  f"{e.get('low') or 0:.0f}-{e.get('high') or 0:.0f}")
    print(f"{name} search {i}: {figure}, {len(s['steps'])} steps, "
          f"{secs / 60:.1f} min, {s['status']}: {s['reason']}")
(a, ea, _), (b, eb, _) = searches
def holds(s, e, other, eo):
    if limited(s):
        return None
    if limited(other):
        bound = other.get("generator_limit") or other.get("highest_pass") or 0
        return e.get("high") is not None and bound <= e["high"]
    x = eo.get("rate", 0)
    return e.get("low") is not None and e.get("high") is not None and e["low"] <= x <= e["high"]
def said(h):
    return "no interval to hold it" if h is None else str(h)
print(f"{name}: first interval holds the second figure (or bound): {said(holds(a, ea, b, eb))}; "
      f"second holds the first: {said(holds(b, eb, a, ea))}")
EOF
