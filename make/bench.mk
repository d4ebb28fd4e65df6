##@ Benchmarks
# make/bench.mk — benchmarks. The server benchmark's harness lives in images/server/bench/ (README.md there).

# Knobs, all overridable on the command line: make bench-server BENCH_SECONDS=20 REPS=5
BENCH_SECONDS ?= 7
REPS ?= 3
WARMUP_SECONDS ?= 2
BENCH_CPU_QUOTA ?= 40
IDLE_CONNS ?= 10000
BENCH_WORKLOADS ?=
PEERS ?= nginx,lighttpd,h2o,caddy
BENCH_FLOOR ?= 1
BENCH_OUT ?= $(ROOT)/_out/bench
BENCH_ENV = BENCH_SECONDS=$(BENCH_SECONDS) REPS=$(REPS) WARMUP_SECONDS=$(WARMUP_SECONDS) \
  BENCH_CPU_QUOTA=$(BENCH_CPU_QUOTA) IDLE_CONNS=$(IDLE_CONNS) BENCH_WORKLOADS="$(BENCH_WORKLOADS)" BENCH_OUT="$(BENCH_OUT)" \
  PEERS="$(PEERS)" BENCH_FLOOR=$(BENCH_FLOOR) CADDY=$(BIN)/caddy NGINX_TRIXIE=$(NGINX_TRIXIE)
# Caddy, the one peer not from Debian, is built from the Go module proxy first when PEERS names it
comma := ,
CADDY_IF_PEER = $(if $(filter caddy,$(subst $(comma), ,$(PEERS))),$(CADDY))
# nginx 1.26 of Debian 13 (HTTP/3; Debian 12's 1.22 has none), an opt-in peer: its tree is debootstrapped into the
# cache first, once (77 s measured on a busy machine), when PEERS names it (PEERS=nginx-1.26,caddy). CI runs no bench.
NGINX_TRIXIE := $(CACHE_DIR)/trixie-nginx
NGINX_TRIXIE_IF_PEER = $(if $(filter nginx-1.26,$(subst $(comma), ,$(PEERS))),nginx-trixie)

.PHONY: nginx-trixie
nginx-trixie: ## Debootstrap Debian 13 with nginx 1.26 (HTTP/3) into the cache, the opt-in bench peer nginx-1.26 (once; a minute or more).
	@$(ROOT)/hack/trixie-root.sh $(NGINX_TRIXIE) nginx

# `bench` runs every benchmark, one after the other. A benchmark in a make file of its own joins it with a line
# `bench: bench-<name>` there; `make help` lists what bench runs, from every such line.
.PHONY: bench
bench: bench-server bench-site bench-rules bench-pool bench-access ## Run every benchmark there is, one after the other (each writes under _out/bench/).

.PHONY: bench-server
bench-server: $(CADDY_IF_PEER) $(NGINX_TRIXIE_IF_PEER) ## Our server vs nginx, lighttpd, h2o, Caddy and a canned-response floor on loopback, pinned + CPU-capped: plain HTTP, HTTPS, HTTP/2 (h2load) and HTTP/3 (h3load, on the servers that have it) rows; writes _out/bench/ (≈40 min; PEERS=nginx REPS=1 BENCH_SECONDS=3 or BENCH_WORKLOADS=h2-100b-m10,... for less).
	@$(call progress,building the server for the benchmark)
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,benchmarking $$bin against $(PEERS) and the floor); \
	  $(BENCH_ENV) images/server/bench/run.sh "$$bin"

# Real-site workload: the Python 3.11 docs (Debian's python3.11-doc), precompressed by our server, served by ours and
# every peer under the same pin and cap; startup time, RSS, req/s and req/CPU-s for a browser-like request mix.
SITE_CONNECTIONS ?= 10,100
STARTUP_REPS ?= $(REPS)

.PHONY: bench-site
bench-site: $(CADDY_IF_PEER) ## Python 3.11 docs served by ours vs nginx, lighttpd, h2o, Caddy: startup, RSS, req/s, req/CPU-s over HTTP/1.1 and h2 (SITE_H2=0: without); writes _out/bench/site/ (≈5 min, +2 min to precompress on the first run; REPS=1 BENCH_SECONDS=3 for less).
	@$(call progress,building the server for the site benchmark)
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,site benchmark: $$bin against $(PEERS) on the Python 3.11 docs); \
	  $(BENCH_ENV) SITE_CONNECTIONS="$(SITE_CONNECTIONS)" STARTUP_REPS=$(STARTUP_REPS) images/server/bench/site.sh "$$bin"; \
	  rc=$$?; $(call progress,site benchmark finished (exit $$rc); results in $(BENCH_OUT)/site/); exit $$rc

.PHONY: bench-rules
bench-rules: ## Our server on the benchmark site with 1,000 redirect rules (_redirects) and 100 header rules vs the same site without, interleaved; goal within 5 %; writes _out/bench/rules/ (≈2 min with REPS=3 BENCH_SECONDS=7).
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,site rules overhead: $$bin with and without 1000 redirect + 100 header rules); \
	  $(BENCH_ENV) BENCH_RULES=1 PEERS=nginx BENCH_FLOOR=0 images/server/bench/run.sh "$$bin"

.PHONY: bench-sites-mode
bench-sites-mode: ## One site under --sites (the mode a site with previews runs in) vs the same tree under --root, interleaved; goal within 5 % per server CPU (docs/design/deploys.md step 4); writes _out/bench/sitesmode/ (≈2 min with REPS=3 BENCH_SECONDS=7).
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,--sites mode cost: $$bin on one site under --sites and under --root); \
	  $(BENCH_ENV) BENCH_SITES_MODE=1 PEERS=nginx BENCH_FLOOR=0 images/server/bench/run.sh "$$bin"

# Private sites and fair share (issue 44, hsbench/access.py): fair share with a new X-Forwarded-For address on every
# request (a million and more per run) vs the same trusted proxy without limits, goal within 5 % and RSS bounded by
# --client-table-size; a basic-auth and a cookie-protected 100 B request vs a public one, goal within 10 %.
ACCESS_REPS ?= 7
ACCESS_CASES ?= fairshare,access

.PHONY: bench-access
bench-access: ## Fair share with a new X-Forwarded-For address per request (about 6 M per variant) vs off (req/CPU-s, RSS), basic auth and SSO cookie vs public, interleaved; writes _out/bench/access/ (≈14 min at ACCESS_REPS=7; ACCESS_CASES=access for one case).
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,access and fair-share cost: $$bin ($(ACCESS_CASES))); \
	  $(BENCH_ENV) REPS=$(ACCESS_REPS) ACCESS_CASES="$(ACCESS_CASES)" BENCH_ACCESS=1 PEERS=nginx BENCH_FLOOR=0 \
	    images/server/bench/run.sh "$$bin"

# One server, many sites (issue 40): ours with --sites on a pool of small sites and on copies of the Python docs, each
# against the same binary with --root on one of its sites, interleaved; RSS, start to first 200, a cold site's first
# request, req/CPU-s on a mix hot on a tenth of the sites. The trees are written once into _out/bench/pool/trees.
POOL_SITES ?= 10000
POOL_DOCS_SITES ?= 100
POOL_CASES ?= small,docs
POOL_MEMORY_LIMIT ?= 2GiB

.PHONY: bench-pool
bench-pool: ## One server, many sites (issue 40): --sites on 10,000 small sites and on 100 Python docs copies vs --root on one, interleaved: RSS, start to first 200, a cold site's first request, req/CPU-s on a mix hot on 10 % (goal ≥ 0.9×) and where the gap goes (POOL_BREAKDOWN); writes _out/bench/pool/ (≈8 min, +3 min to write the trees on the first run; POOL_SITES=1000 REPS=1 BENCH_SECONDS=3 for less).
	@$(call progress,building the server for the pool benchmark)
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,pool benchmark: $$bin with --sites ($(POOL_CASES)) against --root); \
	  $(BENCH_ENV) POOL_SITES=$(POOL_SITES) POOL_DOCS_SITES=$(POOL_DOCS_SITES) POOL_CASES="$(POOL_CASES)" \
	    POOL_MEMORY_LIMIT="$(POOL_MEMORY_LIMIT)" STARTUP_REPS=$(STARTUP_REPS) images/server/bench/pool.sh "$$bin"; \
	  rc=$$?; $(call progress,pool benchmark finished (exit $$rc); results in $(BENCH_OUT)/pool/); exit $$rc

.PHONY: bench-ab
bench-ab: ## Interleaved A/B of server flags, builds or floor variants: make bench-ab AB='plain=ours; disk=ours:--max-memory-file-size=4KiB' BENCH_WORKLOADS=8k-set; writes _out/bench/ab/.
	@if [ -z "$(AB)" ]; then echo "bench-ab needs AB='NAME=KIND[:ARGS]; ...' (images/server/bench/hsbench/ab.py)" >&2; exit 2; fi
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(BENCH_ENV) AB="$(AB)" PEERS=nginx BENCH_FLOOR=1 images/server/bench/run.sh "$$bin"

# The browser check (issue 26): a real browser on a real page gets every resource from our server over h2.
BROWSER_PAGE ?= /howto/logging.html
BROWSER_SERVER_ARGS ?=

.PHONY: browser-check
browser-check: ## Headless Chromium (Debian) loads a Python docs page over HTTPS from our release server on loopback: fails unless the page and every resource (> 5) report nextHopProtocol h2, then h3 with QUIC forced to the origin (BROWSER_SERVER_ARGS=--http2=false or --http3=false must fail).
	@$(call progress,building the server for the browser check)
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(call progress,browser check: Chromium loads $(BROWSER_PAGE) from $$bin over HTTPS); \
	  BROWSER_PAGE="$(BROWSER_PAGE)" BROWSER_SERVER_ARGS="$(BROWSER_SERVER_ARGS)" \
	    images/server/bench/browser-check.sh "$$bin" "$(PYDOCS_DIR)"

.PHONY: bench-self-check
bench-self-check: ## nginx against itself through the same harness: every ratio should come out ≈ 1×.
	@$(BENCH_ENV) PEERS=nginx BENCH_FLOOR=0 images/server/bench/run.sh nginx

# floor_uring.c (the floor on io_uring) links Debian's liburing and the floor tests build it: install the headers when
# missing (apt-ensure, make/verify.mk).
.PHONY: liburing-installed
liburing-installed: ## Install Debian's liburing-dev when its header is missing (bench-test needs it for floor_uring.c).
	@$(call apt-ensure,[ -e /usr/include/liburing.h ],liburing-dev)

# The harness's tests run the real tools they drive: wrk (the pool's Lua replay) and htpasswd (bench-access's bcrypt
# users, apache2-utils). A fresh machine has neither; without them those tests could only skip or fail.
.PHONY: bench-test-tools
bench-test-tools: liburing-installed ## Install the Debian tools the harness's tests run (wrk, htpasswd) when missing.
	@$(call apt-ensure,command -v wrk && command -v htpasswd,wrk apache2-utils)

.PHONY: bench-test
bench-test: bench-test-tools ## Unit tests of the benchmark harness (configs, parsers, medians, ratios, report, chart, floor responder, site URL list and checks, HTTPS setup and load client).
	@cd images/server/bench && python3 -m unittest discover -s tests -t . -v

.PHONY: bench-profile
bench-profile: ## Diagnose the server vs every peer and the floor: syscalls and user/system CPU per request, perf hot spots; writes _out/bench/profile/.
	@bin="$$($(MAKE) -s server-build | tail -n 1)"; \
	  if [ ! -x "$$bin" ]; then echo "make server-build did not print an executable path (got '$$bin')" >&2; exit 1; fi; \
	  $(BENCH_ENV) BENCH_PROFILE=1 images/server/bench/run.sh "$$bin"
