#!/usr/bin/env bash
# How sensitive is a gate on capacity ([compare] with [search] rounds, docs/gate.md)? SITTINGS
# sittings, each a comparison of three of loadgen's own single-threaded targets pinned to CPU 1:
# a baseline that spends 1 ms of CPU a request (capacity about 1 / 1 ms), a candidate that
# spends 10 % more (1.1 ms: about 9 % less capacity), and the baseline's build entered again
# (the A/A control), in ROUNDS rounds of one 1-second step of each search, judged on
# capacity=5%. Counts how often the slower build is flagged (power), how often the identical
# one would be (false alarms: its ratio's interval wholly below 0.95), how often the identical
# one's interval reaches past the band (too noisy), and the minutes a sitting takes.
#
#   scripts/bench-capgate.sh [SITTINGS] [ROUNDS]     (default 12 sittings of 12 rounds: about 20 minutes)
#
# SLOWER sets the candidate's CPU a request (default 1100us); SLOWER=1050us puts it at the
# band's edge (capacity about 0.952 of the baseline's), where exit 4 is a false alarm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sittings=${1:-12}
rounds=${2:-12}
slower=${SLOWER:-1100us}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
target() {
  printf '[[target]]\nname = "%s"\ncommand = ["%s", "target", "--listen", "127.0.0.1:{port}", "--work", "%s"]\n\n' \
    "$1" "$loadgen" "$2"
}
{
  cat <<EOF
name = "capgate"
question = "Does the candidate sustain less within the SLO?"
pre_roll = "200ms"
post_roll = "200ms"

[placement]
gun_cpus = "0"
target_cpus = "1"

[search]
slo = ["p99<=20ms", "errors<=1%"]
step = "1s"
warmup = "300ms"
rounds = $rounds

[compare]
baseline = "base"
candidate = "slower"
control = "base-again"
max_regression = "capacity=5%"

[load]
path = "/"

EOF
  target base 1ms
  target slower "$slower"
  target base-again 1ms
} >"$out/capgate.toml"
echo "sitting  seconds  exit  slower ÷ base (95 %)           base-again ÷ base (95 %)"
for i in $(seq 1 "$sittings"); do
  started=$(date +%s)
  set +e
  "$loadgen" experiment run "$out/capgate.toml" --db "sqlite://$out/runs-$i.db" --no-report \
    --json "$out/gate-$i.json" >"$out/run-$i.log" 2>&1
  code=$?
  set -e
  elapsed=$(($(date +%s) - started))
  if [ ! -s "$out/gate-$i.json" ]; then
    echo "sitting $i gave no verdict (exit $code):" >&2
    tail -20 "$out/run-$i.log" >&2
    exit 1
  fi
  python3 - "$out/gate-$i.json" "$i" "$elapsed" "$code" <<'PY'
import json, sys
gate = json.load(open(sys.argv[1]))[0]["measures"][0]
def text(c):
    return f"{c['ratio']:.3f} ({c['low']:.3f}–{c['high']:.3f})" if c else "no interval"
print(f"{sys.argv[2]:>7}  {sys.argv[3]:>7}  {sys.argv[4]:>4}  {text(gate['change']):<30} {text(gate.get('control'))}")
if gate["change"] is None:
    print(f"         {gate['verdict'].get('why', '')}")
PY
done
python3 - "$out" "$sittings" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
gates = [json.load(open(f"{out}/gate-{i}.json"))[0]["measures"][0] for i in range(1, n + 1)]
down, up = 0.95, 1 / 0.95
def flagged(c): return c is not None and c["high"] < down
def noisy(c): return c is None or (c["low"] < down and c["high"] >= down) or c["high"] > up
power = sum(flagged(g["change"]) for g in gates)
false = sum(flagged(g.get("control")) for g in gates)
loose = sum(noisy(g.get("control")) for g in gates)
print(f"slower build (10 % more CPU a request) flagged: {power}/{n}")
print(f"identical build flagged: {false}/{n}; its interval past the ±5 % band (too noisy): {loose}/{n}")
PY
