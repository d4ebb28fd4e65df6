#!/usr/bin/env bash
# hack/bench-operator/netns.sh RANGE COMMAND [ARG...] — runs COMMAND (the harness, `make bench-operator`) in a
# network namespace of its own whose only interface is lo, with a `local` route for RANGE on lo: every address
# of RANGE is this namespace's own, and nothing can leave it (no interface but lo, so no route out).
# kwok's pod CIDR and node IP go inside RANGE (the benchmarking range 198.18.0.0/15 by default, RFC 2544): the
# API server accepts them in an EndpointSlice, which it refuses for loopback addresses. The harness checks all
# of this itself before it starts anything (machinelocal.go) and refuses to run otherwise.
# Needs CAP_SYS_ADMIN (root) for unshare --net; BENCH_OPERATOR_NETNS=0 runs on loopback addresses instead.
set -euo pipefail

if [[ "${1:-}" != --in-netns ]]; then
	# unshare without --fork execs: the harness ends up with this process' pid, and a signal to make reaches it.
	exec unshare --net -- "$0" --in-netns "$@"
fi
shift
range=${1:?usage: netns.sh RANGE COMMAND [ARG...]}
shift
ip link set lo up
ip route add local "$range" dev lo
exec "$@"
