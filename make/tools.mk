##@ Tools
# Pinned tool versions, each installed into ./bin with `go install` from the Go module proxy.

CONTROLLER_GEN_VERSION ?= v0.19.0
KUSTOMIZE_VERSION ?= v5.7.1
HELM_VERSION ?= v3.19.0
KIND_VERSION ?= v0.30.0
K6_VERSION ?= v1.8.1
H2SPEC_VERSION ?= v2.2.1+incompatible
# Caddy is a benchmark peer (make bench-server), not a build tool: the server many users would pick today, built
# from the Go module proxy like every tool here (Debian's caddy is years behind).
CADDY_VERSION ?= v2.11.9

CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
KUSTOMIZE := $(BIN)/kustomize-$(KUSTOMIZE_VERSION)
HELM := $(BIN)/helm-$(HELM_VERSION)
KIND := $(BIN)/kind-$(KIND_VERSION)
K6 := $(BIN)/k6-$(K6_VERSION)
H2SPEC := $(BIN)/h2spec-$(H2SPEC_VERSION)
CADDY := $(BIN)/caddy-$(CADDY_VERSION)

# go-install-tool installs $(2)@$(3), whose binary is called $(4), as $(1): a versioned file name, so a
# version bump reinstalls; ./bin/$(4) links to it for people and scripts.
define go-install-tool
@[ -f "$(1)" ] || { $(call progress,installing $(2)@$(3)); \
  mkdir -p $(BIN) && GOBIN=$(BIN) CGO_ENABLED=0 go install $(2)@$(3) && mv "$(BIN)/$(4)" "$(1)"; }
@ln -sf "$$(basename $(1))" "$(BIN)/$(4)"
endef

.PHONY: tools
tools: $(CONTROLLER_GEN) $(KUSTOMIZE) $(HELM) $(KIND) ## Install the pinned Go tools into ./bin.

$(CONTROLLER_GEN):
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_GEN_VERSION),controller-gen)
$(KUSTOMIZE):
	$(call go-install-tool,$@,sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION),kustomize)
$(HELM):
	$(call go-install-tool,$@,helm.sh/helm/v3/cmd/helm,$(HELM_VERSION),helm)
$(KIND):
	$(call go-install-tool,$@,sigs.k8s.io/kind,$(KIND_VERSION),kind)
$(K6):
	$(call go-install-tool,$@,go.k6.io/k6,$(K6_VERSION),k6)
$(H2SPEC):
	$(call go-install-tool,$@,github.com/summerwind/h2spec/cmd/h2spec,$(H2SPEC_VERSION),h2spec)

$(CADDY):
	$(call go-install-tool,$@,github.com/caddyserver/caddy/v2/cmd/caddy,$(CADDY_VERSION),caddy)

.PHONY: caddy
caddy: $(CADDY) ## Install the pinned Caddy (CADDY_VERSION) into ./bin (a peer of make bench-server/bench-site; go install from the Go module proxy).
