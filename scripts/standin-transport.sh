#!/usr/bin/env bash
# Can a transport be added as one module and one enum variant? This adds a stand-in one, as a
# user would by hand, to a scratch copy of this commit (a git worktree under a temporary
# directory; the repository's own tree is not touched): guns that are allocations of a
# Nomad-like scheduler on this machine, listed in a file (docs/examples/standin-transport/
# allocations.rs, its module). Then it checks that the copy changed only where the claim says
# (the module, the variant of order::GunHosts, the arm of fleet::backend::backend, and the
# module's declaration), and runs the module's own tests: `fleet::prepare` makes two
# allocations ready through the fleet's checks, clock and install, with nothing of the fleet
# written for it.
#
#   scripts/standin-transport.sh     (~2 min: it compiles the fleet crate and those below it)
#
# The build shares this repository's target directory (CARGO_TARGET_DIR to use another).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
tree="$scratch/tree"
cleanup() {
  git -C "$here" worktree remove --force "$tree" >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
git -C "$here" worktree add --detach --quiet "$tree" HEAD

# The module.
cp "$tree/docs/examples/standin-transport/allocations.rs" "$tree/crates/fleet/src/allocations.rs"
# Its declaration, beside the other transports'.
sed -i 's/^mod backend;$/pub mod allocations;\nmod backend;/' "$tree/crates/fleet/src/lib.rs"
# The variant.
sed -i 's|^    Kubernetes(Kubernetes),$|    Kubernetes(Kubernetes),\n    /// Allocations on this machine a file lists (NAME DIR a line).\n    Allocations { file: String },|' \
  "$tree/crates/order/src/lib.rs"
# The arm.
sed -i 's|^        order::GunHosts::Kubernetes(spec) => Box::new(crate::kubernetes::KubeBackend(spec)),$|&\n        order::GunHosts::Allocations { file } => Box::new(crate::allocations::AllocBackend { file }),|' \
  "$tree/crates/fleet/src/backend.rs"

changed=$(git -C "$tree" status --porcelain | sort)
expected=$(printf '%s\n' \
  ' M crates/fleet/src/backend.rs' \
  ' M crates/fleet/src/lib.rs' \
  ' M crates/order/src/lib.rs' \
  '?? crates/fleet/src/allocations.rs' | sort)
if [ "$changed" != "$expected" ]; then
  echo "the stand-in transport changed other files than its module, its variant, its arm and its declaration:" >&2
  echo "$changed" >&2
  exit 1
fi
lines=$(git -C "$tree" diff --numstat | awk '{ added += $1; removed += $2 } END { print added " added, " removed " removed" }')
echo "stand-in transport: a new module ($(wc -l <"$tree/crates/fleet/src/allocations.rs") lines) and, elsewhere, $lines:"
git -C "$tree" diff --unified=0 | grep '^[+-][^+-]' | sed 's/^/  /'

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
tested=$(cd "$tree" && cargo test --release --quiet -p fleet allocations:: 2>&1) || { echo "$tested" >&2; exit 1; }
echo "$tested" | tail -n 3
ran=$(echo "$tested" | sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' | head -n 1)
if [ "${ran:-0}" -lt 4 ]; then
  echo "the stand-in transport's tests did not run (${ran:-0} passed, 4 expected)" >&2
  exit 1
fi
echo "the fleet crate with the stand-in transport compiles and its $ran tests pass, nothing else of the workspace changed"
