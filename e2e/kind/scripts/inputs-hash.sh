#!/usr/bin/env bash
# inputs-hash.sh: a short hash of everything the node image is built from (this directory's sources and the
# pinned versions passed in the environment). It names the node image tag and its cached tarball, so a change
# to any input builds a new image and an unchanged tree reuses the cache across runs and clones.
set -euo pipefail
KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$KIND_DIR"
{
  env | grep -E '^(K8S_VERSION|ETCD_VERSION|ETCD_IMAGE_TAG|COREDNS_VERSION|PAUSE_IMAGE|KIND_VERSION|DEBIAN_SUITE|NODE_PACKAGES|KPROXY_PACKAGES)=' | sort
  # only what ends up in the image: not kind-up/kind-smoke/envtest, so editing those keeps the cached image
  { find node etcd coredns pause -type f; ls scripts/lib.sh scripts/build-*.sh scripts/node-image.sh; } \
    | LC_ALL=C sort | xargs sha256sum
} | sha256sum | cut -c1-12
