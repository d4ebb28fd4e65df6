#!/usr/bin/env bash
# kind-up.sh: create (or reuse) the kind cluster $CLUSTER_NAME from $NODE_IMAGE with e2e/kind/kind-config.yaml,
# write its kubeconfig to $KUBECONFIG_PATH, and return only when it is usable: node Ready, the default
# ServiceAccount present, and the node's Service-CIDR guard in place.
source "$(dirname "$0")/lib.sh"
need KIND CLUSTER_NAME NODE_IMAGE KUBECONFIG_PATH
export KUBECONFIG=$KUBECONFIG_PATH
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
  say "creating cluster $CLUSTER_NAME from $NODE_IMAGE"
  timed kind-create "$KIND" create cluster --name "$CLUSTER_NAME" --image "$NODE_IMAGE" \
    --config "$KIND_DIR/kind-config.yaml" --kubeconfig "$KUBECONFIG_PATH" --wait 180s
fi
"$KIND" export kubeconfig --name "$CLUSTER_NAME" --kubeconfig "$KUBECONFIG_PATH" >/dev/null 2>&1

start=$SECONDS
for c in OUTPUT FORWARD; do
  docker exec "$node" iptables -C "$c" -d 10.96.0.0/12 -j REJECT \
    || { echo "the Service-CIDR guard is missing from chain $c on $node: refusing to use this cluster" >&2; exit 1; }
done
kubectl wait --for=condition=Ready "node/$node" --timeout=180s >/dev/null
until kubectl get serviceaccount default -n default >/dev/null 2>&1; do # created asynchronously after kind returns
  [ $((SECONDS - start)) -lt 120 ] || { echo "no default ServiceAccount after 120s" >&2; exit 1; }
  sleep 1
done
kubectl -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null
say "cluster $CLUSTER_NAME ready (ready checks $((SECONDS - start))s); KUBECONFIG=$KUBECONFIG_PATH"
