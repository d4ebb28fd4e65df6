##@ End to end (kind cluster)
# make/e2e.mk — the end-to-end suite (e2e/, build tag e2e) on the local kind cluster: `make e2e` runs every step
# from cluster to tests; `make e2e-test` only the tests, on a cluster that has the images already. The images it
# builds are in make/images.mk (e2e-images), the cluster in make/cluster.mk, the chart in make/chart.mk.

# The chart the e2e suite installs (override to try a modified copy).
E2E_CHART ?= $(CHART_DIR)

.PHONY: e2e
e2e: ## End-to-end tests: the single-node suite, then the dual-stack multi-node and the IPv6-only clusters, one at a time.
	@start=$$(date +%s); phase() { $(call progress,$$1); s=$$(date +%s); shift; "$$@"; rc=$$?; \
	  echo "    ($$(( $$(date +%s) - s )) s)"; return $$rc; }; \
	  phase "e2e 1/8: cluster" $(MAKE) kind-up && \
	  phase "e2e 2/8: images" $(MAKE) images e2e-images && \
	  phase "e2e 3/8: kind-load" $(MAKE) kind-load && \
	  phase "e2e 4/8: chart-check, demo-clean" $(MAKE) chart-check demo-clean && \
	  phase "e2e 5/8: go test -tags e2e -run TestE2E (single node)" $(MAKE) e2e-test && \
	  phase "e2e 6/8: delete the single-node cluster (one cluster at a time: 2 CPUs)" $(MAKE) kind-down && \
	  phase "e2e 7/8: dual-stack, 3 nodes: TestAddressFamilies, TestMultiNode" $(MAKE) e2e-dual && \
	  phase "e2e 8/8: IPv6-only: TestAddressFamilies" $(MAKE) e2e-ipv6 && \
	  $(call progress,e2e passed in $$(( $$(date +%s) - start )) s)

# The images the other clusters need (no Traefik, no Python docs, no slowloris: their scenarios run on the
# single-node cluster only); the upgrade scenario needs the -next server image.
E2E_FAMILY_IMAGES = $(SERVER_IMAGE) $(OPERATOR_IMAGE) $(K6_IMAGE) $(FETCH_IMAGE) $(EXAMPLE_SITE_IMAGE)
E2E_DUAL_IMAGES = $(E2E_FAMILY_IMAGES) $(SERVER_NEXT_IMAGE)
comma := ,
# The IP families the address-family tests expect of the cluster (set by e2e-dual and e2e-ipv6).
E2E_IP_FAMILIES ?=
# E2E_KEEP_CLUSTERS=1 keeps the dual-stack and IPv6 clusters after their tests (for a look with kubectl).
E2E_KEEP_CLUSTERS ?= 0

# e2e-on-cluster UP,DOWN,NAME,KUBECONFIG,IMAGES,RUN,FAMILIES: create the cluster, load the images, run the tests,
# delete the cluster (also when the tests fail, unless E2E_KEEP_CLUSTERS=1), each step timed.
define e2e-on-cluster
	@phase() { $(call progress,$$1); s=$$(date +%s); shift; "$$@"; rc=$$?; echo "    ($$(( $$(date +%s) - s )) s)"; return $$rc; }; \
	  phase "$(3): cluster" $(MAKE) --no-print-directory $(1) && \
	  phase "$(3): load images" $(KIND) load docker-image --name $(3) $(5) && \
	  phase "$(3): go test -run '$(6)'" $(MAKE) --no-print-directory e2e-test E2E_KUBECONFIG=$(4) E2E_RUN='$(6)' E2E_IP_FAMILIES=$(7); \
	  rc=$$?; if [ "$(E2E_KEEP_CLUSTERS)" != 1 ]; then phase "$(3): delete" $(MAKE) --no-print-directory $(2); fi; exit $$rc
endef

.PHONY: e2e-dual
e2e-dual: $(KIND) ## Dual-stack cluster (control plane + 2 workers): address families, spread, drain, upgrade, node loss; then deleted.
	$(call e2e-on-cluster,kind-up-dual,kind-down-dual,$(DUAL_CLUSTER_NAME),$(DUAL_KUBECONFIG),$(E2E_DUAL_IMAGES),^(TestAddressFamilies|TestMultiNode)$$,IPv4$(comma)IPv6)

.PHONY: e2e-ipv6
e2e-ipv6: $(KIND) ## IPv6-only cluster: a site Ready and serving, the autoscaler, a Benchmark; then deleted.
	$(call e2e-on-cluster,kind-up-ipv6,kind-down-ipv6,$(IPV6_CLUSTER_NAME),$(IPV6_KUBECONFIG),$(E2E_FAMILY_IMAGES),^TestAddressFamilies$$,IPv6)

.PHONY: e2e-test
e2e-test: $(HELM) kubectl ## Only the Go e2e tests (cluster up, images loaded); E2E_RUN=<regexp> (default ^TestE2E$$, the single-node suite).
	cd $(ROOT) && KUBECONFIG=$(E2E_KUBECONFIG) HELM=$(HELM) E2E_CHART=$(E2E_CHART) E2E_VERSION=$(VERSION) \
	  E2E_KUBECTL=$(KUBECTL) E2E_IP_FAMILIES=$(E2E_IP_FAMILIES) \
	  E2E_FETCH_IMAGE=$(FETCH_IMAGE) E2E_SITE_IMAGE=$(EXAMPLE_SITE_IMAGE) E2E_SITE_DIR=$(ROOT)/images/server/example/site \
	  E2E_ROLLOUT_V1_IMAGE=$(ROLLOUT_V1_IMAGE) E2E_ROLLOUT_V2_IMAGE=$(ROLLOUT_V2_IMAGE) \
	  E2E_CAPACITY_IMAGE_PREFIX=$(CAPACITY_IMAGE_PREFIX) \
	  E2E_PYDOCS_IMAGE=$(PYDOCS_IMAGE) E2E_PYDOCS_V2_IMAGE=$(PYDOCS_V2_IMAGE) \
	  E2E_PYDOCS_DIR=$(PYDOCS_DIR) E2E_PYDOCS_V2_DIR=$(PYDOCS_V2_DIR) \
	  E2E_SERVER_IMAGE=$(SERVER_IMAGE) E2E_K6_IMAGE=$(K6_IMAGE) \
	  E2E_SLOWLORIS_IMAGE=$(SLOWLORIS_IMAGE) E2E_SERVER_NEXT_IMAGE=$(SERVER_NEXT_IMAGE) \
	  E2E_GITSERVER_IMAGE=$(GITSERVER_IMAGE) \
	  E2E_TRAEFIK_IMAGE=$(if $(filter 1,$(E2E_ROUTES)),$(TRAEFIK_IMAGE)) \
	  go test -tags e2e ./e2e/... -count=1 -v -timeout 40m -run '$(or $(E2E_RUN),^TestE2E$$)'
