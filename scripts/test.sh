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

# systemd-analyze: the probe's unit file is verified by it.
apt_updated=
apt_install() {
  if [ "$(id -u)" != 0 ]; then echo "missing $*: install it (apt-get install $*)" >&2; exit 1; fi
  [ -n "$apt_updated" ] || { apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
if ! command -v systemd-analyze >/dev/null; then
  say "installing systemd (for systemd-analyze)"
  apt_install systemd
fi

say "cargo test --workspace --release"
cargo test --workspace --release "$@"
