##@ Traefik (e2e routes)
# make/traefik.mk — Traefik, the ingress controller the e2e route scenario sends requests through: a static
# binary built from the Go module proxy into $(CACHE_DIR) (so a warm machine never rebuilds it). The FROM-scratch
# image the e2e suite loads into kind with the others is e2e-traefik-image in make/images.mk.
#
# Pinned to 3.6: Traefik 3.6 implements Gateway API v1.4 (the version of the operator's go.mod, whose standard
# CRDs the scenario installs); 3.7 needs the v1.5 CRDs (TLSRoute v1). Traefik's go.mod has replace directives, so
# `go install module@version` refuses it: the module is downloaded and built from a copy of its source
# (hack/traefik-build.sh, which leaves out ACME's DNS providers, a third of the build, and says why).

TRAEFIK_VERSION ?= v3.6.25
# The e2e route scenario (12) runs by default: `make e2e-images` builds this image and `make e2e-test` hands it to
# the suite. A cold build takes minutes on a quiet 2-core machine, which the cold CI can afford, so CI runs it (a
# green run with the scenario skipped would hide it). E2E_ROUTES=0 leaves it out on a developer's machine: the
# scenario then skips, saying so, and under CI=true it fails instead.
E2E_ROUTES ?= 1
# The name says the recipe (-nodns: hack/traefik-build.sh), so a machine that cached the whole build makes this one.
TRAEFIK_CACHE := $(CACHE_DIR)/traefik/traefik-$(TRAEFIK_VERSION)-nodns
TRAEFIK_IMAGE ?= hyperstatic/e2e-traefik:$(TRAEFIK_VERSION)

.PHONY: traefik-build
traefik-build: ## Build static Traefik $(TRAEFIK_VERSION) (CGO_ENABLED=0, without ACME's DNS providers: hack/traefik-build.sh) into $(CACHE_DIR).
	@if [ ! -x "$(TRAEFIK_CACHE)" ]; then \
	  $(call progress,building Traefik $(TRAEFIK_VERSION) from the Go module proxy (cached in $(TRAEFIK_CACHE))); \
	  start=$$(date +%s) && $(ROOT)/hack/traefik-build.sh $(TRAEFIK_VERSION) $(TRAEFIK_CACHE) && \
	  $(call progress,Traefik $(TRAEFIK_VERSION) built in $$(( $$(date +%s) - start )) s); \
	fi
