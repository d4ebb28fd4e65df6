#!/usr/bin/env bash
# build-rootfs.sh: the two Debian root filesystems the images start from, built by mmdebstrap from Debian's apt
# mirror (no container registry) and imported into docker:
#   $NODE_ROOTFS_IMAGE    node OS: systemd, containerd, runc, CNI plugins, iptables, ... (kind's base image needs)
#   $KPROXY_ROOTFS_IMAGE  the smallest rootfs with iptables/nftables/conntrack, for the kube-proxy image
# Each tarball is cached in $CACHE_DIR/rootfs under a name keyed by suite and package list; the image tags
# carry the same key, so a package change rebuilds and an unchanged list reuses the cache.
source "$(dirname "$0")/lib.sh"
need DEBIAN_SUITE NODE_ROOTFS_IMAGE KPROXY_ROOTFS_IMAGE NODE_PACKAGES KPROXY_PACKAGES
mkdir -p "$CACHE_DIR/rootfs"

if ! command -v mmdebstrap >/dev/null; then
  say "installing mmdebstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
fi

mirrors=(
  "deb http://deb.debian.org/debian $DEBIAN_SUITE main"
  "deb http://deb.debian.org/debian $DEBIAN_SUITE-updates main"
  "deb http://deb.debian.org/debian-security $DEBIAN_SUITE-security main"
)
slim=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
      --dpkgopt='path-exclude=/usr/share/info/*')

# rootfs IMAGE VARIANT PACKAGES
rootfs() {
  local image=$1 variant=$2 packages=$3
  if docker image inspect "$image" >/dev/null 2>&1; then say "rootfs $image present"; return; fi
  local tar
  tar=$CACHE_DIR/rootfs/$(echo "$image" | tr '/:' '__').tar
  if [ ! -s "$tar" ]; then
    say "rootfs $image: mmdebstrap --variant=$variant ($DEBIAN_SUITE) (log: $LOG_DIR/rootfs-$variant.log)"
    # The hook is a shell snippet mmdebstrap runs with $1 = the new root: it must reach it unexpanded.
    # shellcheck disable=SC2016
    logged "rootfs-$variant" mmdebstrap --format=tar --variant="$variant" --include="$packages" "${slim[@]}" \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/lib/dpkg/*-old' \
      "$DEBIAN_SUITE" "$tar.tmp" "${mirrors[@]}"
    mv "$tar.tmp" "$tar"
  fi
  say "rootfs $image: docker import"
  docker import "$tar" "$image" >/dev/null
}

rootfs "$NODE_ROOTFS_IMAGE" minbase "$NODE_PACKAGES"
rootfs "$KPROXY_ROOTFS_IMAGE" essential "$KPROXY_PACKAGES"
