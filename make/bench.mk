##@ Benchmarks
# make/bench.mk — benchmarks. The server benchmark's harness lives in images/server/bench/ (README.md there).

# Knobs, all overridable on the command line: make bench-server BENCH_SECONDS=20 REPS=5
BENCH_SECONDS ?= 10
REPS ?= 3
WARMUP_SECONDS ?= 2
BENCH_CPU_QUOTA ?= 40
IDLE_CONNS ?= 10000
BENCH_WORKLOADS ?=
BENCH_OUT ?= $(ROOT)/_out/bench
BENCH_ENV = BENCH_SECONDS=$(BENCH_SECONDS) REPS=$(REPS) WARMUP_SECONDS=$(WARMUP_SECONDS) \
  BENCH_CPU_QUOTA=$(BENCH_CPU_QUOTA) IDLE_CONNS=$(IDLE_CONNS) BENCH_WORKLOADS="$(BENCH_WORKLOADS)" BENCH_OUT="$(BENCH_OUT)"

.PHONY: bench
bench: bench-server ## Run every benchmark there is (today: bench-server).

.PHONY: bench-server
bench-server: ## Our server vs a tuned nginx on loopback, pinned + CPU-capped: req/s, CPU, p99, RSS, ratios; writes _out/bench/ (≈6 min).
	@$(call progress,building the server for the benchmark)
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,benchmarking $$bin against nginx); \
	  $(BENCH_ENV) images/server/bench/run.sh "$$bin"

.PHONY: bench-self-check
bench-self-check: ## nginx against itself through the same harness: every ratio should come out ≈ 1×.
	@$(BENCH_ENV) images/server/bench/run.sh nginx

.PHONY: bench-test
bench-test: ## Unit tests of the benchmark harness (parsers, medians, report and chart).
	@cd images/server/bench && python3 -m unittest discover -s tests -t . -v

.PHONY: bench-profile
bench-profile: ## Diagnose the server vs nginx: syscalls per request (strace -c) and perf hot spots; writes _out/bench/profile/.
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  BENCH_PROFILE=1 BENCH_WORKLOADS="$(BENCH_WORKLOADS)" BENCH_OUT="$(BENCH_OUT)" images/server/bench/run.sh "$$bin"
