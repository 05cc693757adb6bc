#!/usr/bin/env bash
# Does the gate name the function a build added, and only it (docs/gate.md, "Where the CPU
# went")? SITTINGS sittings of the gate example (experiments/examples/ci: a Go server whose
# candidate spends 115 µs a request more in a function it added, `main.audit`, and the
# baseline's build again as the A/A control), profiled at 999 Hz, 8 rounds of DURATION at 500
# req/s. For each sitting: whether the gate named main.audit, whether the interval of its CPU
# per request (with what it called) held the 115 µs it was given, what else it named, and what
# the A/A control named. The issue's bar: main.audit named, its interval holding 115 µs and
# nothing else named in at least 9 of 10 sittings; the A/A control naming nothing.
#
#   scripts/bench-gate-functions.sh [SITTINGS] [DURATION]   (default 10 of 2s: about 20 minutes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sittings=${1:-10}
duration=${2:-2s}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
server="$root/experiments/examples/ci/server"
{
  echo "profile = true"
  echo "profile_hz = 999"
  sed -e "s/^duration = .*/duration = \"$duration\"/" \
    -e "s/^warmup = .*/warmup = \"1s\"/" \
    -e "s|^cwd = \"server\"|cwd = \"$server\"|" \
    "$root/experiments/examples/ci/gate.toml"
} >"$out/gate.toml"
started=$(date +%s)
for i in $(seq 1 "$sittings"); do
  set +e
  "$loadgen" experiment run "$out/gate.toml" --db "sqlite://$out/runs-$i.db" --no-report \
    --json "$out/gate-$i.json" >"$out/run-$i.log" 2>&1
  code=$?
  set -e
  if [ ! -s "$out/gate-$i.json" ]; then
    echo "sitting $i gave no verdict (exit $code):" >&2
    tail -20 "$out/run-$i.log" >&2
    exit 1
  fi
  grep 'by function' "$out/run-$i.log" | sed "s/^/sitting $i: /" || true
done
elapsed=$(($(date +%s) - started))
python3 - "$out" "$sittings" "$elapsed" <<'PY'
import json, sys
out, sittings, elapsed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
INJECTED, ADDED = 115.0, "main.audit"
good = aa_quiet = 0
print(f"{sittings} sittings in {elapsed} s ({elapsed / sittings:.0f} s each)")
print("sitting  named       main.audit own (interval)        with callees (interval)    held 115  also named   A/A named")
for i in range(1, sittings + 1):
    gate = json.load(open(f"{out}/gate-{i}.json"))[0]
    f = gate.get("functions") or {}
    cand, ctrl = f.get("candidate"), f.get("control")
    if cand is None:
        print(f"{i:>7}  no profile in enough rounds")
        continue
    named = [c for c in cand["own"] if c["named"]]
    audit = next((c for c in named if c["name"] == ADDED), None)
    total = next((c for c in cand["total"] if c["name"] == ADDED), None)
    others = [c["name"] for c in named if c["name"] != ADDED]
    aa = [c["name"] for c in (ctrl or {}).get("own", []) if c["named"]]
    held = total is not None and total["low_us"] <= INJECTED <= total["high_us"]
    ok = audit is not None and held and not others
    good += ok
    aa_quiet += not aa
    fig = lambda c: f"{c['difference_us']:+.1f} ({c['low_us']:+.1f} to {c['high_us']:+.1f})" if c else "-"
    print(f"{i:>7}  {'yes' if audit else 'no':<10}  {fig(audit):<32} {fig(total):<26} {'yes' if held else 'no':<8}  "
          f"{','.join(others) or '-':<11} {','.join(aa) or '-'}")
print(f"main.audit named, its interval holding {INJECTED:.0f} µs, nothing else named: {good} of {sittings}; "
      f"A/A control naming nothing: {aa_quiet} of {sittings}")
PY
