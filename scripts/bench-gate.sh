#!/usr/bin/env bash
# How sensitive is the gate ([compare], docs/gate.md)? One long sitting of the example's Go
# server (experiments/examples/ci/server): a baseline spinning 1 ms a request, a candidate
# spending 10 % more CPU a request (1 ms, then 0.115 ms in main.audit; net/http's own share
# counted), and the baseline's build entered again (the A/A control), in ROUNDS interleaved
# rounds of DURATION at 500 req/s,
# each run a fresh process. Then every block of R consecutive rounds (R = 3, 4, 5, 6, 8, 12) is
# judged as a gate of its own would be, for CPU per request within 5 %: how often the slower
# build is flagged (power), how often the identical one is (false alarms), and the minutes a
# gate of R rounds takes; and, for the identical build, how often the default gate (CPU and
# RSS within 5 %) would have said "too noisy" (exit 5). The per-round noise gives the power of
# R rounds in theory too (Student's t, non-central by the measured effect).
#
#   scripts/bench-gate.sh [ROUNDS] [DURATION]     (default 48 rounds of 3s: about 20 minutes)
#   KEEP=gate.json scripts/bench-gate.sh          (the sitting's gate kept, as JSON)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-48}
duration=${2:-3s}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
server="$root/experiments/examples/ci/server"
sed -e "s/^repetitions = .*/repetitions = $rounds/" \
  -e "s/^duration = .*/duration = \"$duration\"/" \
  -e "s|^cwd = \"server\"|cwd = \"$server\"|" \
  -e "s/^max_regression = .*/max_regression = \"cpu=5%\"/" \
  "$root/experiments/examples/ci/gate.toml" >"$out/gate.toml"
started=$(date +%s)
set +e
"$loadgen" experiment run "$out/gate.toml" --db "sqlite://$out/runs.db" --no-report \
  --json "$out/gate.json" >"$out/run.log" 2>&1
code=$?
set -e
elapsed=$(($(date +%s) - started))
if [ -n "${KEEP:-}" ] && [ -s "$out/gate.json" ]; then cp "$out/gate.json" "$KEEP"; fi
if [ ! -s "$out/gate.json" ]; then
  echo "the comparison gave no verdict (exit $code):" >&2
  tail -20 "$out/run.log" >&2
  exit 1
fi
grep -A6 '^regression\|^pass\|^inconclusive' "$out/run.log" || true
python3 - "$out/gate.json" "$rounds" "$elapsed" <<'PY'
import json, math, sys
gates = json.load(open(sys.argv[1]))
rounds, elapsed = int(sys.argv[2]), int(sys.argv[3])
cpu = next(m for m in gates[0]["measures"] if m["measure"] == "cpu")
rss = next(m for m in gates[0]["measures"] if m["measure"] == "rss")
ab = [math.log(r) for r in cpu["ratios"]]
aa = [math.log(r) for r in cpu["control_ratios"]]
aa_rss = [math.log(r) for r in rss["control_ratios"]]
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201]
def t975(df): return T975[df - 1] if df <= len(T975) else 1.96
def flagged(logs, allowed=0.05):
    n = len(logs); m = sum(logs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1))
    return math.exp(m - t975(n - 1) * sd / math.sqrt(n)) > 1 + allowed
def interval(logs):
    n = len(logs); m = sum(logs) / n
    half = t975(n - 1) * math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1)) / math.sqrt(n)
    return math.exp(m - half), math.exp(m + half)
def undecided(logs, allowed=0.05):
    low, high = interval(logs)
    return low <= 1 + allowed and (high > 1 + allowed or low < 1 / (1 + allowed))
def sd(logs):
    m = sum(logs) / len(logs); return math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1))
per_round = elapsed / rounds
print(f"{rounds} rounds in {elapsed} s ({per_round:.1f} s a round of 3 builds); "
      f"CPU per request: candidate/baseline {cpu['change']['ratio']:.3f}, "
      f"per-round sd {sd(ab)*100:.2f} % (A/B), {sd(aa)*100:.2f} % (A/A)")
print("R  blocks  slower flagged  identical flagged  identical too noisy (cpu, rss)  minutes a gate of R rounds (2 builds)")
for r in (3, 4, 5, 6, 8, 12):
    blocks = len(ab) // r
    if blocks == 0:
        continue
    hits = sum(flagged(ab[i*r:(i+1)*r]) for i in range(blocks))
    false = sum(flagged(aa[i*r:(i+1)*r]) for i in range(blocks))
    noisy = sum(undecided(aa[i*r:(i+1)*r]) or undecided(aa_rss[i*r:(i+1)*r]) for i in range(blocks))
    print(f"{r:<2} {blocks:>6}  {hits:>6}/{blocks:<8} {false:>6}/{blocks:<10} {noisy:>6}/{blocks:<22} {r*per_round*2/3/60:.1f}")
PY
