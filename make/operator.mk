##@ Operator (Go): code generation, tests, binary
# make/operator.mk — the operator: API code generation, manifests, Go tests, the manager binary.

OPERATOR_BIN := $(BIN)/manager
# Every Go package except the end-to-end suite (it needs a kind cluster and its own build tag).
GO_TEST_PACKAGES = $$(go list ./... | grep -v '/e2e')
GO_LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods for the API types.
	@$(call progress,generating deepcopy)
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs (config/crd/bases) and RBAC (config/rbac/role.yaml) from markers.
	@$(call progress,generating CRDs and RBAC)
	$(CONTROLLER_GEN) rbac:roleName=hyperstatic-operator crd paths=./... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: vet
vet: ## go vet every package.
	go vet $(GO_TEST_PACKAGES)

# go-test needs four things built first: the envtest binaries, the server binary (the contract tests run it, and
# the Git tests' fetchers run its --check), the content-agent binary (the contract tests run the operator's fetch and
# pull command lines through it), and k6 (the k6 script tests run the generated scripts through the real `k6 inspect`).
.PHONY: go-test
go-test: envtest-assets server-build content-agent-build k6-build ## Go unit tests, envtest suites (real kube-apiserver and etcd), contract tests against the real server and content-agent binaries, k6 script tests against real k6.
	@$(call progress,go test with envtest assets in $(ENVTEST_ASSETS) and server $(SERVER_BIN))
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" HYPERSTATIC_SERVER_BIN="$(SERVER_BIN)" HYPERSTATIC_CONTENT_AGENT_BIN="$(CONTENT_AGENT_BIN)" \
	  go test $(GO_TEST_PACKAGES) -count=1

.PHONY: operator-build
operator-build: ## Build the manager as a static binary into bin/manager.
	@$(call progress,building $(OPERATOR_BIN))
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(OPERATOR_BIN) ./cmd/manager

.PHONY: run
run: manifests ## Run the manager against the current kubeconfig's cluster (CRDs must be installed).
	go run -ldflags '$(GO_LDFLAGS)' ./cmd/manager --server-image $(SERVER_IMAGE) --content-agent-image $(CONTENT_AGENT_IMAGE)
