##@ Traefik (e2e routes)
# make/traefik.mk — Traefik, the ingress controller the e2e route scenario sends requests through: a static
# binary built from the Go module proxy into $(CACHE_DIR) (so a warm machine never rebuilds it). The FROM-scratch
# image the e2e suite loads into kind with the others is e2e-traefik-image in make/images.mk.
#
# Pinned to 3.6: Traefik 3.6 implements Gateway API v1.4 (the version of the operator's go.mod, whose standard
# CRDs the scenario installs); 3.7 needs the v1.5 CRDs (TLSRoute v1). Traefik's go.mod has replace directives, so
# `go install module@version` refuses it: the module is downloaded and built from its directory in the module cache.

TRAEFIK_VERSION ?= v3.6.25
# The e2e route scenario (12) runs by default: `make e2e-images` builds this image and `make e2e-test` hands it to
# the suite. A cold build takes minutes on a quiet 2-core machine, which the cold CI can afford, so CI runs it (a
# green run with the scenario skipped would hide it). E2E_ROUTES=0 leaves it out on a developer's machine: the
# scenario then skips, saying so, and under CI=true it fails instead.
E2E_ROUTES ?= 1
TRAEFIK_MODULE := github.com/traefik/traefik/v3
TRAEFIK_CACHE := $(CACHE_DIR)/traefik/traefik-$(TRAEFIK_VERSION)
TRAEFIK_IMAGE ?= hyperstatic/e2e-traefik:$(TRAEFIK_VERSION)

.PHONY: traefik-build
traefik-build: ## Build static Traefik $(TRAEFIK_VERSION) (CGO_ENABLED=0) into $(CACHE_DIR) (cold: several minutes).
	@if [ ! -x "$(TRAEFIK_CACHE)" ]; then \
	  $(call progress,building Traefik $(TRAEFIK_VERSION) from the Go module proxy (cached in $(TRAEFIK_CACHE))); \
	  start=$$(date +%s) && \
	  dir=$$(go mod download -json $(TRAEFIK_MODULE)@$(TRAEFIK_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && \
	  [ -d "$$dir" ] && mkdir -p "$(dir $(TRAEFIK_CACHE))" && tmp=$$(mktemp -d) && \
	  (cd "$$dir" && CGO_ENABLED=0 go build -trimpath \
	    -ldflags='-s -w -X $(TRAEFIK_MODULE)/pkg/version.Version=$(TRAEFIK_VERSION)' -o "$$tmp/traefik" ./cmd/traefik) && \
	  mv "$$tmp/traefik" "$(TRAEFIK_CACHE)" && rmdir "$$tmp" && \
	  $(call progress,Traefik $(TRAEFIK_VERSION) built in $$(( $$(date +%s) - start )) s); \
	fi
