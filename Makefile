# Hyperstatic: one way to build, test and run everything.
#
# The two commands a new machine needs:   make demo    (kind cluster + operator + sample site + benchmark)
#                                          make test    (Go unit + envtest, server unit + integration tests)
# Then `make e2e` for the end-to-end suite on the local kind cluster, and `make verify` for every static check
# (formatting, vet, lint, clippy, generated files, chart, shellcheck). `make help` lists every target, by group.
#
# Each concern keeps its targets in make/<concern>.mk; this file holds what they share.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

VERSION ?= 0.1.0
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BIN := $(ROOT)/bin
# Everything slow to rebuild (Kubernetes binaries, node image tarball, k6) is cached here, outside the clone,
# so a fresh clone on a machine that built it before starts warm.
CACHE_DIR ?= $(HOME)/.cache/hyperstatic
export PATH := $(BIN):/usr/local/go/bin:$(HOME)/.cargo/bin:$(PATH)
# One set of Go build settings for every build, test, vet and lint run: the release binaries' (static, no cgo, paths
# trimmed, no VCS stamp). Go's build cache keys each compiled package on these, so with them the same everywhere
# the Kubernetes libraries are compiled once (for the manager) and reused by the e2e suite, `go vet`, the linter and
# the test binaries, in this tree and in CI's checks tree. Measured on a cold cache (2026-12-02): compiling the e2e
# suite after the manager took 45 CPU-seconds with the same settings, 189 with Go's defaults (cgo on, paths kept).
# A developer's own `go test -race` (which needs cgo) runs outside make and is unaffected.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath -buildvcs=false

# Image names: no registry exists here, images are built locally and loaded into kind.
SERVER_IMAGE ?= hyperstatic/server:$(VERSION)
OPERATOR_IMAGE ?= hyperstatic/operator:$(VERSION)
K6_IMAGE ?= hyperstatic/k6:$(VERSION)

# progress prints a timestamped step line; long targets call it so a person sees where they are.
progress = echo "==> [$$(date +%H:%M:%S)] $(1)"

include make/tools.mk
include make/server.mk
include make/bench.mk
include make/operator.mk
include make/cluster.mk
include make/k6.mk
include make/traefik.mk
include make/certmanager.mk
include make/sso.mk
include make/images.mk
include make/chart.mk
include make/e2e.mk
include make/demo.mk
include make/verify.mk
include make/benchoperator.mk
include make/monitoring.mk

##@ General
.PHONY: test
test: go-test go-test-sso server-test cluster-test bench-test chart-check monitoring-test ## Unit + envtest (Go), sign-in through the real Dex, the server's Rust tests, the tooling's tests, the chart's drift check and its alerts and dashboard: the README's test command.

# help prints the targets that have a `## description`, under the `##@ Group` line above them, each followed by
# the targets it runs first, gathered from every rule line that names it (also those in other files, such as
# `bench: bench-<name>`): no prerequisite stays hidden. make/help.awk says how; the files are read in include order
# (this file first), so the groups come out in that order and targets in file order.
.PHONY: help
help: ## List targets, grouped, each with the targets it runs first ("first:").
	@awk -f $(ROOT)/make/help.awk $(MAKEFILE_LIST)

# test-build compiles what `make test` runs and runs none of it: CI does it at the lowest priority beside the e2e
# suite (hack/ci-beside.sh), where the CPUs mostly wait, so that `make test` afterwards only runs. Test binaries
# are compiled, never started: a test starved of CPU by the e2e suite beside it could miss a deadline of its own.
.PHONY: test-build
test-build: envtest-assets server-build content-agent-build k6-build $(H2SPEC) $(HELM) $(DEX) bench-test-tools prometheus-installed server-test-tools ## Compile every test `make test` runs (Go test binaries, the server's test targets) and its tools, running none.
	@$(call progress,test-build: Go test binaries (compiled and linked, not run))
	@go test -count=1 -exec /bin/true $(GO_TEST_PACKAGES) >/dev/null
	@go test -tags monitoring -count=1 -exec /bin/true ./hack/monitoring/ >/dev/null
	@go test -tags dex -count=1 -exec /bin/true ./internal/sso/ >/dev/null
	@$(call progress,test-build: the server's test targets (cargo test --no-run))
	@cd $(SERVER_DIR) && CARGO_TARGET_DIR=$(SERVER_CARGO_TARGET) $(CARGO) test --locked --no-run
