#!/usr/bin/env bash
# python-docs.sh DEST: the project's real-site content — the Python 3.11 documentation as Debian ships it
# (package python3.11-doc, HTML under /usr/share/doc/python3.11/html: about 1,065 files, 67 MB) — copied to DEST
# as a plain tree. The package's HTML links some assets into /usr/share/javascript; `cp -L` copies what the links
# point to, so DEST holds real files a container image or a projected volume can carry.
# Idempotent: installs the package only when missing, and leaves a complete DEST (marked by DEST.complete, outside
# the tree so it is never served) alone.
set -euo pipefail
DEST=${1:?usage: python-docs.sh DEST}
SRC=/usr/share/doc/python3.11/html
say() { echo "==> [$(date +%H:%M:%S)] python-docs: $*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -f "$DEST.complete" ]; then
  say "$DEST is ready ($(du -sh "$DEST" | cut -f1))"
  exit 0
fi
if [ ! -f "$SRC/index.html" ]; then
  say "installing python3.11-doc from Debian"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11-doc >/dev/null
fi
rm -rf "$DEST" "$DEST.tmp" "$DEST.complete"
mkdir -p "$(dirname "$DEST")"
cp -rL "$SRC" "$DEST.tmp"
mv "$DEST.tmp" "$DEST"
touch "$DEST.complete"
say "copied $(find "$DEST" -type f | wc -l) files, $(du -sh "$DEST" | cut -f1), to $DEST"
