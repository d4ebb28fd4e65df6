#!/usr/bin/env bash
# trixie-h3-clients.sh DEST: Debian 13 (trixie), minbase, with its curl (8.14, HTTP/3 over ngtcp2 and nghttp3) and
# ngtcp2's example client, debootstrapped into DEST from the Debian mirror this machine's apt uses: HTTP/3 clients
# independent of the server's QUIC stack (quinn-proto) that Debian 12 does not ship. The clients run with
# `chroot DEST ...` (as root, as CI does); the host's loopback is theirs.
# Idempotent: a complete DEST (marked by DEST.complete) is left alone; debootstrap is installed when missing.
set -euo pipefail
DEST=${1:?usage: trixie-h3-clients.sh DEST}
PACKAGES=curl,ngtcp2-client,ca-certificates
say() { echo "==> [$(date +%H:%M:%S)] trixie-h3-clients: $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -f "$DEST.complete" ]; then
  say "$DEST is ready"
  exit 0
fi
# The mirror apt already uses (deb822 sources first, then the one-line format).
MIRROR=$(sed -n 's/^URIs: *\([^ ]*\/debian\)\/\{0,1\}$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
[ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap from Debian"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
    { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
fi
rm -rf "$DEST.tmp" "$DEST" "$DEST.complete"
mkdir -p "$(dirname "$DEST")"
start=$(date +%s)
say "debootstrap trixie (minbase + $PACKAGES) from $MIRROR"
as_root debootstrap --variant=minbase --include="$PACKAGES" trixie "$DEST.tmp" "$MIRROR" >"$DEST.log" 2>&1 ||
  { tail -20 "$DEST.log"; exit 1; }
mv "$DEST.tmp" "$DEST"
touch "$DEST.complete"
say "done in $(( $(date +%s) - start )) s, $(du -sh "$DEST" | cut -f1): $(chroot "$DEST" curl --version | head -1)"
