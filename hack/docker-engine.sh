#!/usr/bin/env bash
# docker-engine.sh: make sure a Docker engine answers and can run `--privileged` containers (kind's nodes).
# Idempotent: a healthy daemon that already uses the wrapper is left alone.
#
#   1. install docker.io from Debian when dockerd is missing (a docker CLI alone may sit in /usr/local/bin);
#   2. build and install runc-capfix (e2e/kind/capfix) when this host's capability bounding set lacks
#      capabilities the kernel knows: `--privileged` asks runc for all of them and runc fails without it;
#   3. register it as dockerd's default runtime in /etc/docker/daemon.json (merged into any existing file);
#   4. start dockerd in the background (log: $LOG_DIR/dockerd.log), or SIGHUP a running one so it reloads
#      the runtimes; wait until `docker info` answers;
#   5. when something changed (or CHECK=1): run a FROM scratch image holding a static Go binary with --privileged.
#
# Env: ROOT (repo root), CACHE_DIR (logs), CHECK=1 forces step 5.
set -euo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
CACHE_DIR=${CACHE_DIR:-$HOME/.cache/hyperstatic}
LOG_DIR=$CACHE_DIR/logs
WRAPPER=/usr/local/libexec/hyperstatic/runc-capfix
DAEMON_JSON=/etc/docker/daemon.json
CHECK=${CHECK:-0}
export PATH=/usr/local/go/bin:$PATH

say() { echo "==> [$(date +%H:%M:%S)] docker-engine: $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# needs_capfix: true when the bounding set lacks a capability the kernel knows (cap_last_cap).
needs_capfix() {
  local last bnd
  last=$(cat /proc/sys/kernel/cap_last_cap)
  bnd=$((16#$(awk '/^CapBnd:/{print $2}' /proc/self/status)))
  [ "$bnd" != "$(( (1 << (last + 1)) - 1 ))" ]
}

changed=0
mkdir -p "$LOG_DIR"

# 1. engine binaries
if ! command -v dockerd >/dev/null 2>&1; then
  say "dockerd missing: apt-get install docker.io"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >"$LOG_DIR/apt-docker.log" 2>&1 \
    || { cat "$LOG_DIR/apt-docker.log"; exit 1; }
  changed=1
fi
command -v jq >/dev/null 2>&1 || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null

# 2 + 3. wrapper and daemon.json
want_runtime=""
if needs_capfix; then
  want_runtime=runc-capfix
  tmp=$(mktemp)
  (cd "$ROOT/e2e/kind/capfix" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$tmp" .)
  if ! cmp -s "$tmp" "$WRAPPER"; then
    say "installing $WRAPPER"
    as_root install -D -m 0755 "$tmp" "$WRAPPER"
    changed=1
  fi
  rm -f "$tmp"
  current='{}'
  [ -s "$DAEMON_JSON" ] && current=$(cat "$DAEMON_JSON")
  desired=$(jq --arg p "$WRAPPER" '.runtimes["runc-capfix"] = {path: $p} | .["default-runtime"] = "runc-capfix"' <<<"$current")
  if [ "$(jq -S . <<<"$current")" != "$(jq -S . <<<"$desired")" ]; then
    say "registering runc-capfix as the default runtime in $DAEMON_JSON"
    as_root mkdir -p "$(dirname "$DAEMON_JSON")"
    jq . <<<"$desired" | as_root tee "$DAEMON_JSON" >/dev/null
    changed=1
  fi
fi

runtime_ok() {
  [ -z "$want_runtime" ] || [ "$(docker info --format '{{.DefaultRuntime}}' 2>/dev/null)" = "$want_runtime" ]
}

# 4. daemon
if ! docker info >/dev/null 2>&1; then
  if pgrep -x dockerd >/dev/null; then
    say "dockerd runs but does not answer yet"
  else
    say "starting dockerd (log: $LOG_DIR/dockerd.log)"
    as_root setsid nohup dockerd >>"$LOG_DIR/dockerd.log" 2>&1 </dev/null &
    changed=1
  fi
elif ! runtime_ok; then
  say "dockerd lacks the runc-capfix default runtime: SIGHUP to reload $DAEMON_JSON"
  as_root kill -HUP "$(pgrep -x dockerd | head -1)"
  changed=1
fi
# dockerd gives up when its containerd does not answer within its own timeout, which a loaded machine can exceed
# (seen here: "failed to start containerd: timeout waiting for containerd to start" while builds ran): a dockerd
# that exited while we waited is started again, up to three times in all.
starts=1
for _ in $(seq 1 240); do
  docker info >/dev/null 2>&1 && runtime_ok && break
  if [ "$changed" = 1 ] && ! pgrep -x dockerd >/dev/null && [ "$starts" -lt 3 ]; then
    starts=$((starts + 1))
    say "dockerd exited while starting (log: $LOG_DIR/dockerd.log): starting it again ($starts of 3)"
    as_root setsid nohup dockerd >>"$LOG_DIR/dockerd.log" 2>&1 </dev/null &
  fi
  sleep 0.5
done
docker info >/dev/null 2>&1 || { say "dockerd did not answer within 120 s ($starts start(s)); tail of its log:"; tail -20 "$LOG_DIR/dockerd.log"; exit 1; }
runtime_ok || { say "dockerd's default runtime is not $want_runtime after reload"; exit 1; }
say "engine $(docker version --format '{{.Server.Version}}'), default runtime $(docker info --format '{{.DefaultRuntime}}')"

# 5. privileged check with a FROM scratch image (nothing is pulled)
if [ "$changed" = 1 ] || [ "$CHECK" = 1 ]; then
  "$ROOT/hack/smoke-image.sh" >/dev/null
  out=$(docker run --rm --privileged hyperstatic/smoke:dev caps)
  grep -q '^CapEff:' <<<"$out" || { say "privileged check failed: $out"; exit 1; }
  say "docker run --privileged OK ($(grep CapEff <<<"$out" | tr -s '\t ' ' '))"
fi
