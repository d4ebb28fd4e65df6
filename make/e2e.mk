##@ End to end (kind cluster)
# make/e2e.mk — the end-to-end suite (e2e/, build tag e2e) on the local kind cluster: `make e2e` runs every step
# from cluster to tests; `make e2e-test` only the tests, on a cluster that has the images already. The images it
# builds are in make/images.mk (e2e-images), the cluster in make/cluster.mk, the chart in make/chart.mk.

# The chart the e2e suite installs (override to try a modified copy).
E2E_CHART ?= $(CHART_DIR)

.PHONY: e2e
e2e: ## End-to-end tests on the local kind cluster: kind-up, images, kind-load, chart-check, go test -tags e2e.
	@start=$$(date +%s); phase() { $(call progress,$$1); s=$$(date +%s); shift; "$$@"; \
	  echo "    ($$(( $$(date +%s) - s )) s)"; }; \
	  phase "e2e 1/5: cluster" $(MAKE) kind-up && \
	  phase "e2e 2/5: images" $(MAKE) images e2e-images && \
	  phase "e2e 3/5: kind-load" $(MAKE) kind-load && \
	  phase "e2e 4/5: chart-check, demo-clean" $(MAKE) chart-check demo-clean && \
	  phase "e2e 5/5: go test -tags e2e ./e2e/..." $(MAKE) e2e-test && \
	  $(call progress,e2e passed in $$(( $$(date +%s) - start )) s)

.PHONY: e2e-test
e2e-test: $(HELM) ## Only the Go e2e tests (cluster up and images loaded already); E2E_RUN=<regexp> selects tests.
	cd $(ROOT) && KUBECONFIG=$(E2E_KUBECONFIG) HELM=$(HELM) E2E_CHART=$(E2E_CHART) E2E_VERSION=$(VERSION) \
	  E2E_FETCH_IMAGE=$(FETCH_IMAGE) E2E_SITE_IMAGE=$(EXAMPLE_SITE_IMAGE) E2E_SITE_DIR=$(ROOT)/images/server/example/site \
	  E2E_ROLLOUT_V1_IMAGE=$(ROLLOUT_V1_IMAGE) E2E_ROLLOUT_V2_IMAGE=$(ROLLOUT_V2_IMAGE) \
	  E2E_PYDOCS_IMAGE=$(PYDOCS_IMAGE) E2E_PYDOCS_V2_IMAGE=$(PYDOCS_V2_IMAGE) \
	  E2E_PYDOCS_DIR=$(PYDOCS_DIR) E2E_PYDOCS_V2_DIR=$(PYDOCS_V2_DIR) \
	  E2E_SERVER_IMAGE=$(SERVER_IMAGE) E2E_K6_IMAGE=$(K6_IMAGE) \
	  E2E_SLOWLORIS_IMAGE=$(SLOWLORIS_IMAGE) E2E_SERVER_NEXT_IMAGE=$(SERVER_NEXT_IMAGE) \
	  E2E_TRAEFIK_IMAGE=$(if $(filter 1,$(E2E_ROUTES)),$(TRAEFIK_IMAGE)) \
	  go test -tags e2e ./e2e/... -count=1 -v -timeout 40m $(if $(E2E_RUN),-run '$(E2E_RUN)')
