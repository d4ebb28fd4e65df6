##@ Server (Rust, images/server)
# make/server.mk — the native static server (images/server, Rust): build, tests, fuzzing. Its images
# (server-image, site-image) are in make/images.mk.

SERVER_DIR := $(ROOT)/images/server
SERVER_TARGET := x86_64-unknown-linux-gnu
# Cargo's build directories are in the cache, outside the clone, so a new clone (every CI run) compiles only the
# server's own crate, not its hundred dependencies again. One for the server, one for its fuzz crate (a workspace of
# its own, built with other flags). Cargo locks a build directory while it builds, so clones may share it.
SERVER_CARGO_TARGET ?= $(CACHE_DIR)/cargo-target/server
FUZZ_CARGO_TARGET ?= $(CACHE_DIR)/cargo-target/fuzz
# The static release binary every image and benchmark uses.
SERVER_BIN := $(SERVER_CARGO_TARGET)/$(SERVER_TARGET)/release/hyperstatic-server
CARGO ?= cargo
FUZZ_SECONDS ?= 30
CARGO_FUZZ_VERSION ?= 0.13.2
CARGO_FUZZ := $(BIN)/bin/cargo-fuzz

.PHONY: server-build
server-build: ## Build the static hyperstatic-server release binary and print its path.
	@$(call progress,building the static server binary)
	@cd $(SERVER_DIR) && CARGO_TARGET_DIR=$(SERVER_CARGO_TARGET) RUSTFLAGS='-C target-feature=+crt-static' \
	  $(CARGO) build --locked --release --target $(SERVER_TARGET)
	@echo "$(SERVER_BIN)"

# How many of the server's test binaries run at a time (hack/server-tests.sh says why: they mostly wait).
SERVER_TEST_JOBS ?= 3

.PHONY: server-test
server-test: h2spec h3-interop server-test-tools ## The server's Rust tests: unit tests per module and integration tests against the real binary, SERVER_TEST_JOBS binaries at a time; h2spec; HTTP/3 against aioquic and quic-go.
	@$(call progress,server tests)
	@HYPERSTATIC_H3CURL=$(H3_CURL) CARGO_TARGET_DIR=$(SERVER_CARGO_TARGET) $(ROOT)/hack/server-tests.sh $(SERVER_DIR) $(SERVER_TEST_JOBS)

# Debian packages the server's tests run as real clients and peers, installed when missing (refreshing the package
# lists only when the first attempt fails: a fresh machine has none): h2load (nghttp2-client) drives HTTP/2 and
# HTTP/1.1 in tests/fair_share.rs and tests/access.rs; HAProxy is the PROXY protocol's real sender in
# tests/proxy_haproxy.rs.
SERVER_TEST_PACKAGES := h2load:nghttp2-client haproxy:haproxy

.PHONY: server-test-tools
server-test-tools: ## Install the Debian packages the server's tests use when missing: nghttp2-client (h2load), haproxy.
	@need=""; for p in $(SERVER_TEST_PACKAGES); do command -v $${p%%:*} >/dev/null 2>&1 || need="$$need $${p#*:}"; done; \
	  [ -z "$$need" ] || { \
	  $(call progress,installing Debian packages for the server tests:$$need); \
	  apt="env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$need"; \
	  { $(call as-root,$$apt) ; } >/dev/null 2>&1 || \
	  { { $(call as-root,apt-get update -qq) ; } && { $(call as-root,$$apt) ; } >/dev/null; }; }

.PHONY: h2spec
h2spec: server-build $(H2SPEC) ## h2spec (145 cases) against the release server over TLS (ALPN h2) and h2c; fails on a failure the server README does not list.
	@$(call progress,h2spec against the release server: TLS and h2c)
	@$(SERVER_DIR)/h2spec/run.sh $(SERVER_BIN) $(H2SPEC) $(SERVER_DIR)/README.md

# HTTP/3 (--http3) against independent clients: aioquic from PyPI, pinned, in a venv of its own (made once), and
# quic-go from the Go module proxy, pinned in the client's own module (images/server/h3interop/quicgo/go.mod, so
# the root go.mod does not carry it), built into the cache (go's build cache makes a rebuild a link).
H3_VENV ?= $(CACHE_DIR)/h3-interop-venv
AIOQUIC_VERSION ?= 1.7.2
H3_QUICGO := $(CACHE_DIR)/h3-interop-quicgo
# tests/h2.rs's HTTP/3 client (h3interop/quicgo/h3curl: one request, curl's -D/-o output), built beside it.
H3_CURL := $(CACHE_DIR)/h3curl

.PHONY: h3-interop
h3-interop: server-build ## HTTP/3 against aioquic (GETs byte-exact, 404, HEAD, 304, 206, 300 streams, the same answers as HTTP/2, Alt-Svc, drain) and quic-go (the interop runner's cases).
	@$(call progress,HTTP/3 against aioquic $(AIOQUIC_VERSION) and quic-go)
	@test -x $(H3_VENV)/bin/python || python3 -m venv $(H3_VENV)
	@$(H3_VENV)/bin/python -c 'import aioquic' 2>/dev/null || $(H3_VENV)/bin/pip install -q aioquic==$(AIOQUIC_VERSION)
	@cd $(SERVER_DIR)/h3interop/quicgo && go build -o $(H3_QUICGO) . && go build -o $(H3_CURL) ./h3curl
	@$(H3_VENV)/bin/python $(ROOT)/hack/h3-interop.py $(SERVER_BIN) --quic-go $(H3_QUICGO)

# The HTTP/3 load client of issue 42's benchmark rows (images/server/h3interop/quicgo/h3load; h2load's shape), in
# the same module as the interop client, so one pinned quic-go builds both.
H3LOAD := $(CACHE_DIR)/h3load

.PHONY: h3load-build
h3load-build: ## Build $(H3LOAD): the HTTP/3 load client (quic-go) for h3 benchmark rows; `$(H3LOAD) -h` for its flags.
	@cd $(SERVER_DIR)/h3interop/quicgo && go build -o $(H3LOAD) ./h3load

# h3load's twin on quinn (h3interop/quinnload): the same flags and summary, a client that honours the server's
# ACK_FREQUENCY frame (--http3-ack-every), which quic-go does not. Bench only: H3LOAD_BIN=$(H3LOAD_QUINN) make bench-ab ...
H3LOAD_QUINN := $(CACHE_DIR)/h3load-quinn/release/h3load-quinn

.PHONY: h3load-quinn-build
h3load-quinn-build: ## Build $(H3LOAD_QUINN): h3load's twin on quinn, for the h3 rows with a client that honours ACK_FREQUENCY.
	@cd $(SERVER_DIR)/h3interop/quinnload && CARGO_TARGET_DIR=$(CACHE_DIR)/h3load-quinn cargo build --release --locked -q

# Debian 13 (trixie) minbase with its curl 8.14 (HTTP/3) and ngtcp2-client, debootstrapped into the cache from the
# mirror apt uses: about 240 MB and minutes to make (582 s measured under load), so not part of `make test` yet.
H3_TRIXIE := $(CACHE_DIR)/trixie-h3

.PHONY: h3-trixie-clients
h3-trixie-clients: ## Debootstrap Debian 13 with curl (HTTP/3) and ngtcp2's client into the cache (once; minutes).
	@$(ROOT)/hack/trixie-root.sh $(H3_TRIXIE) curl,ngtcp2-client,ca-certificates

.PHONY: h3-interop-trixie
h3-interop-trixie: server-build h3-trixie-clients ## make h3-interop's aioquic part, then Debian 13's curl and gtlsclient over HTTP/3 (bodies byte-exact).
	@$(call progress,HTTP/3 against aioquic $(AIOQUIC_VERSION) and Debian 13's curl and gtlsclient)
	@test -x $(H3_VENV)/bin/python || python3 -m venv $(H3_VENV)
	@$(H3_VENV)/bin/python -c 'import aioquic' 2>/dev/null || $(H3_VENV)/bin/pip install -q aioquic==$(AIOQUIC_VERSION)
	@$(H3_VENV)/bin/python $(ROOT)/hack/h3-interop.py $(SERVER_BIN) --trixie $(H3_TRIXIE)

# Behaviour-preserving changes are shown with this: two binaries on one generated site (every answer kind), the
# same raw HTTP/1.1 exchanges and h2c requests (curl) to each, answers compared byte for byte but for Date.
# OLD: the reference binary (e.g. main's release build); NEW: the one under test (default: this tree's, built).
# COMPARE_ARGS goes to the tool: --flag F (both), --old-flag F / --new-flag F (one), --site-flags-to, --pass, --dump.
.PHONY: server-compare-answers
server-compare-answers: ## Compare two server binaries' answers byte for byte (OLD=path [NEW=path] [COMPARE_ARGS=...]).
	@test -n "$(OLD)" || { echo "usage: make server-compare-answers OLD=path/to/old-binary [NEW=path] [COMPARE_ARGS=...]"; exit 2; }
	@new="$(NEW)"; if [ -z "$$new" ]; then $(MAKE) --no-print-directory server-build >/dev/null && new="$(SERVER_BIN)"; fi; \
	$(call progress,comparing the answers of $(OLD) and $$new); \
	python3 $(SERVER_DIR)/bench/compare-answers.py --old "$(OLD)" --new "$$new" $(COMPARE_ARGS)

.PHONY: server-check-example
server-check-example: server-build ## Validate the example site with --check.
	@$(SERVER_BIN) --check --root $(SERVER_DIR)/example/site

$(CARGO_FUZZ):
	@$(call progress,installing cargo-fuzz $(CARGO_FUZZ_VERSION))
	@$(CARGO) install --locked --root $(BIN) cargo-fuzz --version $(CARGO_FUZZ_VERSION)

# cargo-fuzz needs nightly features: use a nightly toolchain when rustup has one, else let stable act as
# nightly (RUSTC_BOOTSTRAP=1). Without a usable ASan runtime, run unsanitized (--sanitizer none). fuzz-env sets
# $$tc and $$san the same way for the build and the runs, so a run finds its target built.
FUZZ_TARGETS := parse_request normalize_path tls_records parse_redirects h2_frames hpack_decode h3_frames qpack_decode proxy_v2 forwarded
# How many targets fuzz at once, each on its own core for FUZZ_SECONDS (CI: 2, the machine's cores).
FUZZ_JOBS ?= 1
define fuzz-env
cd $(SERVER_DIR)/fuzz && export PATH="$(BIN)/bin:$$PATH" CARGO_TARGET_DIR=$(FUZZ_CARGO_TARGET) && \
	if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then tc="+nightly"; else tc=""; export RUSTC_BOOTSTRAP=1; fi; \
	san=""; \
	if ! cargo $$tc fuzz build parse_request >/dev/null 2>&1; then san="--sanitizer none"; fi
endef

.PHONY: server-fuzz-build
server-fuzz-build: $(CARGO_FUZZ) ## Build every fuzz target (cargo-fuzz first, cold: minutes), without running one: CI does it beside the e2e suite.
	@$(call progress,building the fuzz targets)
	@$(fuzz-env); cargo $$tc fuzz build $$san

.PHONY: server-fuzz
server-fuzz: $(CARGO_FUZZ) ## Fuzz the request parser, the path normaliser, TLS input, the _redirects parser, the HTTP/2 frame engine, the HPACK decoder, HTTP/3 stream framing, the QPACK decoder, the PROXY v2 header and the X-Forwarded-For walk for FUZZ_SECONDS each (default 30), FUZZ_JOBS at a time.
	@$(fuzz-env); \
	printf '%s\n' $(FUZZ_TARGETS) | xargs -P $(FUZZ_JOBS) -I{} bash -c ' \
	  t={}; echo "==> [$$(date +%H:%M:%S)] fuzzing $$t for $(FUZZ_SECONDS)s $$0 $$1"; mkdir -p corpus/$$t; \
	  out=$$(cargo $$0 fuzz run $$1 $$t corpus/$$t seeds/$$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 2>&1); rc=$$?; \
	  printf "%s\n" "$$out" | tail -n 3 | sed "s/^/    $$t: /"; \
	  [ $$rc = 0 ] || { echo "fuzz target $$t failed"; printf "%s\n" "$$out" | tail -n 40; exit 255; }' "$$tc" "$$san"
