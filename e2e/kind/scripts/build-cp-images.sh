#!/usr/bin/env bash
# build-cp-images.sh OUTDIR: build the images kubeadm $K8S_VERSION runs, tagged exactly as
# `kubeadm config images list` prints them, and `docker save` each into OUTDIR (for preloading into the node).
# All FROM scratch with the static binaries, except kube-proxy: it runs iptables-restore, so it sits on the
# tiny Debian rootfs $KPROXY_ROOTFS_IMAGE.
source "$(dirname "$0")/lib.sh"
need K8S_VERSION ETCD_VERSION ETCD_IMAGE_TAG COREDNS_VERSION PAUSE_IMAGE KPROXY_ROOTFS_IMAGE PAUSE_BIN
OUTDIR=$1; mkdir -p "$OUTDIR"
K8S=$CACHE_DIR/kube/k8s-$K8S_VERSION
ctx=$(mktemp -d); trap 'rm -rf "$ctx"' EXIT

# image TAG BINARY DOCKERFILE-LINES...: build TAG from a context holding BINARY.
image() {
  local tag=$1 bin=$2; shift 2
  rm -rf "${ctx:?}"/*; cp "$bin" "$ctx/"
  printf '%s\n' "$@" >"$ctx/Dockerfile"
  logged cp-image-build docker build -q -t "$tag" "$ctx"
  docker save -o "$OUTDIR/$(echo "${tag#registry.k8s.io/}" | tr '/:' '__').tar" "$tag"
  say "image $tag"
}
# kubeadm's static pod manifests give the full command (/usr/local/bin/<name>), so no entrypoint is needed.
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  image "registry.k8s.io/$c:$K8S_VERSION" "$K8S/$c" "FROM scratch" "ENV PATH=/usr/local/bin" "COPY $c /usr/local/bin/$c"
done
image "registry.k8s.io/etcd:$ETCD_IMAGE_TAG" "$CACHE_DIR/kube/etcd-$ETCD_VERSION/etcd" \
  "FROM scratch" "ENV PATH=/usr/local/bin" "COPY etcd /usr/local/bin/etcd"
# kubeadm's CoreDNS Deployment passes only args (-conf ...): the entrypoint must be coredns.
image "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" "$CACHE_DIR/kube/coredns-$COREDNS_VERSION/coredns" \
  "FROM scratch" "COPY coredns /coredns" 'ENTRYPOINT ["/coredns"]'
image "$PAUSE_IMAGE" "$PAUSE_BIN" "FROM scratch" "COPY pause /pause" "USER 65535:65535" 'ENTRYPOINT ["/pause"]'
# kube-proxy's DaemonSet runs /usr/local/bin/kube-proxy --config=...; it needs iptables-{save,restore}.
image "registry.k8s.io/kube-proxy:$K8S_VERSION" "$K8S/kube-proxy" \
  "FROM $KPROXY_ROOTFS_IMAGE" "COPY kube-proxy /usr/local/bin/kube-proxy"
