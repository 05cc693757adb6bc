# shellcheck shell=bash
# Sourced by the bench-*.sh scripts: the release loadgen (built when absent), a private
# directory ($out), and built-in targets started on CPU 1, each ended (its process group) with
# the script.
#
#   . "$here/bench-lib.sh"; start_target go 18480
# shellcheck disable=SC2154 # set by the script that sources this
root=$(dirname "$here")
loadgen="${CARGO_TARGET_DIR:-$root/target}/release/loadgen"
[ -x "$loadgen" ] || (cd "$root" && cargo build --release -p loadgen)
out=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT
# start_target NAME PORT: built first (a first Rust build takes minutes), then started on CPU 1
# and waited for until it answers GET /now (20 s at most).
start_target() {
  "$root/targets/build" "$1" >"$out/build-$1.log" 2>&1 || {
    echo "targets/build $1 failed: $(tail -3 "$out/build-$1.log")" >&2
    return 1
  }
  PORT=$2 taskset -c 1 setsid "$root/targets/run" "$1" >"$out/$1-$2.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$2/now" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "$1 did not answer on port $2: $(tail -3 "$out/$1-$2.log")" >&2
  return 1
}
