#!/usr/bin/env bash
# The image's root, as a directory: `loadgen` and `probe` built static (musl) for this machine's
# architecture, and the few files a container of them reads, nothing else. The Dockerfile runs
# this in its build stage and copies the directory into an empty image (FROM scratch); the suite
# runs it too, and starts the Kubernetes Job's pods from the directory it makes.
#
#   bash scripts/static-build.sh DIR
#
# DIR gets usr/local/bin/loadgen and usr/local/bin/probe (their debug information stripped,
# their symbols kept for backtraces), etc/ssl/certs/ca-certificates.crt (this machine's CA bundle,
# which rustls reads for https targets), etc/passwd and etc/group (the user showdown, uid 10001),
# and an empty tmp/. It must be empty or an earlier output of this script.
#
# Needs the Rust target <arch>-unknown-linux-musl (rustup target add <arch>-unknown-linux-musl),
# musl-gcc (Debian's musl-tools: ring's and SQLite's C), objcopy and readelf (binutils).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { printf 'static-build: %s\n' "$*" >&2; exit 1; }

if [ $# != 1 ] || [ -z "$1" ]; then die "usage: scripts/static-build.sh DIR (the image's root to make)"; fi
out=$1
target=$(uname -m)-unknown-linux-musl
user=10001
bundle=/etc/ssl/certs/ca-certificates.crt

command -v musl-gcc >/dev/null ||
  die "no musl-gcc (ring's and SQLite's C are compiled with it): apt-get install musl-tools"
[ -d "$(rustc --print sysroot)/lib/rustlib/$target" ] ||
  die "no Rust target $target: rustup target add $target"
for tool in objcopy readelf; do
  command -v "$tool" >/dev/null || die "no $tool: apt-get install binutils"
done
[ -r "$bundle" ] || die "no CA bundle at $bundle: apt-get install ca-certificates"
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ] && [ ! -e "$out/usr/local/bin/loadgen" ]; then
  die "$out is not empty and not an image root this script made: name a new or empty directory"
fi

# musl-gcc for the C of ring and SQLite, named: cc-rs looks for <arch>-linux-musl-gcc first,
# which Debian does not ship for every architecture.
export "CC_${target//-/_}=musl-gcc"
# The image's profile (Cargo.toml): release, without the debug lines stripped below. Not named
# `image`: cargo keeps a profile's build scripts in target/PROFILE, which is the suite's image root.
cargo build --profile gun-image --locked --target "$target" -p loadgen -p probe
built=${CARGO_TARGET_DIR:-target}/$target/gun-image

mkdir -p "$out/usr/local/bin" "$out/etc/ssl/certs" "$out/tmp"
for bin in loadgen probe; do
  # No program interpreter: the kernel loads it whole, with no library from the image.
  if readelf -lW "$built/$bin" | grep -q 'Requesting program interpreter'; then
    die "$built/$bin is linked dynamically: build it for $target (crt-static is that target's default)"
  fi
  objcopy --strip-debug "$built/$bin" "$out/usr/local/bin/.$bin.new"
  chmod 0755 "$out/usr/local/bin/.$bin.new"
  mv -f "$out/usr/local/bin/.$bin.new" "$out/usr/local/bin/$bin"
done
install -m 0644 "$bundle" "$out/etc/ssl/certs/ca-certificates.crt"
printf 'showdown:x:%s:%s:showdown:/tmp:/sbin/nologin\n' "$user" "$user" >"$out/etc/passwd"
printf 'showdown:x:%s:\n' "$user" >"$out/etc/group"
chmod 0644 "$out/etc/passwd" "$out/etc/group"
chmod 1777 "$out/tmp"
printf 'static-build: %s: loadgen %s, probe %s (%s, static)\n' "$out" \
  "$(du -h "$out/usr/local/bin/loadgen" | cut -f1)" "$(du -h "$out/usr/local/bin/probe" | cut -f1)" "$target"
