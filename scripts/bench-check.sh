#!/usr/bin/env bash
# A capacity search of one built-in target and its calibration check, as
# docs/benchmarks/capacity.md ("The calibration check") reports them: the target on CPU 1, the
# generator on CPU 0, GET /now, p99 <= 10 ms, steps of 2 s after 300 ms, a 2-minute budget, then
# BLOCKS blocks (default 30) of one step at each of the ends of C_0.5's interval and C_0.75,
# C_0.5 and C_0.25 of its curve, then the search again. Prints the figure and the check.
#
#   scripts/bench-check.sh node        (or go, rust, builtin; about 15 minutes at 30 blocks)
#   scripts/bench-check.sh builtin 30  # the built-in target, 1 ms of CPU a request
#   SLO='p99<=1ms' scripts/bench-check.sh node   # another latency bound (default p99<=10ms)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
name=${1:?give a target: builtin, go, node or rust}
blocks=${2:-30}
port=${PORT:-18490}
# shellcheck source=scripts/bench-lib.sh
. "$here/bench-lib.sh"
if [ "$name" = builtin ]; then
  url="http://127.0.0.1:$port/"
  taskset -c 1 setsid "$loadgen" target --work 1ms --listen "127.0.0.1:$port" </dev/null >"$out/target.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 50); do curl -fsS "$url" >/dev/null 2>&1 && break; sleep 0.2; done
else
  start_target "$name" "$port"
  url="http://127.0.0.1:$port/now"
fi
start=$(date +%s)
taskset -c 0 "$loadgen" capacity "$url" --no-store --slo "${SLO:-p99<=10ms}" \
  --step 2s --warmup 300ms --budget 2m --check "$blocks" >"$out/check.txt" 2>"$out/check.log"
sed -n '1p;/^Calibration check/,/searched again/p' "$out/check.txt"
echo "$name: $(( ($(date +%s) - start) / 60 )) min"
