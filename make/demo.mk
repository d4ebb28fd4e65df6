##@ Demo
# make/demo.mk — `make demo`: kind cluster, images, Helm install, a sample StaticSite and a short Benchmark
# (e2e/testdata/demo.yaml), then the site's URL and the Benchmark's results and chart.

DEMO_OUT ?= $(ROOT)/_out/demo
DEMO_NAMESPACE ?= hyperstatic-demo

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
