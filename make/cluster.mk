##@ Cluster: Docker engine, envtest, kind
# make/cluster.mk — the Docker engine, envtest binaries, the kind node image and the local kind cluster.
#
# Nothing here needs a container registry: when the public images cannot be pulled (air-gapped, like these
# machines) Kubernetes, etcd, CoreDNS and pause are built from the Go module proxy, the node OS from Debian's apt
# mirror (e2e/kind/README.md tells the whole path, with timings and pitfalls). Slow results are cached under
# $(CACHE_DIR) keyed by version, so other clones on the machine start warm.
#
# For other make files and scripts:
#   $(ENVTEST_ASSETS)   directory with kube-apiserver, etcd, kubectl (make envtest-assets fills it);
#                       use as KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS)
#   $(KUBECONFIG_PATH)  kubeconfig of the kind cluster $(CLUSTER_NAME) (make kind-up writes it)
#   $(NODE_IMAGE)       the kind node image tag (version + hash of its build inputs)

# --- Versions: pinned here and nowhere else. They must agree with each other: kubeadm $(K8S_VERSION) runs
# exactly these etcd/CoreDNS/pause images (node-image checks it against `kubeadm config images list`).
# v1.34.11+ exist on the module proxy but had no checksum-database entry yet: never disable GOSUMDB, pick one
# that verifies.
K8S_VERSION ?= v1.34.10
ETCD_VERSION ?= v3.6.5
ETCD_IMAGE_TAG ?= 3.6.5-0
COREDNS_VERSION ?= v1.12.1
PAUSE_IMAGE ?= registry.k8s.io/pause:3.10.1
# controller-runtime's setup-envtest (tools module, release-0.22 branch: no tags exist for it on the proxy)
SETUP_ENVTEST_VERSION ?= v0.0.0-20251103140007-7a1b16d039d2
DEBIAN_SUITE ?= bookworm
# The public node image tried first where a registry answers (it gets the Service-CIDR guard layer too).
PUBLIC_NODE_IMAGE ?= kindest/node:$(K8S_VERSION)
# AIRGAPPED=1 skips the download attempts (setup-envtest, docker pull) and goes straight to the local build.
AIRGAPPED ?= 0

NODE_PACKAGES := systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,curl,jq,procps,socat,containerd,runc,containernetworking-plugins,less
KPROXY_PACKAGES := iptables,nftables,conntrack,kmod

CLUSTER_NAME ?= hyperstatic
KUBECONFIG_PATH ?= $(ROOT)/_out/kubeconfig
# The cluster's kind config (dual-stack, a control plane and two workers), and whether scripts/pod-network.sh lays
# the pod network out per node afterwards (the node image's static CNI fits one IPv4 node only: every cluster here
# needs it).
KIND_CONFIG ?= $(ROOT)/e2e/kind/kind-config.yaml
POD_NETWORK ?= 1
# The other e2e cluster (e2e/kind/README.md): IPv6-only, one node.
IPV6_CLUSTER_NAME ?= hyperstatic-ipv6
IPV6_KUBECONFIG ?= $(ROOT)/_out/kubeconfig-ipv6
ENVTEST_ASSETS ?= $(CACHE_DIR)/envtest/k8s-$(K8S_VERSION)-etcd-$(ETCD_VERSION)

KIND_SCRIPTS := $(ROOT)/e2e/kind/scripts
# lazy-once: computed on first use only, so unrelated targets pay nothing
cluster-hash = $(shell echo "$(1)" | sha256sum | cut -c1-10)
NODE_ROOTFS_IMAGE = hyperstatic/kind-rootfs:$(DEBIAN_SUITE)-$(call cluster-hash,$(DEBIAN_SUITE) $(NODE_PACKAGES))
KPROXY_ROOTFS_IMAGE = hyperstatic/kproxy-rootfs:$(DEBIAN_SUITE)-$(call cluster-hash,$(DEBIAN_SUITE) $(KPROXY_PACKAGES))
NODE_INPUTS_HASH = $(eval NODE_INPUTS_HASH := $$(shell $(CLUSTER_ENV) $(KIND_SCRIPTS)/inputs-hash.sh))$(NODE_INPUTS_HASH)
NODE_IMAGE ?= hyperstatic/kind-node:$(K8S_VERSION)-$(NODE_INPUTS_HASH)

# The scripts take every pinned value from here (they refuse to run without them).
CLUSTER_ENV = ROOT=$(ROOT) CACHE_DIR=$(CACHE_DIR) AIRGAPPED=$(AIRGAPPED) \
  K8S_VERSION=$(K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) ETCD_IMAGE_TAG=$(ETCD_IMAGE_TAG) \
  COREDNS_VERSION=$(COREDNS_VERSION) PAUSE_IMAGE=$(PAUSE_IMAGE) KIND_VERSION=$(KIND_VERSION) \
  SETUP_ENVTEST_VERSION=$(SETUP_ENVTEST_VERSION) DEBIAN_SUITE=$(DEBIAN_SUITE) \
  NODE_PACKAGES=$(NODE_PACKAGES) KPROXY_PACKAGES=$(KPROXY_PACKAGES) PUBLIC_NODE_IMAGE=$(PUBLIC_NODE_IMAGE) \
  ENVTEST_ASSETS=$(ENVTEST_ASSETS) CLUSTER_NAME=$(CLUSTER_NAME) KUBECONFIG_PATH=$(KUBECONFIG_PATH) KIND=$(KIND) \
  KIND_CONFIG=$(KIND_CONFIG) POD_NETWORK=$(POD_NETWORK)

.PHONY: docker-engine
docker-engine: ## Make a Docker engine answer (install docker.io, runc capability wrapper, start dockerd).
	@ROOT=$(ROOT) CACHE_DIR=$(CACHE_DIR) $(ROOT)/hack/docker-engine.sh

.PHONY: docker-engine-check
docker-engine-check: ## docker-engine, then run a FROM scratch image with --privileged.
	@ROOT=$(ROOT) CACHE_DIR=$(CACHE_DIR) CHECK=1 $(ROOT)/hack/docker-engine.sh

.PHONY: envtest-assets
envtest-assets: ## kube-apiserver, etcd, kubectl for envtest in $(ENVTEST_ASSETS) (downloaded, else built; cached).
	@$(call progress,envtest assets for Kubernetes $(K8S_VERSION) / etcd $(ETCD_VERSION))
	@$(CLUSTER_ENV) $(KIND_SCRIPTS)/envtest-assets.sh

# kubectl for people and the e2e make file: the one built (or downloaded) for envtest, same version as the cluster.
.PHONY: kubectl
kubectl: envtest-assets ## $(BIN)/kubectl, the cluster's version (from the envtest assets).
	@mkdir -p $(BIN) && ln -sf $(ENVTEST_ASSETS)/kubectl $(BIN)/kubectl

.PHONY: k8s-binaries
k8s-binaries: envtest-assets ## All Kubernetes, etcd, CoreDNS and pause binaries for the node image (cached).
	@$(CLUSTER_ENV) $(KIND_SCRIPTS)/build-k8s.sh kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy kubeadm
	@$(CLUSTER_ENV) $(KIND_SCRIPTS)/build-extras.sh etcd coredns pause

.PHONY: node-image
node-image: docker-engine ## The kind node image $(NODE_IMAGE): loaded from cache, pulled, or built (~25 min cold).
	@$(call progress,node image $(NODE_IMAGE))
	@$(CLUSTER_ENV) NODE_IMAGE=$(NODE_IMAGE) NODE_ROOTFS_IMAGE=$(NODE_ROOTFS_IMAGE) \
	  KPROXY_ROOTFS_IMAGE=$(KPROXY_ROOTFS_IMAGE) $(KIND_SCRIPTS)/node-image.sh

.PHONY: kind-up
kind-up: node-image kubectl $(KIND) ## Create the kind cluster $(CLUSTER_NAME): control plane + 2 workers, dual-stack, static CPU manager; kubeconfig in $(KUBECONFIG_PATH).
	@$(call progress,kind cluster $(CLUSTER_NAME))
	@$(CLUSTER_ENV) NODE_IMAGE=$(NODE_IMAGE) $(KIND_SCRIPTS)/kind-up.sh

.PHONY: kind-smoke
kind-smoke: kind-up ## Check the cluster: Service by DNS name from a Job, exclusive CPU for a cpu: 1 pod, no leaks.
	@$(call progress,smoke checks on $(CLUSTER_NAME))
	@$(CLUSTER_ENV) $(KIND_SCRIPTS)/kind-smoke.sh

.PHONY: kind-down
kind-down: $(KIND) ## Delete the kind cluster $(CLUSTER_NAME).
	@$(KIND) delete cluster --name $(CLUSTER_NAME) --kubeconfig $(KUBECONFIG_PATH)
	@rm -f $(KUBECONFIG_PATH)

# The IPv6-only cluster: the same kind-up/kind-down with another name, kubeconfig and kind config.
.PHONY: kind-up-ipv6 kind-down-ipv6
kind-up-ipv6: ## Create the IPv6-only single-node cluster $(IPV6_CLUSTER_NAME).
	@$(MAKE) --no-print-directory kind-up CLUSTER_NAME=$(IPV6_CLUSTER_NAME) KUBECONFIG_PATH=$(IPV6_KUBECONFIG) \
	  KIND_CONFIG=$(ROOT)/e2e/kind/kind-config-ipv6.yaml POD_NETWORK=1
kind-down-ipv6: ## Delete the cluster $(IPV6_CLUSTER_NAME).
	@$(MAKE) --no-print-directory kind-down CLUSTER_NAME=$(IPV6_CLUSTER_NAME) KUBECONFIG_PATH=$(IPV6_KUBECONFIG)

.PHONY: cluster-test
cluster-test: ## Unit tests of the cluster tooling's small Go programs (runc wrapper).
	@cd $(ROOT)/e2e/kind/capfix && go vet ./... && go test ./...

# Aliases the images, chart, e2e and demo make files read, and kubectl for them.
KIND_KUBECONFIG = $(KUBECONFIG_PATH)
KIND_CLUSTER_NAME ?= $(or $(CLUSTER_NAME),hyperstatic)
# The kind cluster's kubeconfig, written by `make kind-up`.
E2E_KUBECONFIG ?= $(or $(KIND_KUBECONFIG),$(ROOT)/_out/kubeconfig)
KUBECTL ?= $(BIN)/kubectl
