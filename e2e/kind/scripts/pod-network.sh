#!/usr/bin/env bash
# pod-network.sh: the pod network of a cluster whose shape the node image's static CNI does not fit (several
# nodes, IPv6, dual-stack). The image carries a bridge CNI for one IPv4 node (10.244.0.0/24); here, for every
# node of $CLUSTER_NAME:
#   1. the CNI conflist is rewritten with the node's own podCIDRs (one host-local range per family, a default
#      route per family); containerd reloads it on change;
#   2. a route to every other node's podCIDRs via that node's address on the docker network (same family);
# then the pods that started on the static config before the rewrite (CoreDNS, the storage provisioner) are
# recreated. No daemon: the routes hold for the cluster's life (kind nodes keep their docker addresses unless a
# stopped node container is started again, and then `make kind-up-*` runs this again).
source "$(dirname "$0")/lib.sh"
need CLUSTER_NAME KIND
cp=$CLUSTER_NAME-control-plane
kubectl() { docker exec -i "$cp" kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }

nodes=$("$KIND" get nodes --name "$CLUSTER_NAME")
declare -A cidrs ips
start=$SECONDS
for n in $nodes; do
  until c=$(kubectl get node "$n" -o jsonpath='{.spec.podCIDRs[*]}' 2>/dev/null) && [ -n "$c" ]; do
    [ $((SECONDS - start)) -lt 120 ] || { echo "node $n has no podCIDRs after 120s" >&2; exit 1; }
    sleep 1
  done
  cidrs[$n]=$c
  ips[$n]=$(kubectl get node "$n" -o jsonpath='{range .status.addresses[?(@.type=="InternalIP")]}{.address} {end}')
done

family() { case $1 in *:*) echo 6 ;; *) echo 4 ;; esac; }

conflist() { # conflist CIDR...: the bridge CNI for these pod subnets
  local ranges="" routes="" c
  for c in "$@"; do
    ranges+="${ranges:+, }[{ \"subnet\": \"$c\" }]"
    if [ "$(family "$c")" = 6 ]; then routes+="${routes:+, }{ \"dst\": \"::/0\" }"; else routes+="${routes:+, }{ \"dst\": \"0.0.0.0/0\" }"; fi
  done
  cat <<JSON
{
  "cniVersion": "0.4.0",
  "name": "kindbridge",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "forceAddress": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [$ranges],
        "routes": [$routes]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON
}

for n in $nodes; do
  # shellcheck disable=SC2086 # word splitting intended: one argument per CIDR
  conflist ${cidrs[$n]} | docker exec -i "$n" sh -c 'cat >/etc/cni/net.d/.kindbridge.tmp && mv /etc/cni/net.d/.kindbridge.tmp /etc/cni/net.d/10-kindbridge.conflist'
  for m in $nodes; do
    [ "$m" != "$n" ] || continue
    for c in ${cidrs[$m]}; do
      f=$(family "$c"); via=""
      for ip in ${ips[$m]}; do [ "$(family "$ip")" = "$f" ] && via=$ip; done
      [ -n "$via" ] || { echo "node $m has no IPv$f address for its podCIDR $c" >&2; exit 1; }
      docker exec "$n" ip -"$f" route replace "$c" via "$via"
    done
  done
  say "pod network on $n: ${cidrs[$n]} (node ${ips[$n]})"
done

# Pods created before the rewrite have addresses from the static config: recreate them.
for ns in kube-system local-path-storage; do
  kubectl -n "$ns" get pods -o jsonpath='{range .items[*]}{.metadata.name} {.spec.hostNetwork}{"\n"}{end}' 2>/dev/null \
    | awk '$2 != "true" {print $1}' | while read -r pod; do kubectl -n "$ns" delete pod "$pod" --wait=false >/dev/null; done
done
