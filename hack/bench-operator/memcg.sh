#!/usr/bin/env bash
# hack/bench-operator/memcg.sh CGROUP MOUNTPOINT COMMAND [ARG...] — runs COMMAND (the operator, with
# -operator-memory-limit) as a container runtime would with a memory limit: in the cgroup CGROUP (its directory,
# made and limited by the harness, memcg.go), with that directory bind-mounted on MOUNTPOINT (/sys/fs/cgroup/memory
# for cgroup v1, /sys/fs/cgroup for v2) in a mount namespace of its own, so the operator reads its limit where a
# pod shows it. The mount is private to that namespace: the machine's hierarchy is untouched. Needs root.
set -euo pipefail

if [[ "${1:-}" != --in-mountns ]]; then
	cgroup=${1:?usage: memcg.sh CGROUP MOUNTPOINT COMMAND [ARG...]}
	echo $$ >"$cgroup/cgroup.procs"
	# unshare without --fork execs: COMMAND ends up with this process' pid (the harness' child), in the cgroup.
	exec unshare --mount --propagation private -- "$0" --in-mountns "$@"
fi
shift
cgroup=$1 mountpoint=$2
shift 2
mount --bind "$cgroup" "$mountpoint"
exec "$@"
