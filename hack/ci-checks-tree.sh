#!/usr/bin/env bash
# ci-checks-tree.sh DIR: make DIR a second working tree of this checkout, as it is now (committed, modified and new
# files that git does not ignore; deleted ones gone), with a git directory of its own.
#
# Why a second tree: CI runs the static checks and the test builds beside the e2e suite (hack/ci-beside.sh), and
# both would otherwise share one tree that neither may see change under it: `make verify-generated` rewrites the
# chart's CRDs and the deepcopy code in place (the e2e suite installs that chart and compiles that code), and
# `make kubectl` or a tool install rewrites ./bin while the e2e suite runs from it. The caches outside the tree
# (Go's build cache, cargo's build directories, ~/.cache/hyperstatic) are made to be shared.
set -euo pipefail
if [ $# != 1 ]; then echo "usage: ci-checks-tree.sh DIR" >&2; exit 2; fi
dir=$1
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir"
git clone --quiet --no-checkout "$src" "$dir"
git -C "$dir" checkout --quiet --detach "$(git -C "$src" rev-parse HEAD)"
# The working tree's own state over the commit: what is modified or new, and what is deleted.
(cd "$src" && git ls-files -z --cached --others --exclude-standard | \
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf -) | tar -C "$dir" -xf -
(cd "$src" && git ls-files -z --deleted) | (cd "$dir" && xargs -0 -r rm -f --)
echo "==> [$(date +%H:%M:%S)] checks tree: $dir ($(git -C "$dir" rev-parse --short HEAD), $(git -C "$dir" status --porcelain | wc -l) files differ from it)"
