#!/usr/bin/env bash
# Does a capacity comparison's interval hold on real servers? Each sitting starts two fresh
# processes of one server (the same build: an A/A comparison) on CPU 1 and compares their
# capacities with `loadgen capacity URL --against ORIGIN` (the generator on CPU 0, ROUNDS
# interleaved rounds of one 1-second step each, within p99 <= 20 ms and errors <= 1 %), for the
# built-in target (1 ms of CPU a request, the control), the Go contestant and the Node one
# (GET /compute?ms=1 each). Every sitting's ratio is appended to a file kept across runs, so the
# benchmark can run across days and its figures grow: per server, how many intervals exclude 1
# (at most 4 of 40 expected), the spread of the standardised differences sd(z) = sd(ln r ÷ se)
# (about 1 where the intervals are as wide as the ratios vary), and k̂ = sd(ln r) ÷ the median se
# (at most 0.95 claimed).
#
# Each sitting is kept as an A/A comparison (--same-build, --experiment aa-SERVER), so from the
# fourth on its interval allows for how much two processes of one build differ, read from the
# sittings kept before it in the store; the summary gives those apart from the ones read as
# measured (the first three, and every sitting kept before loadgen allowed for it), and the
# sittings widened by the spread read with each sitting weighted by its precision ("weighted",
# since 2026-12-07) apart from those widened before that ("widened").
#
# The two processes swap roles from one kept sitting of a server to the next (since 2026-12-08):
# in one the process started first is the URL searched, in the next the --against one, so that a
# difference due to which started first, or to which side of the comparison a process is on,
# cancels over the sittings; the summary gives the mean log-ratio of each order apart.
#
#   scripts/bench-aa.sh [SITTINGS] [SERVERS]   (default 2 sittings of "builtin go node": ~5 min)
#
# ROUNDS sets the rounds (16). The sittings are appended to docs/benchmarks/data/aa-sittings.jsonl,
# in the repository (commit it: a machine's home does not outlive the machine, and the earlier
# sittings were lost with one), or to BENCH_AA_SITTINGS; the searches go to BENCH_AA_DIR/store.db
# (~/.showdown/bench-aa by default).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sittings=${1:-2}
servers=${2:-"builtin go node"}
rounds=${ROUNDS:-16}
kept=${BENCH_AA_DIR:-$HOME/.showdown/bench-aa}
mkdir -p "$kept"
sittings_file=${BENCH_AA_SITTINGS:-$(dirname "$here")/docs/benchmarks/data/aa-sittings.jsonl}
mkdir -p "$(dirname "$sittings_file")"
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"

# start_two SERVER PORT1 PORT2: two fresh processes of SERVER on CPU 1, their process groups in
# pids (so run it in this shell, never in a $(…) subshell, which would lose them); sets path,
# the path to load.
start_two() {
  case $1 in
    builtin)
      for port in "$2" "$3"; do
        taskset -c 1 setsid "$loadgen" target --listen "127.0.0.1:$port" --work 1ms \
          >"$out/builtin-$port.log" 2>&1 &
        pids+=("$!")
      done
      wait_for "$2" /
      wait_for "$3" /
      path=/
      ;;
    *)
      start_target "$1" "$2"
      start_target "$1" "$3"
      path="/compute?ms=1"
      ;;
  esac
}

# wait_for PORT PATH: until the server answers (20 s at most).
wait_for() {
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$1$2" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "nothing answered on port $1" >&2
  return 1
}

# stop_all: ends this sitting's servers (their process groups).
stop_all() {
  for pid in "${pids[@]}"; do kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  pids=()
}

port=18600
for _ in $(seq 1 "$sittings"); do
  for server in $servers; do
    port=$((port + 2))
    start_two "$server" "$port" "$((port + 1))"
    # The roles alternate over the server's sittings kept so far (across runs of the script):
    # after an even number, the process started first is searched at the URL; after an odd
    # one, the process started second.
    kept_rows=$(grep -c "\"server\": \"$server\"" "$sittings_file" || true)
    searched=$port against=$((port + 1)) first=url
    if [ $((kept_rows % 2)) = 1 ]; then searched=$((port + 1)) against=$port first=against; fi
    started=$(date +%s)
    set +e
    taskset -c 0 "$loadgen" capacity "http://127.0.0.1:$searched$path" \
      --against "http://127.0.0.1:$against" --rounds "$rounds" \
      --slo 'p99<=20ms' --slo 'errors<=1%' --step 1s --warmup 300ms --start 500 \
      --same-build --experiment "aa-$server" \
      --db "sqlite://$kept/store.db" --output json >"$out/c.json" 2>"$out/c.log"
    code=$?
    set -e
    stop_all
    python3 - "$out/c.json" "$server" "$code" "$(($(date +%s) - started))" "$sittings_file" "$first" <<'PY'
import json, sys, time
path, server, code, seconds, kept, first = sys.argv[1:]
try:
    c = json.load(open(path))
    r = c["ratios"][0]
except (OSError, ValueError, KeyError, IndexError) as e:
    print(f"{server}: no comparison (exit {code}): {e}")
    sys.exit(0)
row = {"at": int(time.time()), "server": server, "rounds": c["rounds"], "ratio": r["ratio"],
       "low": r.get("low"), "high": r.get("high"), "seconds": int(seconds),
       "started_first": first}
# Whether the interval allows for the spread between processes (read from the sittings before).
spread = c.get("spread") or {}
row["spread"] = spread.get("read", "none")
if spread.get("read") == "allowed":
    row["between_sd"] = spread["between"]["sd"]
    row["between_sittings"] = spread["between"]["sittings"]
    row["between_df"] = spread["between"].get("effective", 0)
with open(kept, "a") as f:
    f.write(json.dumps(row) + "\n")
interval = f"{row['low']:.3f}–{row['high']:.3f}" if row["low"] else "no interval"
print(f"{server:<8} {row['ratio']:.3f}× ({interval}) over {row['rounds']} rounds, {seconds} s")
PY
  done
done

# Every sitting kept so far, per server.
python3 - "$sittings_file" "$here" <<'PY'
import json, math, statistics, sys
from collections import defaultdict

sys.path.insert(0, sys.argv[2])
from aa_stats import se_of  # noqa: E402


by = defaultdict(list)
for line in open(sys.argv[1]):
    row = json.loads(line)
    # As read (the processes' own interval), or widened by the spread between processes: read
    # with each sitting weighted by its precision (the rows that keep its degrees of freedom,
    # since 2026-12-07) or, before that, unweighted.
    if row.get("spread") != "allowed":
        how = "as read"
    else:
        how = "weighted" if "between_df" in row else "widened"
    by[(row["server"], how)].append(row)
print(f"\n{'server':<8} {'interval':<8} {'sittings':>8} {'no interval':>11} {'exclude 1':>9} {'sd(z)':>6} {'k̂':>6} {'median ±':>8}")
for (server, how), rows in sorted(by.items()):
    shown = [r for r in rows if r["low"] and r["high"]]
    se = [se_of(r) for r in shown]
    logs = [math.log(r["ratio"]) for r in shown]
    exclude = sum(1 for r in shown if r["low"] > 1 or r["high"] < 1)
    z = [l / s for l, s in zip(logs, se) if s > 0]
    sdz = statistics.stdev(z) if len(z) > 1 else float("nan")
    k = statistics.stdev(logs) / statistics.median(se) if len(shown) > 1 else float("nan")
    half = statistics.median([(r["high"] / r["low"]) ** 0.5 - 1 for r in shown]) if shown else float("nan")
    print(f"{server:<8} {how:<8} {len(rows):>8} {len(rows) - len(shown):>11} {exclude:>9} {sdz:>6.2f} {k:>6.2f} {half * 100:>7.1f} %")

# Which process reads higher: the mean log-ratio (URL ÷ --against) of the sittings whose URL
# was the process started first, and of those whose URL was started second (rows since the
# roles alternate; before that every URL was started first).
print(f"\n{'server':<8} {'URL started':<12} {'sittings':>8} {'mean ln r':>10} {'se':>7} {'t':>6}")
orders = defaultdict(list)
for rows in by.values():
    for r in rows:
        if r["low"] and r["high"]:  # a sitting without an interval is a search that failed
            orders[(r["server"], "second" if r.get("started_first") == "against" else "first")].append(math.log(r["ratio"]))
for (server, order), logs in sorted(orders.items()):
    mean = statistics.fmean(logs)
    se = statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else float("nan")
    print(f"{server:<8} {order:<12} {len(logs):>8} {mean * 100:>9.2f} % {se * 100:>6.2f} % {mean / se if se > 0 else float('nan'):>6.1f}")
PY
