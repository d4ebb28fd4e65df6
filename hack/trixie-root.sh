#!/usr/bin/env bash
# trixie-root.sh DEST PACKAGES: Debian 13 (trixie), minbase, with PACKAGES (comma-separated) installed, debootstrapped
# into DEST from the Debian mirror this machine's apt uses. It brings what Debian 12 does not ship: HTTP/3 clients
# independent of the server's QUIC stack (curl 8.14 over ngtcp2 and nghttp3, ngtcp2's example client; run with
# `chroot DEST ...`, the host's loopback is theirs) and an HTTP/3 peer for the benchmark (nginx 1.26, built with
# http_v3; run on the host through the tree's own dynamic loader, hsbench/trixie.py).
# Packages are installed with apt inside the tree after a policy-rc.d that forbids starting services: a package's
# postinst must not start a daemon (nginx on port 80) on the host's network from the chroot.
# Idempotent: a complete DEST (marked by DEST.complete) is left alone; debootstrap is installed when missing.
set -euo pipefail
DEST=${1:?usage: trixie-root.sh DEST PACKAGES}
PACKAGES=${2:?usage: trixie-root.sh DEST PACKAGES}
say() { echo "==> [$(date +%H:%M:%S)] trixie-root $(basename "$DEST"): $*"; }
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
say "debootstrap trixie (minbase) from $MIRROR"
as_root debootstrap --variant=minbase trixie "$DEST.tmp" "$MIRROR" >"$DEST.log" 2>&1 || { tail -20 "$DEST.log"; exit 1; }
printf '#!/bin/sh\n# trixie-root.sh: no service starts inside this tree\nexit 101\n' >"$DEST.tmp/usr/sbin/policy-rc.d"
chmod 755 "$DEST.tmp/usr/sbin/policy-rc.d"
read -ra pkgs <<<"${PACKAGES//,/ }"
say "apt-get install ${pkgs[*]} inside the tree"
{
  as_root chroot "$DEST.tmp" apt-get update -qq &&
    as_root chroot "$DEST.tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${pkgs[@]}" &&
    as_root chroot "$DEST.tmp" apt-get clean
} >>"$DEST.log" 2>&1 || { tail -20 "$DEST.log"; exit 1; }
mv "$DEST.tmp" "$DEST"
touch "$DEST.complete"
say "done in $(( $(date +%s) - start )) s, $(du -sh "$DEST" | cut -f1)"
