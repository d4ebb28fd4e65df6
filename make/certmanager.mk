##@ cert-manager (spec.tls.issuerRef)
# make/certmanager.mk — cert-manager's own controllers (of the release e2e/kind/certmanager/go.mod pins), built
# from the Go module proxy into $(CACHE_DIR) like Traefik and k6, for the envtest that has them issue a site's
# certificate for real (controllers/staticsite, build tag certmanager) and for a kind scenario's image.
#
# cert-manager's official binary cannot be built from the proxy (its module path does not match its directory), so
# e2e/kind/certmanager is a small main of ours that runs the controllers of the main module (see its comment). Not
# part of `make test`: the cold build is minutes (docs/staticsite.md gives the figure), and the operator's own
# certificate tests run against cert-manager's real CRD without it (go-test). The e2e suite runs it in kind
# (scenario 21: issued, served, renewed under load), built with the other e2e images like Traefik.

# The certificate scenario (21) runs by default: `make e2e-images` builds cert-manager's image and `make e2e-test`
# hands it to the suite. E2E_CERT_MANAGER=0 leaves it out on a developer's machine: the scenario then skips, saying
# so, and under CI=true it fails instead.
E2E_CERT_MANAGER ?= 1

CERT_MANAGER_DIR := $(ROOT)/e2e/kind/certmanager
CERT_MANAGER_VERSION := $(shell sed -n 's|^[[:space:]]*\(require[[:space:]]*\)\{0,1\}github.com/cert-manager/cert-manager \(v[^ ]*\).*|\2|p' $(CERT_MANAGER_DIR)/go.mod | head -1)
CERT_MANAGER_BIN := $(CACHE_DIR)/cert-manager/cert-manager-controller-$(CERT_MANAGER_VERSION)-$(shell cat $(CERT_MANAGER_DIR)/main.go $(CERT_MANAGER_DIR)/go.sum 2>/dev/null | sha256sum | cut -c1-12)

.PHONY: cert-manager-build
cert-manager-build: ## Build cert-manager's controllers $(CERT_MANAGER_VERSION) (e2e/kind/certmanager) into $(CACHE_DIR) (cold: minutes).
	@if [ ! -x "$(CERT_MANAGER_BIN)" ]; then \
	  $(call progress,building cert-manager $(CERT_MANAGER_VERSION)'s controllers from the Go module proxy (cached in $(CERT_MANAGER_BIN))); \
	  start=$$(date +%s) && mkdir -p "$(dir $(CERT_MANAGER_BIN))" && tmp=$$(mktemp -d) && \
	  (cd "$(CERT_MANAGER_DIR)" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$$tmp/cert-manager-controller" .) && \
	  mv "$$tmp/cert-manager-controller" "$(CERT_MANAGER_BIN)" && rmdir "$$tmp" && \
	  $(call progress,cert-manager's controllers built in $$(( $$(date +%s) - start )) s); \
	fi

.PHONY: go-test-cert-manager
go-test-cert-manager: envtest-assets cert-manager-build ## The real cert-manager issues a site's certificate against envtest (self-signed CA ClusterIssuer).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" HYPERSTATIC_CERT_MANAGER_BIN="$(CERT_MANAGER_BIN)" \
	  go test -tags certmanager ./controllers/staticsite -run 'TestRealCertManager' -count=1
