# make/ship.mk — shipping Hyperstatic: the images, the Helm chart, loading both into the local kind cluster,
# the end-to-end suite and the demo.
#
# Every image is FROM scratch plus a static binary built on this host: nothing is ever pulled (there is no
# registry). The chart's CRDs and ClusterRole rules are copies of controller-gen's output in config/, refreshed by
# `make chart-sync` and checked by `make chart-check`, so config/ and the chart cannot drift.

CHART_DIR := $(ROOT)/charts/hyperstatic
HELM_RELEASE ?= hyperstatic
HELM_NAMESPACE ?= hyperstatic-system
KIND_CLUSTER_NAME ?= $(or $(CLUSTER_NAME),hyperstatic)
# The kind cluster's kubeconfig, written by `make kind-up` (make/cluster.mk).
E2E_KUBECONFIG ?= $(or $(KIND_KUBECONFIG),$(ROOT)/_out/kubeconfig)
KUBECTL ?= $(BIN)/kubectl

OPERATOR_IMAGE_CONTEXT := $(BIN)/operator-image-context
# The e2e suite's own images: an in-cluster HTTP client, and baked sites (example site; two versions for the
# rolling-update test).
FETCH_IMAGE ?= hyperstatic/e2e-fetch:$(VERSION)
FETCH_IMAGE_CONTEXT := $(BIN)/fetch-image-context
# The admin-port slow client (slowloris scenario), and the server image under a second tag: the "new" default
# server image of the operator-upgrade scenario.
SLOWLORIS_IMAGE ?= hyperstatic/e2e-slowloris:$(VERSION)
SLOWLORIS_IMAGE_CONTEXT := $(BIN)/slowloris-image-context
SERVER_NEXT_IMAGE ?= $(SERVER_IMAGE)-next
EXAMPLE_SITE_IMAGE ?= hyperstatic/example-site:$(VERSION)
ROLLOUT_V1_IMAGE ?= hyperstatic/e2e-site-rollout:v1-$(VERSION)
ROLLOUT_V2_IMAGE ?= hyperstatic/e2e-site-rollout:v2-$(VERSION)
# The real site (issue 12): the Python 3.11 docs (hack/python-docs.sh, 1,065 files, 67 MB) baked like any site,
# and a v2 for the rollout scenario: the same image plus one changed page (PYDOCS_PAGE with " (hyperstatic e2e
# v2)" added to its <title>), layered by e2e/testdata/site-update.Dockerfile so only that page is encoded again.
# The trees live under _out/ (PYDOCS_DIR, and PYDOCS_V2_DIR holding only the changed page).
PYDOCS_DIR ?= $(ROOT)/_out/pydocs
PYDOCS_V2_DIR ?= $(ROOT)/_out/pydocs-v2
PYDOCS_PAGE ?= index.html
PYDOCS_IMAGE ?= hyperstatic/pydocs-site:$(VERSION)
PYDOCS_V2_IMAGE ?= hyperstatic/pydocs-site:v2-$(VERSION)
E2E_IMAGES := $(FETCH_IMAGE) $(EXAMPLE_SITE_IMAGE) $(ROLLOUT_V1_IMAGE) $(ROLLOUT_V2_IMAGE) $(SLOWLORIS_IMAGE) $(SERVER_NEXT_IMAGE) \
  $(PYDOCS_IMAGE) $(PYDOCS_V2_IMAGE) $(TRAEFIK_IMAGE)
DEMO_OUT ?= $(ROOT)/_out/demo
# The chart the e2e suite installs (override to try a modified copy).
E2E_CHART ?= $(CHART_DIR)
DEMO_NAMESPACE ?= hyperstatic-demo

# The operator asks for a fractional CPU. On the 2-CPU kind node the control plane reserves ~0.85 CPU, so 50m
# (instead of the chart's default 100m) leaves room for one pinned `cpu: 1` StaticSite next to the operator.
HELM_LOCAL_VALUES := --set operator.image.tag=$(VERSION) --set server.image.tag=$(VERSION) \
  --set k6.image.tag=$(VERSION) --set operator.resources.cpu=50m

##@ Ship: images
## ---- images

.PHONY: images
images: server-image operator-image k6-image ## Build the server, operator and k6 images ($(VERSION)), FROM scratch, nothing pulled.
	@$(call progress,images ready: $(SERVER_IMAGE) $(OPERATOR_IMAGE) $(K6_IMAGE))

.PHONY: operator-image
operator-image: operator-build docker-engine ## Build $(OPERATOR_IMAGE): the static manager binary (CGO_ENABLED=0) FROM scratch, user 65532.
	@rm -rf $(OPERATOR_IMAGE_CONTEXT) && mkdir -p $(OPERATOR_IMAGE_CONTEXT)
	@cp $(OPERATOR_BIN) $(OPERATOR_IMAGE_CONTEXT)/manager
	@cp $(ROOT)/images/operator/Dockerfile $(OPERATOR_IMAGE_CONTEXT)/Dockerfile
	@$(call progress,building $(OPERATOR_IMAGE))
	docker build --pull=false -q -t $(OPERATOR_IMAGE) $(OPERATOR_IMAGE_CONTEXT)

.PHONY: e2e-images
e2e-images: e2e-fetch-image e2e-slowloris-image $(if $(filter 1,$(E2E_ROUTES)),e2e-traefik-image) server-image ## Build the e2e suite's images: the in-cluster fetch and slowloris clients, Traefik with E2E_ROUTES=1 (make/traefik.mk), baked test sites (the real one too: the Python docs), the server retagged -next.
	docker tag $(SERVER_IMAGE) $(SERVER_NEXT_IMAGE)
	@$(MAKE) site-image SITE_DIR=$(ROOT)/images/server/example/site SITE_IMAGE=$(EXAMPLE_SITE_IMAGE)
	@$(MAKE) site-image SITE_DIR=$(ROOT)/e2e/testdata/rollout-v1 SITE_IMAGE=$(ROLLOUT_V1_IMAGE)
	@$(MAKE) site-image SITE_DIR=$(ROOT)/e2e/testdata/rollout-v2 SITE_IMAGE=$(ROLLOUT_V2_IMAGE)
	@$(MAKE) e2e-pydocs-images

# The v1 image is `make site-image` of the docs (its precompress stage is the one slow step, and Docker's build
# cache skips it while the tree is unchanged). The v2 page is written from the v1 page every time, so it cannot go
# stale; the check that it differs guards against a page without a <title>, where sed would change nothing.
.PHONY: e2e-pydocs-images
e2e-pydocs-images: server-image ## Build the real-site e2e images $(PYDOCS_IMAGE) and $(PYDOCS_V2_IMAGE) (Python 3.11 docs; v2 changes one page).
	@start=$$(date +%s) && \
	  $(ROOT)/hack/python-docs.sh $(PYDOCS_DIR) && \
	  $(MAKE) --no-print-directory site-image SITE_DIR=$(PYDOCS_DIR) SITE_IMAGE=$(PYDOCS_IMAGE) && \
	  $(call progress,$(PYDOCS_IMAGE) built in $$(( $$(date +%s) - start )) s; now $(PYDOCS_V2_IMAGE)) && \
	  rm -rf $(PYDOCS_V2_DIR) && mkdir -p $(dir $(PYDOCS_V2_DIR)/$(PYDOCS_PAGE)) && \
	  sed 's|</title>| (hyperstatic e2e v2)</title>|' $(PYDOCS_DIR)/$(PYDOCS_PAGE) > $(PYDOCS_V2_DIR)/$(PYDOCS_PAGE) && \
	  if cmp -s $(PYDOCS_DIR)/$(PYDOCS_PAGE) $(PYDOCS_V2_DIR)/$(PYDOCS_PAGE); then \
	    echo "e2e-pydocs-images: $(PYDOCS_PAGE) has no </title>: the v2 page would equal v1" >&2; exit 1; fi && \
	  ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
	  cp -r $(PYDOCS_V2_DIR) "$$ctx/site" && cp $(ROOT)/e2e/testdata/site-update.Dockerfile "$$ctx/Dockerfile" && \
	  DOCKER_BUILDKIT=0 docker build --pull=false -q --build-arg SERVER_IMAGE=$(SERVER_IMAGE) \
	    --build-arg BASE_IMAGE=$(PYDOCS_IMAGE) -t $(PYDOCS_V2_IMAGE) "$$ctx" && \
	  $(call progress,real-site images $(PYDOCS_IMAGE) and $(PYDOCS_V2_IMAGE) built in $$(( $$(date +%s) - start )) s)

.PHONY: e2e-fetch-image
e2e-fetch-image: docker-engine ## Build $(FETCH_IMAGE): the e2e tests' static in-cluster HTTP client, FROM scratch.
	@$(call progress,building $(FETCH_IMAGE))
	@rm -rf $(FETCH_IMAGE_CONTEXT) && mkdir -p $(FETCH_IMAGE_CONTEXT)
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(FETCH_IMAGE_CONTEXT)/fetch ./e2e/cmd/fetch
	@cp $(ROOT)/e2e/cmd/fetch/Dockerfile $(FETCH_IMAGE_CONTEXT)/Dockerfile
	docker build --pull=false -q -t $(FETCH_IMAGE) $(FETCH_IMAGE_CONTEXT)

.PHONY: e2e-slowloris-image
e2e-slowloris-image: docker-engine ## Build $(SLOWLORIS_IMAGE): the e2e tests' slow admin-port client, FROM scratch.
	@$(call progress,building $(SLOWLORIS_IMAGE))
	@rm -rf $(SLOWLORIS_IMAGE_CONTEXT) && mkdir -p $(SLOWLORIS_IMAGE_CONTEXT)
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(SLOWLORIS_IMAGE_CONTEXT)/slowloris ./e2e/cmd/slowloris
	@cp $(ROOT)/e2e/cmd/slowloris/Dockerfile $(SLOWLORIS_IMAGE_CONTEXT)/Dockerfile
	docker build --pull=false -q -t $(SLOWLORIS_IMAGE) $(SLOWLORIS_IMAGE_CONTEXT)

.PHONY: kind-load
kind-load: $(KIND) ## Load the images (and the e2e images when built) into the kind cluster "$(KIND_CLUSTER_NAME)".
	@$(call progress,loading images into kind cluster $(KIND_CLUSTER_NAME))
	@imgs="$(SERVER_IMAGE) $(OPERATOR_IMAGE) $(K6_IMAGE)"; \
	for i in $(E2E_IMAGES); do docker image inspect $$i >/dev/null 2>&1 && imgs="$$imgs $$i"; done; \
	$(KIND) load docker-image --name $(KIND_CLUSTER_NAME) $$imgs
	@$(call progress,images loaded)

##@ Ship: Helm chart
## ---- chart

# chart-sync-into copies the generated CRDs and RBAC role into the chart at $(1) and stamps the version. The CRDs
# go to templates/crds/, not crds/: Helm installs crds/ once and never upgrades it, so `helm upgrade` would leave
# the old schemas behind. Each gets helm.sh/resource-policy: keep, so `helm uninstall` keeps them (and the users'
# StaticSites and Benchmarks) as it did for crds/. A crds/ left by an older chart-sync is removed.
chart-crd-keep = s|^  annotations:$$|&\n    helm.sh/resource-policy: keep|
chart-sync-into = rm -rf $(1)/crds && mkdir -p $(1)/templates/crds && rm -f $(1)/templates/crds/*.yaml && \
  for f in $(ROOT)/config/crd/bases/*.yaml; do \
    sed -e "1s|^---$$|&\n\# Generated by make chart-sync from config/crd/bases/$$(basename $$f): edit the API types, not this file.|" \
      -e '/^metadata:$$/,/^spec:$$/ $(chart-crd-keep)' $$f > $(1)/templates/crds/$$(basename $$f) || exit 1; done && \
  cp $(ROOT)/config/rbac/role.yaml $(1)/files/manager-role.yaml && \
  sed -i -E 's/^version: .*/version: $(VERSION)/; s/^appVersion: .*/appVersion: "$(VERSION)"/' $(1)/Chart.yaml

.PHONY: chart-sync
chart-sync: ## Copy the generated CRDs and ClusterRole rules (config/) into the chart; stamp $(VERSION).
	@$(call progress,syncing config/crd/bases and config/rbac/role.yaml into $(CHART_DIR))
	@$(call chart-sync-into,$(CHART_DIR))

.PHONY: chart-check
chart-check: $(HELM) ## Fail if chart-sync would change the chart, or if `helm lint` is not clean.
	@$(call progress,checking the chart against config/ and linting it)
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && cp -r $(CHART_DIR) $$tmp/ && \
	  { $(call chart-sync-into,$$tmp/hyperstatic); } && \
	  if ! diff -ru $(CHART_DIR) $$tmp/hyperstatic; then \
	    echo "chart-check: the chart differs from config/ (diff above): run make chart-sync" >&2; exit 1; fi
	$(HELM) lint --strict $(CHART_DIR)
	@$(HELM) template t $(CHART_DIR) --kube-version 1.34.10 >/dev/null
	@$(call progress,chart is in sync with config/ and lint-clean)

.PHONY: helm-install
helm-install: $(HELM) ## helm upgrade --install the operator into the kind cluster (namespace $(HELM_NAMESPACE)), wait Ready.
	@$(call progress,helm install $(HELM_RELEASE) into $(HELM_NAMESPACE))
	KUBECONFIG=$(E2E_KUBECONFIG) $(HELM) upgrade --install $(HELM_RELEASE) $(CHART_DIR) \
	  --namespace $(HELM_NAMESPACE) --create-namespace --take-ownership --wait --timeout 5m $(HELM_LOCAL_VALUES)
	@$(call progress,operator ready)

.PHONY: helm-uninstall
helm-uninstall: $(HELM) ## helm uninstall the operator (the CRDs stay, as Helm keeps them).
	KUBECONFIG=$(E2E_KUBECONFIG) $(HELM) uninstall $(HELM_RELEASE) --namespace $(HELM_NAMESPACE) --wait --ignore-not-found

##@ Ship: end to end
## ---- end to end

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

##@ Ship: demo
## ---- demo

.PHONY: demo
demo: ## The main job: kind cluster, images, Helm install, a sample StaticSite, a short Benchmark; prints URL, results, chart.
	@start=$$(date +%s); \
	  $(MAKE) kind-up && $(MAKE) images && $(MAKE) docker-engine && \
	  $(MAKE) site-image SITE_DIR=$(ROOT)/images/server/example/site SITE_IMAGE=$(EXAMPLE_SITE_IMAGE) && \
	  $(MAKE) kind-load E2E_IMAGES=$(EXAMPLE_SITE_IMAGE) && $(MAKE) helm-install && $(MAKE) demo-run && \
	  $(call progress,demo done in $$(( $$(date +%s) - start )) s)

.PHONY: demo-clean
demo-clean: ## Delete the demo's namespace (its site holds CPU the e2e suite needs: the node has one exclusive CPU).
	@if [ -f $(E2E_KUBECONFIG) ]; then KUBECONFIG=$(E2E_KUBECONFIG) $(KUBECTL) delete namespace $(DEMO_NAMESPACE) \
	  --ignore-not-found --wait --timeout=3m; fi

.PHONY: demo-run
demo-run: ## The demo's last part (cluster, images, operator ready): apply the sample site and benchmark, print results.
	@$(call progress,applying the sample StaticSite and Benchmark in namespace $(DEMO_NAMESPACE))
	@mkdir -p $(DEMO_OUT)
	@export KUBECONFIG=$(E2E_KUBECONFIG); \
	  $(KUBECTL) create namespace $(DEMO_NAMESPACE) --dry-run=client -o yaml | $(KUBECTL) apply -f - >/dev/null; \
	  sed 's|@SITE_IMAGE@|$(EXAMPLE_SITE_IMAGE)|' $(ROOT)/e2e/testdata/demo.yaml > $(DEMO_OUT)/demo.yaml; \
	  $(KUBECTL) -n $(DEMO_NAMESPACE) delete benchmark demo --ignore-not-found --wait >/dev/null; \
	  $(KUBECTL) -n $(DEMO_NAMESPACE) apply -f $(DEMO_OUT)/demo.yaml; \
	  $(call progress,waiting for StaticSite demo to be Ready); \
	  $(KUBECTL) -n $(DEMO_NAMESPACE) wait staticsite/demo --for=condition=Ready --timeout=5m; \
	  $(KUBECTL) -n $(DEMO_NAMESPACE) get staticsite demo; \
	  $(call progress,running Benchmark demo (a short k6 concurrency sweep inside the cluster)); \
	  $(KUBECTL) -n $(DEMO_NAMESPACE) wait benchmark/demo --for=condition=Complete --timeout=10m; \
	  $(KUBECTL) -n $(DEMO_NAMESPACE) get benchmark demo; \
	  $(MAKE) bench-results BENCHMARK=demo NAMESPACE=$(DEMO_NAMESPACE) BENCH_RESULTS_DIR=$(DEMO_OUT); \
	  echo; echo "Site URL (inside the cluster): $$($(KUBECTL) -n $(DEMO_NAMESPACE) get staticsite demo -o jsonpath='{.status.url}')"; \
	  echo "Open it from this machine (loopback only):"; \
	  echo "  KUBECONFIG=$(E2E_KUBECONFIG) $(KUBECTL) -n $(DEMO_NAMESPACE) port-forward --address 127.0.0.1 svc/demo 8080:80"; \
	  echo "Results: $(DEMO_OUT)/ (results.json, results.csv, chart.svg: open the SVG in a browser)"; \
	  ls -l $(DEMO_OUT)
