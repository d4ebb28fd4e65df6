##@ Verify: static checks
# make/verify.mk — `make verify`: every static check, in one target CI can run before the tests.
#
#   verify-go-format   gofmt -l and goimports -l on every Go file (tracked, or new and not ignored)
#   verify-go-vet      go vet: the root module, the e2e suite (-tags e2e), the small nested modules
#   verify-go-lint     golangci-lint run with .golangci.yml, the same three ways
#   verify-rust        cargo fmt --check and cargo clippy -D warnings for images/server and its fuzz crate
#   verify-chart       make chart-check: the chart matches config/, helm lint --strict, helm template
#   verify-generated   make generate manifests chart-sync changes nothing, and leaves no new file behind
#   verify-shell       shellcheck on every *.sh and every file whose shebang runs sh or bash
#   verify-server-layers  the server's module structure (hack/server-layers.py): no import circle, no import up
#                      its layers beyond the script's commented allow-list; prints the cfg walk's count
#
# `make verify` runs every check even when an earlier one fails, then lists the failed ones; each check is also
# a target of its own, for the loop "fix, rerun that one". The tools are pinned here and installed into ./bin
# the way make/tools.mk does it; shellcheck is Debian's package (installed when missing).

GOLANGCI_LINT_VERSION ?= v2.15.0
GOIMPORTS_VERSION ?= v0.52.0

GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GOIMPORTS := $(BIN)/goimports-$(GOIMPORTS_VERSION)

$(GOLANGCI_LINT):
	$(call go-install-tool,$@,github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION),golangci-lint)
$(GOIMPORTS):
	$(call go-install-tool,$@,golang.org/x/tools/cmd/goimports,$(GOIMPORTS_VERSION),goimports)

# `make tools` installs these too (make/tools.mk lists the others).
tools: $(GOLANGCI_LINT) $(GOIMPORTS)

# The module's own import path: goimports puts these imports in a group of their own, last.
GO_MODULE := hyperstatic.dev/hyperstatic
# Nested Go modules (each has its own go.mod, so ./... in the root skips them) that are vetted and linted too.
# e2e/kind/etcd, e2e/kind/coredns and e2e/kind/certmanager are not: each is a few lines around etcd's, CoreDNS's or
# cert-manager's controllers, and type-checking those trees would cost minutes; gofmt and goimports still cover
# them (e2e/kind/certmanager is compiled by make cert-manager-build).
VERIFY_GO_MODULES := e2e/kind/capfix e2e/kind/smoke e2e/kind/pause images/server/h3interop/quicgo

VERIFY_CHECKS := verify-go-format verify-go-vet verify-go-lint verify-rust verify-server-layers verify-chart verify-generated \
  verify-shell

# verify-files lists the repository's files matching the pathspecs $(1): tracked ones, and new ones git does not
# ignore (a file nobody added yet is checked before it is committed, not after). Deleted files are skipped.
verify-files = git -C $(ROOT) ls-files --cached --others --exclude-standard -- $(1) | sort -u | \
  while IFS= read -r f; do if [ -f "$$f" ]; then printf '%s\n' "$$f"; fi; done

.PHONY: verify
verify: ## Every static check (gofmt/goimports, vet, golangci-lint, rustfmt, clippy, chart, generated files, shellcheck); lists all failures.
	@start=$$(date +%s); failed=""; \
	for c in $(VERIFY_CHECKS); do \
	  t0=$$(date +%s); \
	  if $(MAKE) $$c; then echo "    $$c passed ($$(( $$(date +%s) - t0 )) s)"; \
	  else echo "    $$c FAILED ($$(( $$(date +%s) - t0 )) s)"; failed="$$failed $$c"; fi; \
	done; \
	if [ -n "$$failed" ]; then \
	  $(call progress,verify FAILED after $$(( $$(date +%s) - start )) s:$$failed (run each alone: make <check>)); exit 1; \
	fi; \
	$(call progress,verify passed in $$(( $$(date +%s) - start )) s)

# A file gofmt cannot parse fails the check too (gofmt says why) without skipping the goimports pass.
# controller-gen writes its zz_generated files its own way and `make generate` rewrites them: gofmt only.
.PHONY: verify-go-format
verify-go-format: $(GOIMPORTS) ## gofmt -l and goimports -l (module imports grouped last) on every Go file.
	@$(call progress,verify: gofmt and goimports)
	@cd $(ROOT) && files=$$($(call verify-files,'*.go')); rc=0; \
	bad=$$(gofmt -l $$files) || rc=1; \
	if [ -n "$$bad" ]; then echo "gofmt: not formatted (fix: gofmt -w FILE):"; echo "$$bad" | sed 's/^/  /'; rc=1; fi; \
	bad=$$(printf '%s\n' $$files | { grep -v '/zz_generated\.' || true; } | xargs -r $(GOIMPORTS) -local $(GO_MODULE) -l) || rc=1; \
	if [ -n "$$bad" ]; then \
	  echo "goimports: imports not grouped/sorted (fix: bin/goimports -local $(GO_MODULE) -w FILE):"; \
	  echo "$$bad" | sed 's/^/  /'; rc=1; fi; \
	exit $$rc

.PHONY: verify-go-vet
verify-go-vet: ## go vet: every package of the root module, the e2e suite (-tags e2e), the small nested modules.
	@$(call progress,verify: go vet ./... and -tags e2e ./e2e/...)
	@cd $(ROOT) && rc=0; \
	go vet ./... || rc=1; \
	go vet -tags e2e ./e2e/... || rc=1; \
	for m in $(VERIFY_GO_MODULES); do $(call progress,verify: go vet in $$m); (cd $$m && go vet ./...) || rc=1; done; \
	exit $$rc

# --config names the file explicitly: in the nested modules golangci-lint would find it by walking up anyway,
# but a stray .golangci.yml in a subdirectory must not silently change the rules. File names in the report are
# relative to the config file (v2's default), so the same for every run.
.PHONY: verify-go-lint
verify-go-lint: $(GOLANGCI_LINT) ## golangci-lint run (.golangci.yml): root module, e2e suite (-tags e2e), nested modules.
	@$(call progress,verify: golangci-lint $(GOLANGCI_LINT_VERSION) ./...)
	@cd $(ROOT) && rc=0; lint="$(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml"; \
	$$lint ./... || rc=1; \
	$(call progress,verify: golangci-lint --build-tags e2e ./e2e/...); \
	$$lint --build-tags e2e ./e2e/... || rc=1; \
	for m in $(VERIFY_GO_MODULES); do $(call progress,verify: golangci-lint in $$m); (cd $$m && $$lint ./...) || rc=1; done; \
	exit $$rc

# The fuzz crate is a workspace of its own (images/server/fuzz/Cargo.toml), so the server's cargo commands do
# not reach it. Checking it needs no nightly: clippy only type-checks, and libfuzzer-sys builds on stable. Its
# clippy shares the server's target directory: the two lock files pin the same versions of the dependencies they
# share, so cargo checks those once, not twice (a cold CI run spent 100 s on the fuzz crate's clippy alone). The
# fuzz build itself keeps its own directory (nightly and sanitizer flags: nothing there is shared).
# cargo fmt prints file names only (--message-format short): the whole diff of an unformatted tree runs to
# thousands of lines and buries the other checks' reports; `cargo fmt` there shows and fixes it.
.PHONY: verify-rust
verify-rust: ## cargo fmt --check and cargo clippy --all-targets --locked -D warnings: images/server and its fuzz crate.
	@rc=0; for d in $(SERVER_DIR):$(SERVER_CARGO_TARGET) $(SERVER_DIR)/fuzz:$(SERVER_CARGO_TARGET); do \
	  export CARGO_TARGET_DIR=$${d#*:}; d=$${d%%:*}; \
	  $(call progress,verify: cargo fmt --check and clippy in $${d#$(ROOT)/}); \
	  (cd $$d && $(CARGO) fmt --check --message-format short | \
	    awk -v r="$(ROOT)/" 'index($$0, r) == 1 { $$0 = substr($$0, length(r) + 1) } !seen[$$0]++') || \
	    { echo "cargo fmt: the files above are not formatted (fix: cd $${d#$(ROOT)/} && cargo fmt)"; rc=1; }; \
	  (cd $$d && $(CARGO) clippy --all-targets --locked -- -D warnings) || rc=1; \
	done; exit $$rc

.PHONY: verify-chart
verify-chart: chart-check ## The chart matches config/ and is lint-clean (make chart-check).

# Compare the generated trees with a copy taken just before generating, rather than with git's HEAD: on a clean
# clone (CI) that is the same thing, and in a working tree with edits not yet committed it reports only what
# generation changes. A generated file git does not know is reported too: it would be missing from the commit.
VERIFY_GENERATED_DIRS := api config charts
VERIFY_GENERATED_OUTPUTS := '*/zz_generated.*' config/crd config/rbac charts/hyperstatic/templates/crds charts/hyperstatic/files
.PHONY: verify-generated
verify-generated: ## make generate manifests chart-sync changes nothing in api/ config/ charts/ (and adds no file git lacks).
	@$(call progress,verify: generated DeepCopy code and CRDs and RBAC and chart copies are up to date)
	@cd $(ROOT); tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cp -a $(VERIFY_GENERATED_DIRS) "$$tmp/"; \
	$(MAKE) generate manifests chart-sync || { echo "make generate manifests chart-sync failed (above)"; exit 1; }; \
	rc=0; for d in $(VERIFY_GENERATED_DIRS); do diff -ru "$$tmp/$$d" "$$d" || rc=1; done; \
	if [ $$rc != 0 ]; then echo "generated files were out of date (diff above, now regenerated in place): commit them"; fi; \
	new=$$(git ls-files --others --exclude-standard -- $(VERIFY_GENERATED_OUTPUTS)); \
	if [ -n "$$new" ]; then echo "generated files git does not track (git add them):"; echo "$$new" | sed 's/^/  /'; rc=1; fi; \
	exit $$rc

# as-root runs a command as root: directly when we are root (CI, these machines), else through sudo.
as-root = if [ "$$(id -u)" = 0 ]; then $(1); else sudo $(1); fi
# apt-ensure installs Debian packages $(2) unless the shell test $(1) holds, refreshing the package lists only when
# the first attempt fails (a fresh machine has none): what a test needs is installed by the test's own target.
apt-ensure = { $(1); } >/dev/null 2>&1 || { \
	  $(call progress,installing $(2) (Debian packages)); \
	  apt="env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(2)"; \
	  { $(call as-root,$$apt) ; } >/dev/null 2>&1 || \
	  { { $(call as-root,apt-get update -qq) ; } && { $(call as-root,$$apt) ; } >/dev/null; }; }

# shellcheck comes from Debian (no Go or Rust build of it): install it when missing, refreshing the package
# lists only when the first attempt fails (a fresh machine has none).
.PHONY: shellcheck-installed
shellcheck-installed: ## Install Debian's shellcheck when missing (verify-shell needs it).
	@command -v shellcheck >/dev/null 2>&1 || { \
	  $(call progress,installing shellcheck (Debian package)); \
	  apt="env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck"; \
	  { $(call as-root,$$apt) ; } >/dev/null 2>&1 || \
	  { { $(call as-root,apt-get update -qq) ; } && { $(call as-root,$$apt) ; } >/dev/null; }; }

# Every *.sh, plus extensionless scripts whose shebang runs sh or bash (.ci/run). -x follows `source`d files;
# --source-path=SCRIPTDIR resolves `source "$(dirname "$0")/lib.sh"` next to the script, wherever make runs.
VERIFY_SHEBANG_RE := ^\#![[:space:]]*/[^[:space:]]*/(env[[:space:]]+)?(ba|da)?sh([[:space:]]|$$)
.PHONY: verify-shell
verify-shell: shellcheck-installed ## shellcheck every shell script (*.sh and sh/bash shebangs).
	@$(call progress,verify: shellcheck $$(shellcheck --version | sed -n 's/^version: //p'))
	@cd $(ROOT) && scripts=$$($(call verify-files,) | while IFS= read -r f; do \
	  case "$$f" in *.sh) echo "$$f" ;; *) head -c 200 "$$f" | head -n1 | grep -qE '$(VERIFY_SHEBANG_RE)' && echo "$$f" ;; esac; \
	done; true); \
	echo "    $$(echo "$$scripts" | wc -l) scripts"; \
	shellcheck -x --source-path=SCRIPTDIR $$scripts

# Reads images/server/src only (python3, standard library, about a second): import circles, imports that run up
# the layers declared in the script, and the cfg walk; the script's own tests (hack/test_server_layers.py, made-up
# crates) run first. Known ones being removed are warnings (the script's
# allow-lists); `python3 hack/server-layers.py --strict` shows what is left of them, `--walk` the walk.
.PHONY: verify-server-layers
verify-server-layers: ## The server's modules: no import circle, no import up the layers (hack/server-layers.py).
	@$(call progress,verify: the server's import circles and layers)
	@python3 -m unittest discover -s $(ROOT)/hack -p 'test_server_layers.py' 2>&1 | tail -n 1 | grep -qx OK || \
	  { python3 -m unittest discover -s $(ROOT)/hack -p 'test_server_layers.py'; exit 1; }
	@python3 $(ROOT)/hack/server-layers.py
