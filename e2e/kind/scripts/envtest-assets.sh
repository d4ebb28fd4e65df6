#!/usr/bin/env bash
# envtest-assets.sh: make $ENVTEST_ASSETS hold kube-apiserver, etcd and kubectl for controller-runtime's envtest.
#   1. cached from an earlier run or clone: done;
#   2. unless AIRGAPPED=1: setup-envtest (pinned, from the Go module proxy) with a short timeout, in case
#      the envtest release downloads are reachable;
#   3. else build them from the Go module proxy (the same binaries the kind node image uses).
source "$(dirname "$0")/lib.sh"
need K8S_VERSION ETCD_VERSION ENVTEST_ASSETS SETUP_ENVTEST_VERSION
BINS="kube-apiserver etcd kubectl"

complete() { local b; for b in $BINS; do [ -x "$ENVTEST_ASSETS/$b" ] || return 1; done; }
if complete; then say "envtest assets cached in $ENVTEST_ASSETS ($(cat "$ENVTEST_ASSETS/ORIGIN" 2>/dev/null))"; exit 0; fi

mkdir -p "$(dirname "$ENVTEST_ASSETS")"
tmp=$(mktemp -d "$(dirname "$ENVTEST_ASSETS")/.assets.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

try_setup_envtest() {
  local tooldir=$CACHE_DIR/tools/setup-envtest-$SETUP_ENVTEST_VERSION
  [ -x "$tooldir/setup-envtest" ] || GOBIN=$tooldir CGO_ENABLED=0 \
    go install "sigs.k8s.io/controller-runtime/tools/setup-envtest@$SETUP_ENVTEST_VERSION" || return 1
  local minor=${K8S_VERSION#v}; minor=${minor%.*}
  local dir
  dir=$(timeout "${SETUP_ENVTEST_TIMEOUT:-20}" "$tooldir/setup-envtest" use "$minor.x" \
        --bin-dir "$CACHE_DIR/envtest/setup-envtest" -p path 2>/dev/null) || return 1
  local b; for b in $BINS; do cp "$dir/$b" "$tmp/$b" || return 1; done
  echo "setup-envtest $(basename "$dir")" >"$tmp/ORIGIN"
}

if [ "${AIRGAPPED:-0}" != 1 ] && say "envtest: trying setup-envtest (timeout ${SETUP_ENVTEST_TIMEOUT:-20}s)" && try_setup_envtest; then
  say "envtest: downloaded by setup-envtest"
else
  say "envtest: no download possible: building kube-apiserver, kubectl ($K8S_VERSION) and etcd ($ETCD_VERSION) from the Go module proxy"
  timed envtest-k8s-binaries "$KIND_DIR/scripts/build-k8s.sh" kube-apiserver kubectl
  timed envtest-etcd "$KIND_DIR/scripts/build-extras.sh" etcd
  cp "$CACHE_DIR/kube/k8s-$K8S_VERSION/kube-apiserver" "$CACHE_DIR/kube/k8s-$K8S_VERSION/kubectl" "$tmp/"
  cp "$CACHE_DIR/kube/etcd-$ETCD_VERSION/etcd" "$tmp/"
  echo "built from the Go module proxy: kubernetes $K8S_VERSION, etcd $ETCD_VERSION" >"$tmp/ORIGIN"
fi
chmod 0755 "$tmp"
publish_dir "$tmp" "$ENVTEST_ASSETS"
trap - EXIT
say "envtest assets ready in $ENVTEST_ASSETS"
