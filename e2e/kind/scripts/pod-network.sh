#!/usr/bin/env bash
# pod-network.sh: the pod network of a cluster whose shape the node image's static CNI does not fit (several
# nodes, IPv6, dual-stack). The image carries a bridge CNI for one IPv4 node (10.244.0.0/24); here, for every
# node of $CLUSTER_NAME:
#   1. the CNI conflist is rewritten with the node's own podCIDRs (one host-local range per family, a default
#      route per family); containerd reloads it on change;
#   2. a route to every other node's podCIDRs via that node's address on the docker network (same family);
# then the pods that started on the static config (CoreDNS, the storage provisioner) are recreated until none is
# left. No daemon: the routes hold for the cluster's life (kind nodes keep their docker addresses unless a
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

# Pods that got their sandbox before containerd reloaded the new conflist (CoreDNS, the storage provisioner) have
# an address from the static config: recreate them, and again any replacement that containerd, slow to notice the
# rewrite on a loaded machine, still started on the old config (seen: an IPv6-only cluster's CoreDNS with an IPv4
# address, "network is unreachable" to the API, never Ready). Done when every such pod has one address in each of
# its node's podCIDRs, whatever the time it takes; a bound says so instead of waiting for ever.
stale_pods() { # namespace/name of every scheduled non-hostNetwork pod whose addresses do not match its node's
  # podCIDRs, and waiting:NAME for one that has no address yet
  { kubectl get nodes -o json; echo; kubectl get pods -n kube-system -o json; echo; kubectl get pods -n local-path-storage -o json; } |
    python3 -c '
import ipaddress, json, sys
docs, dec, text, i = [], json.JSONDecoder(), sys.stdin.read(), 0
while i < len(text):
    if text[i].isspace(): i += 1; continue
    d, i = dec.raw_decode(text, i); docs.append(d)
cidrs = {n["metadata"]["name"]: [ipaddress.ip_network(c) for c in n["spec"].get("podCIDRs", [])] for n in docs[0]["items"]}
for p in (p for d in docs[1:] for p in d["items"]):
    spec, st = p["spec"], p.get("status", {})
    if spec.get("hostNetwork") or "nodeName" not in spec or p["metadata"].get("deletionTimestamp"): continue
    ips = [ipaddress.ip_address(a["ip"]) for a in st.get("podIPs", [])]
    if not ips: print("waiting:" + p["metadata"]["name"]); continue  # no sandbox yet: judged once it has one
    want = cidrs.get(spec["nodeName"], [])
    if len(ips) != len(want) or any(not any(ip in c for c in want) for ip in ips):
        print(p["metadata"]["namespace"] + "/" + p["metadata"]["name"])
'
}
deadline=$((SECONDS + 300))
while stale=$(stale_pods) && [ -n "$stale" ]; do
  [ $SECONDS -lt $deadline ] || { echo "pods still on the static pod network after 300s: $stale" >&2; exit 1; }
  for p in $stale; do
    case $p in waiting:*) ;; *) kubectl -n "${p%%/*}" delete pod "${p#*/}" --wait=false >/dev/null 2>&1 || true ;; esac
  done
  sleep 2
done
