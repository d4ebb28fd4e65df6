##@ End to end (kind cluster)
# make/e2e.mk — the end-to-end suite (e2e/, build tag e2e) on the local kind cluster: `make e2e` runs every step
# from cluster to tests; `make e2e-test` only the tests, on a cluster that has the images already. The images it
# builds are in make/images.mk (e2e-images), the cluster in make/cluster.mk, the chart in make/chart.mk.

# The chart the e2e suite installs (override to try a modified copy).
E2E_CHART ?= $(CHART_DIR)

.PHONY: e2e
e2e: ## End-to-end tests: the whole suite (TestE2E, scenarios side by side) on the cluster, and beside it the IPv6-only cluster's TestAddressFamilies (and E2E_BESIDE, if given).
	@rm -f $(E2E_LOGS_DIR)/e2e-test.log $(E2E_LOGS_DIR)/e2e-ipv6-test.log; \
	  start=$$(date +%s); phase() { local s rc; $(call progress,$$1); s=$$(date +%s); shift; "$$@"; rc=$$?; \
	  echo "    ($$(( $$(date +%s) - s )) s)"; return $$rc; }; \
	  phase "e2e 1/5: node image, tools" $(MAKE) node-image kubectl $(KIND) $(HELM) && \
	  phase "e2e 2/5: the clusters (one after the other) and, beside them, the images" $(ROOT)/hack/together.sh \
	    "clusters" "$(MAKE) kind-up && $(MAKE) kind-up-ipv6" \
	    "images" "$(MAKE) images e2e-images" && \
	  phase "e2e 3/5: load the images into both clusters" $(ROOT)/hack/together.sh \
	    "kind-load" "$(MAKE) kind-load" \
	    "kind-load-ipv6" "$(KIND) load docker-image --name $(IPV6_CLUSTER_NAME) $(E2E_FAMILY_IMAGES)" && \
	  phase "e2e 4/5: chart-check, demo-clean" $(MAKE) chart-check demo-clean && \
	  phase "e2e 5/5: go test: TestE2E (dual-stack, 3 nodes) and, beside it, TestAddressFamilies (IPv6-only)" \
	    $(ROOT)/hack/together.sh \
	    "TestE2E" "$(MAKE) e2e-test" \
	    "ipv6" "$(MAKE) e2e-ipv6-test" $(if $(E2E_BESIDE),"beside" "$(E2E_BESIDE)"); \
	  e2e_rc=$$?; if [ $$e2e_rc != 0 ]; then \
	    $(ROOT)/hack/cluster-postmortem.sh $(KIND) $(CLUSTER_NAME) $(ROOT)/_out/logs/postmortem-$(CLUSTER_NAME); \
	    $(ROOT)/hack/cluster-postmortem.sh $(KIND) $(IPV6_CLUSTER_NAME) $(ROOT)/_out/logs/postmortem-$(IPV6_CLUSTER_NAME); fi; \
	  if [ "$(E2E_KEEP_CLUSTERS)" != 1 ]; then \
	    phase "e2e: delete both clusters (the node-loss scenario leaves a worker dead)" $(MAKE) kind-down kind-down-ipv6; fi; \
	  if [ $$e2e_rc = 0 ]; then $(call progress,e2e passed in $$(( $$(date +%s) - start )) s); \
	  else $(ROOT)/hack/e2e-why-failed.sh $(E2E_LOGS_DIR)/e2e-test.log $(E2E_LOGS_DIR)/e2e-ipv6-test.log; \
	    $(call progress,e2e FAILED after $$(( $$(date +%s) - start )) s); fi; exit $$e2e_rc

# The images the IPv6-only cluster needs (its TestAddressFamilies: a site, the autoscaler, a Benchmark).
E2E_FAMILY_IMAGES = $(SERVER_IMAGE) $(OPERATOR_IMAGE) $(K6_IMAGE) $(FETCH_IMAGE) $(EXAMPLE_SITE_IMAGE)
comma := ,
# The IP families the address-family scenarios expect of the cluster: the main cluster's (dual-stack, IPv4
# first) unless e2e-ipv6-test says otherwise.
E2E_IP_FAMILIES ?= IPv4$(comma)IPv6
# E2E_BESIDE=CMD runs CMD beside the tests (step 5/5, after the images are built and loaded, so it shares no build
# directory with them), and `make e2e` fails if it fails: CI's static checks and test builds use the CPU the
# scenarios leave idle (.ci/run, hack/ci-beside.sh). Its output is printed when the tests end.
E2E_BESIDE ?=
# Each run of the Go tests keeps its whole output in E2E_LOG; on a failure `make e2e` ends with the failed tests'
# last lines from both runs' logs (hack/e2e-why-failed.sh), so the reason is in the tail CI shows.
E2E_LOGS_DIR = $(ROOT)/_out/logs
E2E_LOG ?= $(E2E_LOGS_DIR)/e2e-test.log
# E2E_KEEP_CLUSTERS=1 keeps both clusters after the tests (for a look with kubectl; a worker of the main one is
# dead after the node-loss scenario).
E2E_KEEP_CLUSTERS ?= 0

.PHONY: e2e-ipv6
e2e-ipv6: $(KIND) ## Only the IPv6-only cluster: create it, load its images, TestAddressFamilies; then deleted.
	@$(MAKE) --no-print-directory kind-up-ipv6 && \
	  $(KIND) load docker-image --name $(IPV6_CLUSTER_NAME) $(E2E_FAMILY_IMAGES) && \
	  $(MAKE) --no-print-directory e2e-ipv6-test; \
	  rc=$$?; if [ "$(E2E_KEEP_CLUSTERS)" != 1 ]; then $(MAKE) --no-print-directory kind-down-ipv6; fi; exit $$rc

.PHONY: e2e-ipv6-test
e2e-ipv6-test: ## Only TestAddressFamilies on the IPv6-only cluster (up, images loaded).
	@$(MAKE) --no-print-directory e2e-test E2E_KUBECONFIG=$(IPV6_KUBECONFIG) E2E_RUN='^TestAddressFamilies$$$$' E2E_IP_FAMILIES=IPv6 \
	  E2E_LOG=$(E2E_LOGS_DIR)/e2e-ipv6-test.log

.PHONY: e2e-test
e2e-test: $(HELM) kubectl ## Only the Go e2e tests (cluster up, images loaded); E2E_RUN=<regexp> (default ^TestE2E$$, the whole suite); E2E_MANY_PREVIEWS=1 adds 20 previews at once to 14g (the Python docs) and 14j (www);
	mkdir -p $(E2E_LOGS_DIR) && cd $(ROOT) && KUBECONFIG=$(E2E_KUBECONFIG) HELM=$(HELM) E2E_CHART=$(E2E_CHART) E2E_VERSION=$(VERSION) \
	  E2E_KUBECTL=$(KUBECTL) E2E_IP_FAMILIES=$(E2E_IP_FAMILIES) \
	  E2E_FETCH_IMAGE=$(FETCH_IMAGE) E2E_SITE_IMAGE=$(EXAMPLE_SITE_IMAGE) E2E_SITE_DIR=$(ROOT)/images/server/example/site \
	  E2E_ROLLOUT_V1_IMAGE=$(ROLLOUT_V1_IMAGE) E2E_ROLLOUT_V2_IMAGE=$(ROLLOUT_V2_IMAGE) \
	  E2E_CAPACITY_IMAGE_PREFIX=$(CAPACITY_IMAGE_PREFIX) \
	  E2E_PYDOCS_IMAGE=$(PYDOCS_IMAGE) E2E_PYDOCS_V2_IMAGE=$(PYDOCS_V2_IMAGE) \
	  E2E_PYDOCS_DIR=$(PYDOCS_DIR) E2E_PYDOCS_V2_DIR=$(PYDOCS_V2_DIR) \
	  E2E_SERVER_IMAGE=$(SERVER_IMAGE) E2E_K6_IMAGE=$(K6_IMAGE) \
	  E2E_SLOWLORIS_IMAGE=$(SLOWLORIS_IMAGE) E2E_SERVER_NEXT_IMAGE=$(SERVER_NEXT_IMAGE) \
	  E2E_GITSERVER_IMAGE=$(GITSERVER_IMAGE) E2E_DEX_IMAGE=$(DEX_IMAGE) E2E_MANY_PREVIEWS=$(E2E_MANY_PREVIEWS) \
	  E2E_TRAEFIK_IMAGE=$(if $(filter 1,$(E2E_ROUTES)),$(TRAEFIK_IMAGE)) \
	  E2E_CERT_MANAGER_IMAGE=$(if $(filter 1,$(E2E_CERT_MANAGER)),$(CERT_MANAGER_IMAGE)) \
	  go test -tags e2e ./e2e/ -count=1 -v -timeout 40m -run '$(or $(E2E_RUN),^TestE2E$$)' 2>&1 | tee $(E2E_LOG) \
	  || { rc=$$?; $(ROOT)/hack/e2e-why-failed.sh $(E2E_LOG); exit $$rc; }
