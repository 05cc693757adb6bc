#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, then runs the whole test suite.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -p loadgen # arguments go to `cargo test`
#
# Tests run optimized (--release): a load generator's timing tests measure the generator, and
# a debug build would measure the debug build.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== %s\n' "$*"; }

# HdrHistogram_py: an independent implementation that reads back loadgen's HDR logs.
if ! python3 -c 'import hdrh' 2>/dev/null; then
  say "installing HdrHistogram_py (pip: hdrhistogram)"
  python3 -m pip install --quiet --disable-pip-version-check hdrhistogram
fi

say "cargo test --workspace --release"
cargo test --workspace --release "$@"
