##@ Operator benchmark (kwok: fake nodes and pods, real control plane)
# make/benchoperator.mk — the operator at scale (issue 28 item 3): StaticSites on kwok's fake nodes next to a
# real kube-apiserver + etcd (the envtest assets), kube-controller-manager and kube-scheduler (built from the Go
# module proxy by e2e/kind/scripts/build-k8s.sh, cached under $(CACHE_DIR)/kube), the operator as a local
# process and the real server answering its scrapes. Nothing leaves the machine: by default the harness runs in a
# network namespace of its own with lo alone (hack/bench-operator/netns.sh, `unshare --net`, needs root), where a
# `local` route makes BENCH_OPERATOR_LOCAL_RANGE (198.18.0.0/15, the benchmarking range) this namespace's own, and
# kwok's pod CIDR and node IP are inside it: the API server accepts those in the pool sites' EndpointSlices, so
# pool sites become Ready. BENCH_OPERATOR_NETNS=0 runs in the machine's namespace with loopback pod IPs instead
# (127.64.0.0/16: pool sites then stay Stalled, their EndpointSlices refused). The harness refuses any other
# address, and these unless its namespace has lo alone and they are local there (machinelocal.go).
# The harness is hack/bench-operator (its unit tests run in `make go-test`, part of `make test`).
# Pools (issue 40): BENCH_OPERATOR_POOL_SITES sites placed in one StaticSitePool (ConfigMap content) beside the
# dedicated ones, its pods on kwok too, served for real by the pool's processes on this machine
# (hack/bench-operator/poolserve.go); docs/bench/operator-pools-*.md ran 1,000, 3,000 and 10,000.

KWOK_VERSION ?= v0.8.0
KWOK := $(BIN)/kwok-$(KWOK_VERSION)
BENCH_OPERATOR_SITES ?= 1000
BENCH_OPERATOR_REPLICAS ?= 2
BENCH_OPERATOR_NODES ?= 100
# Sites to turn autoscaling on for in the last phase; -1 all, 0 none.
BENCH_OPERATOR_AUTOSCALED ?= -1
BENCH_OPERATOR_QUIET ?= 60s
BENCH_OPERATOR_AUTOSCALE_WINDOW ?= 60s
# Pool sites beside the dedicated ones (0: no pool), the pool's pods, and how long a start-up may take.
BENCH_OPERATOR_POOL_SITES ?= 1000
BENCH_OPERATOR_POOL_REPLICAS ?= 2
BENCH_OPERATOR_RECONCILE_TIMEOUT ?= 20m
BENCH_OPERATOR_OUT ?= $(ROOT)/_out/bench/operator
# More operator flags, e.g. BENCH_OPERATOR_ARGS=--staticsite-max-concurrent-reconciles=1 for the one-worker baseline.
BENCH_OPERATOR_ARGS ?=
# 1: serve the operator's /debug/pprof/ on loopback (--pprof-bind-address) and save its heap profile at the end of
# the steady-state window beside the report (operator-heap.pb.gz; the Go heap figures in the report): issue 40's
# memory, docs/bench/operator-memory-*.md.
BENCH_OPERATOR_HEAP_PROFILE ?= 0
# Environment for the operator process alone, e.g. BENCH_OPERATOR_ENV="GOMEMLIMIT=160MiB" (the Go runtime's
# memory levers; set in the harness' own environment they would reach kube-apiserver, etcd and kwok too).
BENCH_OPERATOR_ENV ?=
# The operator in a memory cgroup with this limit, shown to it where a container shows it (e.g. 512Mi, the chart's
# advice for 10,000 pool sites; hack/bench-operator/memcg.go): its soft limit follows, the kernel enforces it, and
# the report gives the cgroup's peak, limit hits and OOM kills. Empty: no cgroup.
BENCH_OPERATOR_MEMORY_LIMIT ?=
BENCH_OPERATOR_BIN := $(BIN)/bench-operator
# 1: the harness in its own network namespace (lo alone), pod IPs in the benchmarking range; 0: loopback pod IPs.
BENCH_OPERATOR_NETNS ?= 1
BENCH_OPERATOR_LOCAL_RANGE ?= 198.18.0.0/15
ifeq ($(BENCH_OPERATOR_NETNS),1)
BENCH_OPERATOR_POD_CIDR ?= 198.18.0.0/16
BENCH_OPERATOR_NODE_IP ?= 198.19.0.2
BENCH_OPERATOR_WRAP := $(ROOT)/hack/bench-operator/netns.sh $(BENCH_OPERATOR_LOCAL_RANGE)
else
BENCH_OPERATOR_POD_CIDR ?= 127.64.0.0/16
BENCH_OPERATOR_NODE_IP ?= 127.0.0.2
BENCH_OPERATOR_WRAP :=
endif

$(KWOK):
	$(call go-install-tool,$@,sigs.k8s.io/kwok/cmd/kwok,$(KWOK_VERSION),kwok)

.PHONY: bench-operator
bench-operator: envtest-assets server-build operator-build $(KWOK) ## The operator with 1,000 StaticSites × 2 replicas and 1,000 pool sites on 100 kwok nodes: time to reconcile and place all, steady-state API writes/CPU/RSS, reconcile p50/p99, autoscaler round over 2,000 pods; writes _out/bench/operator/ (≈8 min; BENCH_OPERATOR_POOL_SITES=10000 for the pool at scale, =0 for none).
	@$(call progress,kube-controller-manager and kube-scheduler $(K8S_VERSION) (built once into $(CACHE_DIR)/kube))
	@$(CLUSTER_ENV) $(KIND_SCRIPTS)/build-k8s.sh kube-controller-manager kube-scheduler
	@$(call progress,kwok $(KWOK_VERSION) stages from its module)
	@stages=$$(cd $(CACHE_DIR) && go mod download -json sigs.k8s.io/kwok@$(KWOK_VERSION) | jq -r .Dir)/kustomize/stage; \
	  $(call progress,building the harness (hack/bench-operator)); \
	  go build -o $(BENCH_OPERATOR_BIN) ./hack/bench-operator; \
	  mkdir -p $(BENCH_OPERATOR_OUT); \
	  $(call progress,running: $(BENCH_OPERATOR_SITES) sites × $(BENCH_OPERATOR_REPLICAS) and $(BENCH_OPERATOR_POOL_SITES) pool sites on $(BENCH_OPERATOR_NODES) nodes: pod CIDR $(BENCH_OPERATOR_POD_CIDR)$(if $(BENCH_OPERATOR_WRAP), in a network namespace of its own)); \
	  $(BENCH_OPERATOR_WRAP) $(BENCH_OPERATOR_BIN) -repo $(ROOT) -assets $(ENVTEST_ASSETS) -k8s-bin $(CACHE_DIR)/kube/k8s-$(K8S_VERSION) \
	    -kwok $(KWOK) -kwok-stages "$$stages" -server-bin $(SERVER_BIN) -manager $(OPERATOR_BIN) \
	    -sites $(BENCH_OPERATOR_SITES) -replicas $(BENCH_OPERATOR_REPLICAS) -nodes $(BENCH_OPERATOR_NODES) \
	    -pool-sites $(BENCH_OPERATOR_POOL_SITES) -pool-replicas $(BENCH_OPERATOR_POOL_REPLICAS) -reconcile-timeout $(BENCH_OPERATOR_RECONCILE_TIMEOUT) \
	    -autoscaled $(BENCH_OPERATOR_AUTOSCALED) -quiet $(BENCH_OPERATOR_QUIET) -autoscale-window $(BENCH_OPERATOR_AUTOSCALE_WINDOW) \
	    -pod-cidr $(BENCH_OPERATOR_POD_CIDR) -node-ip $(BENCH_OPERATOR_NODE_IP) \
	    -operator-args "$(BENCH_OPERATOR_ARGS)" -operator-env "$(BENCH_OPERATOR_ENV)" $(if $(BENCH_OPERATOR_MEMORY_LIMIT),-operator-memory-limit $(BENCH_OPERATOR_MEMORY_LIMIT)) -heap-profile=$(if $(filter 1,$(BENCH_OPERATOR_HEAP_PROFILE)),true,false) -out $(BENCH_OPERATOR_OUT)/report.md

# `make bench` runs every benchmark (make/bench.mk); this one joins it here so bench.mk needs no knowledge of kwok.
bench: bench-operator
