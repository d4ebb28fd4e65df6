#!/usr/bin/env bash
# cluster-postmortem.sh KIND CLUSTER DIR: after a failed e2e run, keep what explains a cluster that stopped
# answering, before the cluster is deleted. CI keeps only what a run prints, so besides the full `kind export logs`
# in DIR (on the machine, for a local run) it prints the end of the control plane's own logs: kube-apiserver, etcd,
# the kubelet, and the node's containers' states.
#
# Why: a cold CI run of 2026-12-02 lost the IPv6-only cluster's API server ("connection reset by peer" on its
# port for half an hour) while the machine was loaded, and the cluster was deleted before anyone could look.
# Never fails: a postmortem must not hide the failure it follows.
set -uo pipefail
if [ $# != 3 ]; then echo "usage: cluster-postmortem.sh KIND CLUSTER DIR" >&2; exit 0; fi
kind=$1 cluster=$2 dir=$3
if ! "$kind" get clusters 2>/dev/null | grep -qx "$cluster"; then
  echo "==> postmortem of $cluster: no such cluster"
  exit 0
fi
echo "==> postmortem of $cluster: kind export logs into $dir"
rm -rf "$dir"
timeout 120 "$kind" export logs "$dir" --name "$cluster" >/dev/null 2>&1 || echo "    (kind export logs failed or timed out)"
cp=$cluster-control-plane
echo "----- $cp: containers (docker exec ps)"
timeout 20 docker exec "$cp" sh -c 'ps -eo pid,etime,stat,rss,args --sort=start_time | cut -c1-150' 2>&1 | tail -40
for pattern in 'kube-apiserver-*' 'etcd-*'; do
  for f in "$dir/$cp"/containers/$pattern; do
    [ -e "$f" ] || continue
    echo "----- $(basename "$f"): last 25 lines"
    tail -n 25 "$f" | cut -c1-300
  done
done
if [ -e "$dir/$cp/kubelet.log" ]; then
  echo "----- $cp kubelet.log: last 40 lines mentioning the control plane, probes or evictions"
  grep -E 'kube-apiserver|etcd|Liveness|Readiness|evict|OOM|Killing' "$dir/$cp/kubelet.log" | tail -n 40 | cut -c1-300
fi
echo "----- docker stats of $cluster's nodes"
mapfile -t nodes < <(docker ps --format '{{.Names}}' | grep "^$cluster-")
[ ${#nodes[@]} = 0 ] || timeout 20 docker stats --no-stream --format '{{.Name}} cpu {{.CPUPerc}} mem {{.MemUsage}}' "${nodes[@]}" 2>&1
exit 0
