#!/usr/bin/env bash
# node-image.sh: make the kind node image $NODE_IMAGE exist in the local docker daemon, by the first way that works:
#   1. already in the daemon;
#   2. `docker load` of the tarball cached in $CACHE_DIR/node-image (keyed by version and inputs hash);
#   3. unless AIRGAPPED=1: `docker pull` of the public $PUBLIC_NODE_IMAGE (short timeout), plus the guard layer;
#   4. the air-gapped build (about 20-25 min cold on 2 cores):
#        Debian rootfs (mmdebstrap, in parallel with) the Kubernetes compile, then etcd/coredns/pause,
#        the control-plane images, the kind base image, the node image with the images preloaded.
# Then the image is saved to the cache, so the next cluster on this machine (any clone) starts in seconds.
source "$(dirname "$0")/lib.sh"
need K8S_VERSION ETCD_VERSION ETCD_IMAGE_TAG COREDNS_VERSION PAUSE_IMAGE KIND_VERSION NODE_IMAGE \
     NODE_ROOTFS_IMAGE KPROXY_ROOTFS_IMAGE
TARBALL=$CACHE_DIR/node-image/$(echo "$NODE_IMAGE" | tr '/:' '__').tar
mkdir -p "$CACHE_DIR/node-image"
T0=$SECONDS

if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then say "node image $NODE_IMAGE present"; exit 0; fi
if [ -s "$TARBALL" ]; then
  say "node image: docker load $TARBALL"
  timed node-image-load docker load -q -i "$TARBALL"
  exit 0
fi

save_tarball() {
  say "node image: saving $TARBALL"
  timed node-image-save docker save -o "$TARBALL.tmp" "$NODE_IMAGE"
  mv "$TARBALL.tmp" "$TARBALL"
  # keep only this tarball: older input hashes are dead weight (about 1 GB each)
  find "$CACHE_DIR/node-image" -name '*.tar' ! -path "$TARBALL" -delete
  # and older builds in the daemon (one still used by a cluster stays: docker refuses to remove it)
  docker images --format '{{.Repository}}:{{.Tag}}' "${NODE_IMAGE%:*}" | grep -vxF "$NODE_IMAGE" \
    | xargs -r docker rmi >/dev/null 2>&1 || true
  say "node image $NODE_IMAGE ready in $((SECONDS - T0))s"
}

ctx=$(mktemp -d); cid=hyperstatic-node-build-$$
trap 'docker rm -f "$cid" >/dev/null 2>&1 || true; rm -rf "$ctx"' EXIT

if [ "${AIRGAPPED:-0}" != 1 ] && [ -n "${PUBLIC_NODE_IMAGE:-}" ]; then
  say "node image: trying docker pull $PUBLIC_NODE_IMAGE (timeout ${PULL_TIMEOUT:-20}s)"
  if timeout "${PULL_TIMEOUT:-20}" docker pull -q "$PUBLIC_NODE_IMAGE" >/dev/null 2>&1; then
    cp -r "$KIND_DIR/node/systemd" "$ctx/"
    docker build -q --build-arg BASE="$PUBLIC_NODE_IMAGE" -f "$KIND_DIR/node/Dockerfile.guard" -t "$NODE_IMAGE" "$ctx" >/dev/null
    save_tarball
    exit 0
  fi
  say "node image: no registry reachable: building it locally (the air-gapped path)"
fi

# --- 1. binaries and rootfs. The rootfs build is network+dpkg bound, the compile CPU bound: run both at once.
say "node image: phase 1: Debian rootfs (background) + Kubernetes binaries + etcd/coredns/pause"
( timed rootfs "$KIND_DIR/scripts/build-rootfs.sh" >"$LOG_DIR/rootfs.log" 2>&1 ) & rootfs_pid=$!
timed k8s-binaries "$KIND_DIR/scripts/build-k8s.sh" \
  kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy kubeadm
timed extras "$KIND_DIR/scripts/build-extras.sh" etcd coredns pause
if ! wait "$rootfs_pid"; then cat "$LOG_DIR/rootfs.log" >&2; exit 1; fi
K8S=$CACHE_DIR/kube/k8s-$K8S_VERSION
PAUSE_BIN=$CACHE_DIR/kube/pause-$(pause_key)/pause

# kubeadm decides which images it runs: check that what we build is exactly that list.
want=$("$K8S/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | sort)
have=$(printf '%s\n' "registry.k8s.io/kube-apiserver:$K8S_VERSION" "registry.k8s.io/kube-controller-manager:$K8S_VERSION" \
  "registry.k8s.io/kube-scheduler:$K8S_VERSION" "registry.k8s.io/kube-proxy:$K8S_VERSION" \
  "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" "$PAUSE_IMAGE" "registry.k8s.io/etcd:$ETCD_IMAGE_TAG" | sort)
if [ "$want" != "$have" ]; then
  echo "kubeadm $K8S_VERSION expects other images than make/cluster.mk pins:" >&2; diff <(echo "$want") <(echo "$have") >&2; exit 1
fi

# --- 2. control-plane images, saved for preloading
say "node image: phase 2: control-plane images"
mkdir -p "$ctx/images"
timed cp-images env PAUSE_BIN="$PAUSE_BIN" "$KIND_DIR/scripts/build-cp-images.sh" "$ctx/images"

# --- 3. kind base image: kind's own base files from the kind module in the Go module cache
say "node image: phase 3: kind base image and node image"
kindsrc=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
mkdir -p "$ctx/base"; cp -r "$kindsrc/images/base/files" "$ctx/base/files"; chmod -R u+w "$ctx/base/files"
rm -rf "$ctx/base/files/LICENSES" "$ctx/base/files/usr/local/bin/clean-install"
base=hyperstatic/kind-base:$K8S_VERSION-build
timed kind-base-image logged kind-base-image docker build --build-arg ROOTFS="$NODE_ROOTFS_IMAGE" \
  --build-arg PAUSE_IMAGE="$PAUSE_IMAGE" -f "$KIND_DIR/node/Dockerfile.base" -t "$base" "$ctx/base"

# --- 4. node stage: binaries, /kind/version, CNI, the Service-CIDR guard
mkdir -p "$ctx/node/bin"
cp "$K8S/kubeadm" "$K8S/kubelet" "$K8S/kubectl" "$ctx/node/bin/"
cp -r "$KIND_DIR/node/kind" "$KIND_DIR/node/cni" "$KIND_DIR/node/systemd" "$ctx/node/"
echo "$K8S_VERSION" >"$ctx/node/kind/version"
stage=hyperstatic/kind-node-stage:$K8S_VERSION-build
timed node-stage-image logged node-stage-image docker build --build-arg BASE="$base" \
  -f "$KIND_DIR/node/Dockerfile.node" -t "$stage" "$ctx/node"

# --- 5. preload the images into the node's containerd (k8s.io namespace), as `kind build node-image` does:
# run the stage privileged, start containerd, import the content, pin it, stop, commit.
say "node image: phase 4: preloading $(find "$ctx/images" -mindepth 1 -maxdepth 1 | wc -l) images into containerd"
preload() {
  docker run -d --name "$cid" --privileged --entrypoint sleep -v "$ctx/images:/kind/images:ro" "$stage" infinity >/dev/null
  docker exec "$cid" bash -c 'nohup containerd >/tmp/containerd.log 2>&1 &'
  local i; for i in $(seq 1 100); do docker exec "$cid" ctr version >/dev/null 2>&1 && break; sleep 0.2; done
  local f
  for f in "$ctx"/images/*.tar; do
    docker exec "$cid" ctr --namespace=k8s.io images import --all-platforms --no-unpack --digests "/kind/images/$(basename "$f")"
  done
  # containerd 1.6's ctr has no `import --label`: pin afterwards so the kubelet's image GC never removes them
  for i in $(docker exec "$cid" ctr --namespace=k8s.io images list -q); do
    docker exec "$cid" ctr --namespace=k8s.io images label "$i" io.cri-containerd.pinned=pinned >/dev/null
  done
  docker exec "$cid" ctr --namespace=k8s.io images list -q | grep -v '^sha256:'
  docker exec "$cid" bash -c 'kill $(pidof containerd); sleep 1; rm -rf /tmp/* /var/log/*.log'
  # (docker 20.10 refuses --change STOPSIGNAL; the base image's STOPSIGNAL is kept by commit)
  docker commit --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' --change 'CMD []' \
    "$cid" "$NODE_IMAGE" >/dev/null
  docker rm -f "$cid" >/dev/null
}
timed preload-images logged preload-images preload
docker rmi "$stage" >/dev/null 2>&1 || true
save_tarball
