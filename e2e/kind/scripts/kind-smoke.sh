#!/usr/bin/env bash
# kind-smoke.sh: prove the cluster does what the project needs, in a throw-away namespace:
#   - a Deployment + Service answers by DNS name to a Job (cluster DNS, kube-proxy, CNI);
#   - a Guaranteed pod with cpu: "1" gets an exclusive CPU (static CPU manager): Cpus_allowed_list is one CPU,
#     and a BestEffort pod's list is the shared pool, which does not contain it;
#   - no connection to the Service range left the node un-NATed (conntrack), and the guard refuses one that would.
source "$(dirname "$0")/lib.sh"
need KIND CLUSTER_NAME KUBECONFIG_PATH
export KUBECONFIG=$KUBECONFIG_PATH
NS=hyperstatic-smoke
node=$CLUSTER_NAME-control-plane
image=$(export ROOT; "$ROOT/hack/smoke-image.sh")
timed smoke-load logged smoke-load "$KIND" load docker-image "$image" --name "$CLUSTER_NAME"
kubectl() { docker exec -i "$node" kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }
cleanup() { kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT
kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
kubectl create namespace "$NS" >/dev/null
until kubectl -n "$NS" get serviceaccount default >/dev/null 2>&1; do sleep 0.5; done

# The exclusive-CPU check's node: the first worker (a node with no control-plane role), else the only node.
smoke_node=$(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' -o jsonpath='{.items[0].metadata.name}')
smoke_node=${smoke_node:-$node}
start=$SECONDS
sed -e "s#SMOKE_IMAGE#$image#g" -e "s#SMOKE_NODE#$smoke_node#g" "$KIND_DIR/smoke/manifests.yaml" | kubectl -n "$NS" apply -f - >/dev/null
kubectl -n "$NS" rollout status deploy/echo --timeout=180s >/dev/null
kubectl -n "$NS" wait --for=condition=complete job/client --timeout=180s >/dev/null \
  || { kubectl -n "$NS" logs job/client >&2; exit 1; }
say "service by DNS name: $(kubectl -n "$NS" logs job/client | grep '^OK')"
kubectl -n "$NS" wait --for=condition=Ready pod/guaranteed pod/besteffort --timeout=120s >/dev/null
say "deployment+service+job+pods ready in $((SECONDS - start))s"

qos=$(kubectl -n "$NS" get pod guaranteed -o jsonpath='{.status.qosClass}')
exclusive=$(kubectl -n "$NS" logs guaranteed | awk '/^Cpus_allowed_list/{print $2}')
shared=$(kubectl -n "$NS" logs besteffort | awk '/^Cpus_allowed_list/{print $2}')
say "guaranteed pod ($qos, cpu: 1): Cpus_allowed_list=$exclusive; besteffort pod: Cpus_allowed_list=$shared"
[ "$qos" = Guaranteed ] || { echo "guaranteed pod has QoS $qos" >&2; exit 1; }
[[ "$exclusive" =~ ^[0-9]+$ ]] || { echo "the cpu: 1 pod did not get a single exclusive CPU ($exclusive)" >&2; exit 1; }
case ",$shared," in *",$exclusive,"*) echo "CPU $exclusive is also in the shared pool ($shared)" >&2; exit 1 ;; esac

# conntrack fields: src/dst of the original direction, then src/dst of the reply. A connection to the Service
# range whose reply source is still that Service IP was never DNATed: it went out as addressed.
leaks=$(docker exec "$node" conntrack -L 2>/dev/null | awk '
  { n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^(src|dst)=/) v[++n] = substr($i, 5)
    if (v[2] ~ /^10\.(9[6-9]|10[0-9]|11[01])\./ && v[3] == v[2]) print }' || true)
[ -z "$leaks" ] || { echo "un-NATed Service-CIDR connections seen:" >&2; echo "$leaks" >&2; exit 1; }
# The guard itself (kind-up checked its rules exist, so this probe cannot leave): a Service IP nobody owns
# must be refused at once by the node, not routed out of the machine.
rc=0; docker exec "$node" curl -s -m 3 -o /dev/null http://10.96.255.254/ || rc=$?
[ "$rc" = 7 ] || { echo "a connection to an unassigned Service IP ended with curl rc=$rc, want 7 (refused by the guard)" >&2; exit 1; }
say "Service-CIDR guard refuses un-NATed traffic"
say "smoke OK"
