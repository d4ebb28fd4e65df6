# shellcheck shell=bash
# lib.sh: shared helpers for the node-image and envtest scripts (source it).
# Every pinned version comes from make/cluster.mk through the environment: scripts refuse to guess.
set -euo pipefail
KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=${ROOT:-$(cd "$KIND_DIR/../.." && pwd)}
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/hyperstatic}
LOG_DIR=$CACHE_DIR/logs
export PATH=/usr/local/go/bin:$PATH
export DOCKER_BUILDKIT=0 # the classic builder: BuildKit would try to resolve FROM scratch/local bases remotely
mkdir -p "$LOG_DIR"
# jq reads `go mod download -json` and docker's JSON; a fresh Debian may lack it
command -v jq >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; }

say() { echo "==> [$(date +%H:%M:%S)] $*"; }

# timed NAME CMD...: run CMD, print its wall time and append it to $LOG_DIR/times.txt.
timed() {
  local name=$1; shift
  local start=$SECONDS rc=0
  "$@" || rc=$?
  local line
  line=$(printf '%-34s %5ds rc=%d' "$name" $((SECONDS - start)) "$rc")
  echo "$(date -u +%FT%TZ) $line" >>"$LOG_DIR/times.txt"
  say "timing: $line"
  return $rc
}

# logged NAME CMD...: run CMD with its output in $LOG_DIR/NAME.log; show the tail when it fails.
logged() {
  local name=$1; shift
  if ! "$@" >"$LOG_DIR/$name.log" 2>&1; then
    say "$name failed; last lines of $LOG_DIR/$name.log:"
    tail -30 "$LOG_DIR/$name.log" >&2
    return 1
  fi
}

need() { local v; for v in "$@"; do [ -n "${!v:-}" ] || { echo "$v is not set (it is pinned in make/cluster.mk)" >&2; exit 2; }; done; }

# atomic install: build into a temporary directory, then rename, so an interrupted build never looks done.
publish_dir() { local tmp=$1 dst=$2; rm -rf "$dst.old"; [ ! -e "$dst" ] || mv "$dst" "$dst.old"; mv "$tmp" "$dst"; rm -rf "$dst.old"; }

# pause_key: the cache key of the pause binary, built from this repo's own source (no upstream version).
pause_key() { echo "src-$(cat "$KIND_DIR"/pause/*.go "$KIND_DIR"/pause/go.mod | sha256sum | cut -c1-12)"; }
