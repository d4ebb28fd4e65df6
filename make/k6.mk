##@ k6 load generator
# make/k6.mk — the k6 load generator: a static k6 binary, the runner the k6 image wraps it in (the image itself
# is built in make/images.mk), and a helper that copies a Benchmark's results out of the cluster. go-test needs
# k6-build (make/operator.mk says so).
#
# k6 takes about 3 minutes to build, so the binary is cached in $(CACHE_DIR) (outside the clone) and copied into
# ./bin; a second clone on the same machine starts warm.

K6_CACHE := $(CACHE_DIR)/k6/k6-$(K6_VERSION)
K6_RUNNER := $(BIN)/hyperstatic-k6-runner
BENCH_RESULTS_DIR ?= bench-results

.PHONY: k6-build
k6-build: ## Build static k6 $(K6_VERSION) (CGO_ENABLED=0) into $(CACHE_DIR), link ./bin/k6 to it.
	@if [ ! -x "$(K6_CACHE)" ]; then \
	  $(call progress,building k6 $(K6_VERSION) from the Go module proxy (about 3 minutes; cached in $(K6_CACHE))); \
	  mkdir -p "$(dir $(K6_CACHE))" && tmp=$$(mktemp -d) && \
	  GOBIN=$$tmp CGO_ENABLED=0 go install -trimpath -ldflags='-s -w' go.k6.io/k6@$(K6_VERSION) && \
	  mv "$$tmp/k6" "$(K6_CACHE)" && rmdir "$$tmp"; \
	fi
	@mkdir -p $(BIN)
	@[ -x "$(K6)" ] && cmp -s "$(K6_CACHE)" "$(K6)" || cp "$(K6_CACHE)" "$(K6)"
	@ln -sf "$$(basename $(K6))" "$(BIN)/k6"
	@$(call progress,k6 ready: $$($(K6) version | head -1))

.PHONY: k6-runner
k6-runner: ## Build the static runner that wraps k6 in the k6 image (measures k6's CPU, prints results).
	@mkdir -p $(BIN)
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(K6_RUNNER) ./images/k6/runner

.PHONY: bench-results
bench-results: ## Write a Benchmark's results (JSON, CSV, SVG) to $(BENCH_RESULTS_DIR): BENCHMARK=<name> [NAMESPACE=default].
	@[ -n "$(BENCHMARK)" ] || { echo "usage: make bench-results BENCHMARK=<name> [NAMESPACE=<ns>] [BENCH_RESULTS_DIR=<dir>]"; exit 2; }
	go run ./cmd/bench-results -benchmark "$(BENCHMARK)" -namespace "$(or $(NAMESPACE),default)" -out "$(BENCH_RESULTS_DIR)"
