##@ Server (Rust, images/server)
# make/server.mk — the native static server (images/server, Rust): build, tests, fuzzing. Its images
# (server-image, site-image) are in make/images.mk.

SERVER_DIR := $(ROOT)/images/server
SERVER_TARGET := x86_64-unknown-linux-gnu
# The static release binary every image and benchmark uses.
SERVER_BIN := $(SERVER_DIR)/target/$(SERVER_TARGET)/release/hyperstatic-server
CARGO ?= cargo
FUZZ_SECONDS ?= 30
CARGO_FUZZ_VERSION ?= 0.13.2
CARGO_FUZZ := $(BIN)/bin/cargo-fuzz

.PHONY: server-build
server-build: ## Build the static hyperstatic-server release binary and print its path.
	@$(call progress,building the static server binary)
	@cd $(SERVER_DIR) && RUSTFLAGS='-C target-feature=+crt-static' $(CARGO) build --locked --release --target $(SERVER_TARGET)
	@echo "$(SERVER_BIN)"

.PHONY: server-test
server-test: h2spec ## The server's Rust tests: unit tests per module and integration tests against the real binary; h2spec.
	@$(call progress,server tests)
	@cd $(SERVER_DIR) && $(CARGO) test --locked

.PHONY: h2spec
h2spec: server-build $(H2SPEC) ## h2spec (145 cases) against the release server over TLS (ALPN h2) and h2c; fails on a failure the server README does not list.
	@$(call progress,h2spec against the release server: TLS and h2c)
	@$(SERVER_DIR)/h2spec/run.sh $(SERVER_BIN) $(H2SPEC) $(SERVER_DIR)/README.md

.PHONY: server-check-example
server-check-example: server-build ## Validate the example site with --check.
	@$(SERVER_BIN) --check --root $(SERVER_DIR)/example/site

$(CARGO_FUZZ):
	@$(call progress,installing cargo-fuzz $(CARGO_FUZZ_VERSION))
	@$(CARGO) install --locked --root $(BIN) cargo-fuzz --version $(CARGO_FUZZ_VERSION)

# cargo-fuzz needs nightly features: use a nightly toolchain when rustup has one, else let stable act as
# nightly (RUSTC_BOOTSTRAP=1). Without a usable ASan runtime, run unsanitized (--sanitizer none).
.PHONY: server-fuzz
server-fuzz: $(CARGO_FUZZ) ## Fuzz the request parser, the path normaliser, TLS input, the _redirects parser, the HTTP/2 frame engine and the HPACK decoder for FUZZ_SECONDS each (default 30).
	@cd $(SERVER_DIR)/fuzz && export PATH="$(BIN)/bin:$$PATH" && \
	if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then tc="+nightly"; else tc=""; export RUSTC_BOOTSTRAP=1; fi; \
	san=""; \
	if ! cargo $$tc fuzz build parse_request >/dev/null 2>&1; then san="--sanitizer none"; fi; \
	for t in parse_request normalize_path tls_records parse_redirects h2_frames hpack_decode; do \
	  $(call progress,fuzzing $$t for $(FUZZ_SECONDS)s $$tc $$san); \
	  mkdir -p corpus/$$t; \
	  cargo $$tc fuzz run $$san $$t corpus/$$t seeds/$$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 2>&1 | tail -n 3; \
	  test "$${PIPESTATUS[0]}" = 0 || { echo "fuzz target $$t failed"; exit 1; }; \
	done
