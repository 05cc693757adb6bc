#!/usr/bin/env bash
# Does a gate read after every round (`[compare] rounds = "auto"`, docs/gate.md) decide on a
# real server with a database, and keep its error rates? The write-up's Go server
# (targets/go, POST /users: one row inserted in a throwaway PostgreSQL) against a candidate
# that stores each password hashed with SHA-256 HASHES times: SITTINGS sittings of each
# condition, each a fresh `experiment run` (every run a fresh process, the database emptied
# before the rounds), CPU per request gated at 5 %, at most MAX rounds within BUDGET.
#
#   scripts/bench-gate-auto.sh [SITTINGS] [CONDITIONS]      (default 20 "slower identical edge")
#   SLOWER=130 EDGE=65 MAX=40 BUDGET=15m RATE=400 DURATION=4s WARMUP=3s scripts/bench-gate-auto.sh 3 slower
#   KEEP=~/gate-auto scripts/bench-gate-auto.sh 20 identical   (the store, verdicts and logs kept
#                                                               there, sittings added across days)
#   ROUNDS=10 PROCESSES=kept DB_CPUS=0 scripts/bench-gate-auto.sh 1 identical
#                  (the levers on the rounds' spread: ROUNDS fixed rounds read once, not "auto",
#                   and the marks not judged; PROCESSES fresh or kept; DB_CPUS where the
#                   throwaway PostgreSQL runs, by default with the servers on CPU 1)
#   CANARY=1 ROUNDS=10 scripts/bench-gate-auto.sh 1 "identical slower"
#                  (`probe canary` beside every sitting on the servers' CPU: each sitting also
#                   prints its ratios referenced to the host's cost of a wake-up,
#                   scripts/canary_ref.py)
#
# Prints each sitting (exit code, rounds, minutes, the ratio read) and, per condition, the exits
# and the median time; then holds them to issue 76's marks, scaled to the sittings run: the
# slower build exits 4 in ≥ 90 %, the identical one exits 4 in ≤ 5 % and 0 in ≥ 75 %, the
# edge build exits 4 in ≤ 5 % (each as an exact binomial acceptance: a count the mark's rate
# would give less than 5 % of the time fails). Exits 1 when a mark is missed. The pooled ratio
# of every round of a condition is the truth its sittings are held to (tune SLOWER to 1.10 and
# EDGE to 1.05 from it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sittings=${1:-20}
conditions=${2:-slower identical edge}
slower=${SLOWER:-130}
edge=${EDGE:-65}
max=${MAX:-40}
budget=${BUDGET:-15m}
rate=${RATE:-400}
duration=${DURATION:-4s}
warmup=${WARMUP:-3s}
rounds=${ROUNDS:-}
processes=${PROCESSES:-fresh}
# The servers' CPU (the canary's too); the generator's is the other.
servers_cpu=1
db_cpus=${DB_CPUS:-$servers_cpu}
canary=${CANARY:-0}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
probe="$(dirname "$loadgen")/probe"
# Built whenever the canary runs (nothing to do when up to date): an older probe has no canary.
if [ "$canary" = 1 ]; then (cd "$root" && cargo build --release -p probe); fi
# Where the sittings are kept: the private directory (removed at the end) unless KEEP names one.
keep=${KEEP:-$out}
mkdir -p "$keep"

# source DIR HASHES: a copy of the Go contestant whose POST /users stores the password hashed
# HASHES times (0: the contestant as it is).
source_copy() {
  mkdir -p "$1"
  (cd "$root/targets/go" && cp ./*.go go.mod go.sum "$1/")
  rm -f "$1"/*_test.go
  if [ "$2" -gt 0 ]; then
    cat >"$1/hash.go" <<EOF
package main

import (
	"crypto/sha256"
	"encoding/hex"
)

// hashPassword is the candidate's change: the password stored as SHA-256 applied $2 times.
func hashPassword(password string) string {
	sum := []byte(password)
	for i := 0; i < $2; i++ {
		next := sha256.Sum256(sum)
		sum = next[:]
	}
	return hex.EncodeToString(sum)
}
EOF
    sed -i 's/a\.db\.insertUser(r\.Context(), email, password)/a.db.insertUser(r.Context(), email, hashPassword(password))/' \
      "$1/handlers.go"
    grep -q 'hashPassword(password)' "$1/handlers.go" || {
      echo "targets/go/handlers.go no longer calls a.db.insertUser(r.Context(), email, password): update this script" >&2
      exit 1
    }
  fi
}

# target NAME DIR: a [[target]] table for the Go server built in DIR.
target() {
  cat <<EOF
[[target]]
name = "$1"
cwd = "$2"
build = ["go", "build", "-o", "server", "."]
command = ["./server"]
env = { PORT = "{port}" }
ready = "/healthz"
EOF
}

# file CONDITION: the experiment file of one condition's sittings.
file() {
  local candidate
  case "$1" in
    slower) candidate="$out/slower" ;;
    edge) candidate="$out/edge" ;;
    identical) candidate="$out/base" ;;
  esac
  local read_after="rounds = \"auto\"
max_rounds = $max
budget = \"$budget\""
  if [ -n "$rounds" ]; then read_after=""; fi
  cat <<EOF
name = "gate-auto-$1"
question = "Did the candidate make POST /users hungrier than the baseline?"
repetitions = ${rounds:-1}
warmup = "$warmup"
pre_roll = "200ms"
post_roll = "200ms"

[placement]
gun_cpus = "0"
target_cpus = "$servers_cpu"

[database]
schema = "schema.sql"
pool = 20
cpus = "$db_cpus"

[compare]
baseline = "base"
candidate = "pr"
max_regression = "cpu=5%"
processes = "$processes"
$read_after

$(target base "$out/base")

$(target pr "$candidate")

[load]
method = "POST"
path = "/users"
headers = { "Content-Type" = "application/json" }
body = '{"email":"user{{seq}}@example.com","password":"{{hex:40}}"}'
rate = $rate
duration = "$duration"
timeout = "5s"
EOF
}

cp "$root/targets/schema.sql" "$out/schema.sql"
source_copy "$out/base" 0
source_copy "$out/slower" "$slower"
source_copy "$out/edge" "$edge"
# The levers set, kept with each sitting so that a KEEP directory's figures are told apart.
levers="ROUNDS=${rounds:-auto} PROCESSES=$processes DB_CPUS=$db_cpus RATE=$rate DURATION=$duration WARMUP=$warmup CANARY=$canary"
if [ -n "$rounds" ]; then read_as="$rounds rounds read once"; else read_as="at most $max rounds in $budget"; fi
echo "$sittings sittings of: $conditions (slower: $slower hashes, edge: $edge; $rate req/s, runs of $duration, $read_as)"
touch "$keep/results.tsv"
for condition in $conditions; do
  file "$condition" >"$out/$condition.toml"
  first=$(($(awk -F'\t' -v c="$condition" '$1 == c' "$keep/results.tsv" | wc -l) + 1))
  for sitting in $(seq "$first" $((first + sittings - 1))); do
    started=$(date +%s)
    if [ "$canary" = 1 ]; then
      taskset -c "$servers_cpu" "$probe" canary --duration 2h \
        >"$keep/canary-$condition-$sitting.jsonl" 2>"$keep/canary-$condition-$sitting.log" &
      canary_pid=$!
      pids+=("$canary_pid") # ended with the script, whatever ends it
    fi
    set +e
    "$loadgen" experiment run "$out/$condition.toml" --db "sqlite://$keep/runs.db" --no-report \
      --again --json "$keep/$condition-$sitting.json" >"$keep/$condition-$sitting.log" 2>&1
    code=$?
    set -e
    if [ "$canary" = 1 ]; then
      kill "$canary_pid" 2>/dev/null || true
      wait "$canary_pid" 2>/dev/null || true
    fi
    took=$(($(date +%s) - started))
    if [ ! -s "$keep/$condition-$sitting.json" ]; then
      echo "$condition, sitting $sitting: no verdict (exit $code):" >&2
      tail -15 "$keep/$condition-$sitting.log" >&2
      exit 1
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$condition" "$sitting" "$code" "$took" "$keep/$condition-$sitting.json" "$levers" >>"$keep/results.tsv"
    python3 - "$condition" "$sitting" "$code" "$took" "$keep/$condition-$sitting.json" <<'PY'
import json, math, statistics, sys
condition, sitting, code, took, path = sys.argv[1:]
cpu = next(m for m in json.load(open(path))[0]["measures"] if m["measure"] == "cpu")
change = cpu.get("change") or {}
logs = [math.log(r) for r in cpu["ratios"] if r > 0]
sd = statistics.stdev(logs) * 100 if len(logs) > 1 else float("nan")
print(f"{condition:<9} sitting {sitting:>2}: exit {code}, {len(cpu['ratios']):>2} rounds, "
      f"{int(took) / 60:4.1f} min, CPU per request {change.get('ratio', float('nan')):.3f} "
      f"({change.get('low', float('nan')):.3f}–{change.get('high', float('nan')):.3f}), "
      f"per-round sd {sd:.1f} %", flush=True)
PY
    if [ "$canary" = 1 ]; then
      python3 "$here/canary_ref.py" "$keep/$condition-$sitting.json" "$keep/runs.db" \
        "$keep/canary-$condition-$sitting.jsonl" "$started" "$(date +%s)" "$duration" ||
        echo "  the canary: no reading ($(tail -1 "$keep/canary-$condition-$sitting.log"))" >&2
    fi
  done
done
FIXED="$rounds" python3 - "$keep/results.tsv" <<'PY'
import json, math, os, statistics, sys
DEFAULT_LEVERS = "ROUNDS=auto PROCESSES=fresh DB_CPUS=1 RATE=400 DURATION=4s WARMUP=3s CANARY=0"
from collections import defaultdict
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
by = defaultdict(list)
for row in rows:
    # Rows since 2026-12-08 carry the levers they ran with; those before, the defaults.
    condition, sitting, code, took, path = row[:5]
    if len(row) > 5 and row[5] != DEFAULT_LEVERS:
        condition = f"{condition} [{row[5]}]"
    cpu = next(m for m in json.load(open(path))[0]["measures"] if m["measure"] == "cpu")
    by[condition].append((int(code), int(took), [math.log(r) for r in cpu["ratios"] if r > 0]))

def binom_cdf(k, n, p):
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))

def at_least(count, n, rate):
    """The count passes a mark "at least rate": fails only below what rate gives 95 % of the time."""
    return binom_cdf(count - 1, n, rate) < 0.95 if count > 0 else binom_cdf(0, n, rate) >= 0.05

def at_most(count, n, rate):
    return 1 - binom_cdf(count - 1, n, rate) >= 0.05 if count > 0 else True

failed = []
for condition, sittings in by.items():
    n = len(sittings)
    exits = defaultdict(int)
    for code, _, _ in sittings:
        exits[code] += 1
    logs = [x for _, _, xs in sittings for x in xs]
    pooled = math.exp(sum(logs) / len(logs))
    sd = statistics.stdev(logs) if len(logs) > 1 else float("nan")
    minutes = statistics.median(t for _, t, _ in sittings) / 60
    rounds = statistics.median(len(xs) for _, _, xs in sittings)
    print(f"{condition}: {n} sittings, exits " + ", ".join(f"{c}: {k}" for c, k in sorted(exits.items()))
          + f"; median {minutes:.1f} min and {rounds:g} rounds; pooled ratio {pooled:.3f} over "
          f"{len(logs)} rounds, per-round sd {sd * 100:.1f} %")
    if os.environ.get("FIXED"):
        continue  # fixed rounds, read once: a lever's spread, not the gate's marks
    if condition == "slower" and not at_least(exits[4], n, 0.90):
        failed.append(f"the slower build exited 4 in {exits[4]} of {n} (mark: 90 %)")
    if condition == "identical":
        if not at_most(exits[4], n, 0.05):
            failed.append(f"the identical build exited 4 in {exits[4]} of {n} (mark: at most 5 %)")
        if not at_least(exits[0], n, 0.75):
            failed.append(f"the identical build passed in {exits[0]} of {n} (mark: 75 %)")
    if condition == "edge" and not at_most(exits[4], n, 0.05):
        failed.append(f"the edge build exited 4 in {exits[4]} of {n} (mark: at most 5 %)")
for f in failed:
    print("MISSED:", f)
sys.exit(1 if failed else 0)
PY
