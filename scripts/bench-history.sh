#!/usr/bin/env bash
# A history measured on this machine (docs/history.md): SITTINGS sittings of the nightly
# example (experiments/examples/nightly: the gate example's Go server, its A/A twin, and the
# spin, chase and syscall references, all on CPU 1), one after another, each `--again`. The
# server's build changes twice at known sittings: its WORK goes from 1 ms to 1.08 ms after the
# first third (a regression), then to 1.029 ms after the second (an improvement of 5 %); the
# twin never changes. Then `loadgen history` judges the sittings, raw and with the references,
# and the script prints each series' spread from sitting to sitting, raw against divided.
#
#   scripts/bench-history.sh [SITTINGS] [SCALE]   (default 12 sittings at scale 0.3: about 12 minutes)
#   KEEP=history.db scripts/bench-history.sh      (the store kept)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sittings=${1:-12}
scale=${2:-0.3}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
server="$root/experiments/examples/gate/server"
PATH="$(dirname "$loadgen"):$PATH"
export PATH
db="sqlite://$out/runs.db"
third=$((sittings / 3))
started=$(date +%s)
for i in $(seq 1 "$sittings"); do
  if [ "$i" -le "$third" ]; then work=1ms; elif [ "$i" -le $((2 * third)) ]; then work=1080us; else work=1029us; fi
  # The server's WORK is its build here; its twin keeps 1 ms throughout.
  awk -v work="$work" -v server="$server" '
    /^name = "server"$/ { mine = 1 } /^name = "server-again"$/ { mine = 0 }
    /^cwd = / { print "cwd = \"" server "\""; next }
    /^env = / && mine { print "env = { WORK = \"" work "\" }"; next }
    { print }' "$root/experiments/examples/nightly/nightly.toml" |
    sed -e 's/^name = "nightly-example"/name = "nightly-bench"/' >"$out/nightly.toml"
  "$loadgen" experiment run "$out/nightly.toml" --again --scale "$scale" --no-report --db "$db" \
    >"$out/sitting-$i.log" 2>&1 || {
    echo "sitting $i failed:" >&2
    tail -5 "$out/sitting-$i.log" >&2
    exit 1
  }
  echo "sitting $i of $sittings: server WORK=$work, $(tail -1 "$out/sitting-$i.log")"
done
echo "$sittings sittings in $(($(date +%s) - started)) s; the server changed after sittings $third and $((2 * third))"
echo
echo "== raw figures"
"$loadgen" history --db "$db" --experiment nightly-bench | grep -A4 -E "^(server|server-again): CPU per request" || true
echo
echo "== divided by the references"
"$loadgen" history --db "$db" --experiment nightly-bench --reference spin --reference chase --reference syscall |
  grep -A4 -E "^(server|server-again)( ÷ [a-z]+)?: CPU per request" || true
"$loadgen" history --db "$db" --experiment nightly-bench --reference spin --reference chase --reference syscall \
  --output json >"$out/history.json"
python3 - "$out/history.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
print()
print("== spread from sitting to sitting (von Neumann, of the logarithm), CPU per request")
for s in h["series"]:
    k = s["key"]
    if k["measure"] != "cpu":
        continue
    n = s.get("normalised")
    if n is None:
        continue
    raw = n.get("raw_spread")
    spreads = ", ".join(f"{r} {v*100:.2f} %" for r, v in n["spreads"])
    ratio = ""
    if n.get("reference") and raw:
        best = dict(n["spreads"])[n["reference"]]
        ratio = f"; divided ÷ raw = {best/raw:.2f}"
    print(f"{k['target']}: raw {raw*100:.2f} %; {spreads}{ratio}")
PY
if [ -n "${KEEP:-}" ]; then cp "$out/runs.db" "$KEEP"; fi
