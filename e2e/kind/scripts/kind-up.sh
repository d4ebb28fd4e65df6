#!/usr/bin/env bash
# kind-up.sh: create (or reuse) the kind cluster $CLUSTER_NAME from $NODE_IMAGE with $KIND_CONFIG (default
# e2e/kind/kind-config.yaml), write its kubeconfig to $KUBECONFIG_PATH, and return only when it is usable: every
# node Ready, the default ServiceAccount present, and every node's Service-CIDR guard in place (IPv4 and IPv6).
# POD_NETWORK=1 (the multi-node, dual-stack and IPv6 clusters) runs scripts/pod-network.sh after creation.
source "$(dirname "$0")/lib.sh"
need KIND CLUSTER_NAME NODE_IMAGE KUBECONFIG_PATH
export KUBECONFIG=$KUBECONFIG_PATH
KIND_CONFIG=${KIND_CONFIG:-$KIND_DIR/kind-config.yaml}
mkdir -p "$(dirname "$KUBECONFIG_PATH")"
node=$CLUSTER_NAME-control-plane
kubectl() { docker exec -i "$node" kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }

if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER_NAME"; then
  say "cluster $CLUSTER_NAME exists"
  if [ "$(docker inspect -f '{{.State.Running}}' "$node" 2>/dev/null)" != true ]; then
    say "starting its stopped node container"; docker start "$node" >/dev/null
  fi
  image=$(docker inspect -f '{{.Config.Image}}' "$node")
  [ "$image" = "$NODE_IMAGE" ] || say "note: the cluster runs $image, not $NODE_IMAGE (make kind-down kind-up to switch)"
else
  # kind creates the docker network `kind` IPv6-enabled when the engine allows it, and reuses an existing one as it
  # is: an IPv6 or dual-stack cluster on an IPv4-only `kind` network would fail late and obscurely.
  if grep -Eq '^\s*ipFamily:\s*(ipv6|dual)' "$KIND_CONFIG" \
     && [ "$(docker network inspect -f '{{.EnableIPv6}}' kind 2>/dev/null || echo absent)" = false ]; then
    echo "the docker network 'kind' has no IPv6: delete it (docker network rm kind, with no kind cluster left) so kind recreates it with IPv6" >&2
    exit 1
  fi
  say "creating cluster $CLUSTER_NAME from $NODE_IMAGE"
  timed kind-create "$KIND" create cluster --name "$CLUSTER_NAME" --image "$NODE_IMAGE" \
    --config "$KIND_CONFIG" --kubeconfig "$KUBECONFIG_PATH" --wait 180s
fi
"$KIND" export kubeconfig --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_PATH" >/dev/null 2>&1

start=$SECONDS
for n in $("$KIND" get nodes --name "$CLUSTER_NAME"); do
  for c in OUTPUT FORWARD; do
    if ! docker exec "$n" iptables -C "$c" -d 10.96.0.0/12 -j REJECT \
       || ! docker exec "$n" ip6tables -C "$c" -d fd00:10:96::/64 -j REJECT; then
      echo "the Service-CIDR guard is missing from chain $c on $n: refusing to use this cluster" >&2; exit 1
    fi
  done
done
if [ "${POD_NETWORK:-0}" = 1 ]; then timed "pod-network-$CLUSTER_NAME" "$KIND_DIR/scripts/pod-network.sh"; fi
kubectl wait --for=condition=Ready node --all --timeout=180s >/dev/null
until kubectl get serviceaccount default -n default >/dev/null 2>&1; do # created asynchronously after kind returns
  [ $((SECONDS - start)) -lt 120 ] || { echo "no default ServiceAccount after 120s" >&2; exit 1; }
  sleep 1
done
kubectl -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null
say "cluster $CLUSTER_NAME ready (ready checks $((SECONDS - start))s); KUBECONFIG=$KUBECONFIG_PATH"
