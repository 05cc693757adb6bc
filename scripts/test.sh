#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, then runs the whole test suite.
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh --quick         # the unit tests and the fast integration tests
#   bash scripts/test.sh -p loadgen      # other arguments go to `cargo nextest run`
#
# Tests run optimized (--release): a load generator's timing tests measure the generator, and
# a debug build would measure the debug build. cargo-nextest runs them (.config/nextest.toml):
# tests side by side, except those that measure time, which run alone.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== %s\n' "$*"; }

quick=
if [ "${1:-}" = --quick ]; then quick=1; shift; fi

# cargo-nextest: runs the test binaries side by side and the timing tests alone; built from
# crates.io once (a few minutes), pinned.
nextest_version=0.9.151
if ! cargo nextest --version 2>/dev/null | grep -q "cargo-nextest $nextest_version"; then
  say "installing cargo-nextest $nextest_version (cargo install --locked)"
  cargo install --quiet --locked cargo-nextest --version "$nextest_version"
fi

# HdrHistogram_py: an independent implementation that reads back loadgen's HDR logs.
if ! python3 -c 'import hdrh' 2>/dev/null; then
  say "installing HdrHistogram_py (pip: hdrhistogram)"
  python3 -m pip install --quiet --disable-pip-version-check hdrhistogram
fi

# The lab's offline checks: python-hcl2 parses the Terraform, checkov reviews it, cloud-init
# validates the rendered user data, pytest runs them; kubernetes-validate checks the guns' Job.
pip_missing=()
python3 -c 'import hcl2' 2>/dev/null || pip_missing+=(python-hcl2==8.1.4)
python3 -c 'import pytest' 2>/dev/null || pip_missing+=(pytest)
python3 -c 'import yaml' 2>/dev/null || pip_missing+=(pyyaml)
command -v checkov >/dev/null || pip_missing+=(checkov==3.3.30)
command -v check-jsonschema >/dev/null || pip_missing+=(check-jsonschema==0.39.0)
# The guns' Kubernetes Job, checked against the OpenAPI schemas of Kubernetes 1.35-1.37.
kubernetes-validate --version 2>/dev/null | grep -q 1.37.0 || pip_missing+=(kubernetes-validate==1.37.0)
if [ ${#pip_missing[@]} -gt 0 ]; then
  say "installing ${pip_missing[*]} (pip)"
  python3 -m pip install --quiet --disable-pip-version-check "${pip_missing[@]}"
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

if ! command -v cloud-init >/dev/null; then
  say "installing cloud-init (for cloud-init schema)"
  apt_install cloud-init
fi
# Squid: the lab's download proxy; its rendered rules are run by the lab's tests.
if ! command -v squid >/dev/null; then
  say "installing squid (the lab's proxy rules are tested with it)"
  apt_install squid
fi
if ! command -v terraform >/dev/null; then
  echo "missing terraform: install it (https://developer.hashicorp.com/terraform/install)" >&2
  exit 1
fi

# Chromium: the report's pages are opened in a real, headless browser.
if ! command -v chromium >/dev/null; then
  say "installing Chromium (Debian's chromium package)"
  apt_install chromium
fi

# OpenSSH: in the lab's twin (as root only), the operator's namespace drives the guns' sshd.
if [ "$(id -u)" = 0 ] && { [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null; }; then
  say "installing OpenSSH (the twin's guns run sshd)"
  apt_install openssh-server openssh-client
fi

# The gun's image is built static (scripts/static-build.sh, as the Dockerfile does): musl-gcc
# and the Rust target <arch>-unknown-linux-musl; the twin starts the Kubernetes pods from it.
if ! command -v musl-gcc >/dev/null; then
  say "installing musl-tools (the gun's image is built static)"
  apt_install musl-tools
fi
musl_target=$(uname -m)-unknown-linux-musl
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/$musl_target" ]; then
  say "adding the Rust target $musl_target (rustup target add)"
  rustup target add "$musl_target"
fi

# PostgreSQL: one throwaway cluster for the whole run, on a free port; the tests make a database
# each in it. Stopped and removed on exit.
pg_bin() {
  command -v "$1" 2>/dev/null && return
  local found=(/usr/lib/postgresql/*/bin/"$1")
  [ -e "${found[0]}" ] || return 1
  printf '%s\n' "${found[@]}" | sort -V | tail -n 1
}
if [ -z "${SHOWDOWN_TEST_POSTGRES_URL:-}" ]; then
  if [ -z "$(pg_bin initdb)" ]; then
    say "installing PostgreSQL"
    apt_install postgresql
  fi
  initdb=$(pg_bin initdb); pg_ctl=$(pg_bin pg_ctl)
  pgdir=$(mktemp -d)
  as_pg=()
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres: "$pgdir"
    as_pg=(runuser -u postgres --)
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  say "starting a throwaway PostgreSQL on port $port"
  "${as_pg[@]}" "$initdb" -D "$pgdir/data" -A trust -U postgres --no-sync -E UTF8 >/dev/null
  "${as_pg[@]}" "$pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w start \
    -o "-p $port -k $pgdir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=500" >/dev/null
  trap '"${as_pg[@]}" "$pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$pgdir"' EXIT
  export SHOWDOWN_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
fi

# Toxiproxy (Shopify's, a Go module): the fault tests put it between loadgen and the target;
# curl drives its API.
if ! command -v toxiproxy-server >/dev/null; then
  say "installing toxiproxy-server (go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0)"
  gobin=$(mktemp -d)
  GOBIN=$gobin GOFLAGS=-mod=mod go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0
  bindir=/usr/local/bin
  if [ ! -w "$bindir" ]; then bindir=$HOME/.local/bin; mkdir -p "$bindir"; export PATH=$bindir:$PATH; fi
  install -m 0755 "$gobin/server" "$bindir/toxiproxy-server"
  rm -rf "$gobin"
fi
command -v curl >/dev/null || apt_install curl

# actionlint (rhysd's, a Go module): the gate's GitHub Actions workflow is checked with it.
if ! command -v actionlint >/dev/null; then
  say "installing actionlint (go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7)"
  gobin=$(mktemp -d)
  GOBIN=$gobin GOFLAGS=-mod=mod go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7
  bindir=/usr/local/bin
  if [ ! -w "$bindir" ]; then bindir=$HOME/.local/bin; mkdir -p "$bindir"; export PATH=$bindir:$PATH; fi
  install -m 0755 "$gobin/actionlint" "$bindir/actionlint"
  rm -rf "$gobin"
fi

# The targets (Node, Go, Rust): npm ci, go build, cargo build; the contract suite and the
# experiments run them.
if [ -n "$quick" ]; then
  # The quick tier: no contestant, browser, capacity search or experiment (.config/nextest.toml).
  say "cargo nextest run --workspace --release --profile quick (the quick tier)"
  cargo nextest run --workspace --release --profile quick "$@"
  exit 0
fi

# The contestants and the tests build side by side: each fills the CPU the other's serial
# stretches (a crate that others wait for, a link) leave idle.
say "building the targets (targets/build) and the tests (cargo nextest run --no-run)"
bash targets/build &
targets=$!
cargo nextest run --workspace --release --no-run "$@"
wait "$targets"
say "the Go target's own checks (go vet, go test)"
(cd targets/go && go vet ./... && go test ./...)
say "the Node target's own checks (prettier --check, node --test)"
(cd targets/node && npm run format:check && npm test)
# The report pages' script (crates/report/assets/showdown.js): its functions, its flame graph and
# a page of stand-in charts, in Node; no package needed (CI's format check and lints are Biome's).
say "the report pages' script (node --test tools/js/test)"
(cd tools/js && npm test)

say "the lab's Terraform, offline (terraform fmt, python-hcl2, checkov, cloud-init schema)"
terraform fmt -check -recursive terraform
python3 -m pytest -q terraform/tests

# The gate's CI examples (ci/), as their ecosystems check them: the schemas GitHub's and
# GitLab's CI files are published with (check-jsonschema's vendored copies), and actionlint
# (with shellcheck on its run steps) for the workflow. The example server's own checks.
say "the gate's and the nightly's CI examples (actionlint, check-jsonschema) and example server (go vet)"
actionlint ci/github/showdown-gate.yml ci/github/showdown-nightly.yml
check-jsonschema --builtin-schema vendor.github-workflows ci/github/showdown-gate.yml ci/github/showdown-nightly.yml
check-jsonschema --builtin-schema vendor.gitlab-ci ci/gitlab/showdown-gate.gitlab-ci.yml ci/gitlab/showdown-nightly.gitlab-ci.yml
(cd experiments/examples/ci/server && test -z "$(gofmt -l .)" && go vet ./...)
# The jobs' own shell, run as their runners would, with the loadgen just built, in a real git
# repository holding the example folder: real pull requests (slower: exit 4, identical: 0, not
# building: 1, noisy: 5) and five real nights, the last after a commit that slows the server.
# About 8 minutes; they measure, so nothing else runs beside them.
python3 -m pytest -q -rs ci/tests

say "cargo nextest run --workspace --release"
cargo nextest run --workspace --release "$@"

# The gun's image's root (static binaries): test_image.py runs it, the twin's pods run from it.
say "the gun's image, static (scripts/static-build.sh target/image)"
bash scripts/static-build.sh "${CARGO_TARGET_DIR:-target}/image"

# The lab's twin (network namespaces, as root): uses the release binaries the tests just built.
say "the lab's twin on one machine (pytest scripts/tests)"
command -v ip >/dev/null || apt_install iproute2
python3 -m pytest -q scripts/tests
