##@ Images: build every image here, load them into kind
# make/images.mk — every container image, and loading them into the local kind cluster.
#
# Every image is FROM scratch plus a static binary built on this host: nothing is ever pulled (there is no
# registry). The binaries come from the make file of their part (server-build in server.mk, operator-build in
# operator.mk, k6-build and k6-runner in k6.mk, traefik-build in traefik.mk); this file only packs them.

# site-image: the directory baked into an image FROM $(SERVER_IMAGE), and the image's name.
SITE_DIR ?= $(SERVER_DIR)/example/site
SITE_IMAGE ?= hyperstatic/example-site:$(VERSION)
K6_IMAGE_DIR := $(ROOT)/images/k6
K6_IMAGE_CONTEXT := $(BIN)/k6-image-context
TRAEFIK_IMAGE_CONTEXT := $(BIN)/traefik-image-context
OPERATOR_IMAGE_CONTEXT := $(BIN)/operator-image-context
# The e2e suite's own images: an in-cluster HTTP client, and baked sites (example site; two versions for the
# rolling-update test).
FETCH_IMAGE ?= hyperstatic/e2e-fetch:$(VERSION)
FETCH_IMAGE_CONTEXT := $(BIN)/fetch-image-context
# The admin-port slow client (slowloris scenario), and the server image under a second tag: the "new" default
# server image of the operator-upgrade scenario.
SLOWLORIS_IMAGE ?= hyperstatic/e2e-slowloris:$(VERSION)
SLOWLORIS_IMAGE_CONTEXT := $(BIN)/slowloris-image-context
# The Git server of the content-from-Git tests (issue 30, scenario 14): smart HTTP(S) and SSH, fetch and push, auth.
GITSERVER_IMAGE ?= hyperstatic/e2e-gitserver:$(VERSION)
GITSERVER_BIN := $(BIN)/gitserver
SERVER_NEXT_IMAGE ?= $(SERVER_IMAGE)-next
# Dex (make/sso.mk), the identity provider the signIn site of scenario 19 logs in through.
DEX_IMAGE ?= hyperstatic/e2e-dex:$(VERSION)
# cert-manager's controllers (make/certmanager.mk) for the certificate scenario (21).
CERT_MANAGER_IMAGE ?= hyperstatic/e2e-cert-manager:$(VERSION)
CERT_MANAGER_IMAGE_CONTEXT := $(BIN)/cert-manager-image-context
EXAMPLE_SITE_IMAGE ?= hyperstatic/example-site:$(VERSION)
ROLLOUT_V1_IMAGE ?= hyperstatic/e2e-site-rollout:v1-$(VERSION)
ROLLOUT_V2_IMAGE ?= hyperstatic/e2e-site-rollout:v2-$(VERSION)
# The capacity and performance-gate scenario (issue 29): a synthetic site (e2e/cmd/capsites, 31 pages of 16 KiB),
# a harmless v2 (only a marker differs) and a heavy v3 (every page 20 times larger).
CAPACITY_DIR ?= $(ROOT)/_out/capacity
CAPACITY_IMAGE_PREFIX ?= hyperstatic/e2e-site-capacity
CAPACITY_IMAGES := $(CAPACITY_IMAGE_PREFIX):v1-$(VERSION) $(CAPACITY_IMAGE_PREFIX):v2-$(VERSION) $(CAPACITY_IMAGE_PREFIX):v3-$(VERSION)
# The real site (issue 12): the Python 3.11 docs (hack/python-docs.sh, 1,065 files, 67 MB) baked like any site,
# and a v2 for the rollout scenario: the same image plus one changed page (PYDOCS_PAGE with " (hyperstatic e2e
# v2)" added to its <title>), layered by e2e/testdata/site-update.Dockerfile so only that page is encoded again.
# The trees live under _out/ (PYDOCS_DIR, and PYDOCS_V2_DIR holding only the changed page).
PYDOCS_DIR ?= $(ROOT)/_out/pydocs
PYDOCS_V2_DIR ?= $(ROOT)/_out/pydocs-v2
PYDOCS_PAGE ?= index.html
PYDOCS_IMAGE ?= hyperstatic/pydocs-site:$(VERSION)
PYDOCS_V2_IMAGE ?= hyperstatic/pydocs-site:v2-$(VERSION)
E2E_IMAGES := $(FETCH_IMAGE) $(EXAMPLE_SITE_IMAGE) $(ROLLOUT_V1_IMAGE) $(ROLLOUT_V2_IMAGE) $(SLOWLORIS_IMAGE) $(SERVER_NEXT_IMAGE) \
  $(CAPACITY_IMAGES) $(PYDOCS_IMAGE) $(PYDOCS_V2_IMAGE) $(TRAEFIK_IMAGE) $(GITSERVER_IMAGE) $(CERT_MANAGER_IMAGE) $(DEX_IMAGE)

.PHONY: images
images: server-image operator-image k6-image content-agent-image ## Build the server, operator, k6 and content-agent images ($(VERSION)), FROM scratch, nothing pulled.
	@$(call progress,images ready: $(SERVER_IMAGE) $(OPERATOR_IMAGE) $(K6_IMAGE) $(CONTENT_AGENT_IMAGE))

.PHONY: server-image
server-image: server-build docker-engine ## Build the server image $(SERVER_IMAGE) (FROM scratch + the static binary; no pull).
	@$(call progress,building $(SERVER_IMAGE))
	@ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
	cp $(SERVER_BIN) "$$ctx/hyperstatic-server" && cp $(SERVER_DIR)/Dockerfile "$$ctx/Dockerfile" && \
	DOCKER_BUILDKIT=0 docker build --pull=false -q -t $(SERVER_IMAGE) "$$ctx"

.PHONY: site-image
site-image: server-image ## Bake SITE_DIR into SITE_IMAGE: images/server/example/Dockerfile, which precompresses the site in a build stage (no compression at pod start).
	@$(call progress,baking $(SITE_DIR) into $(SITE_IMAGE))
	@$(SERVER_BIN) --check --root $(SITE_DIR)
	@ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
	cp -r $(SITE_DIR) "$$ctx/site" && cp $(SERVER_DIR)/example/Dockerfile "$$ctx/Dockerfile" && \
	DOCKER_BUILDKIT=0 docker build --pull=false -q --build-arg SERVER_IMAGE=$(SERVER_IMAGE) -t $(SITE_IMAGE) "$$ctx"

.PHONY: operator-image
operator-image: operator-build docker-engine ## Build $(OPERATOR_IMAGE): the static manager binary (CGO_ENABLED=0) FROM scratch, user 65532.
	@rm -rf $(OPERATOR_IMAGE_CONTEXT) && mkdir -p $(OPERATOR_IMAGE_CONTEXT)
	@cp $(OPERATOR_BIN) $(OPERATOR_IMAGE_CONTEXT)/manager
	@cp $(ROOT)/images/operator/Dockerfile $(OPERATOR_IMAGE_CONTEXT)/Dockerfile
	@$(call progress,building $(OPERATOR_IMAGE))
	docker build --pull=false -q -t $(OPERATOR_IMAGE) $(OPERATOR_IMAGE_CONTEXT)

.PHONY: k6-image
k6-image: k6-build k6-runner docker-engine ## Build $(K6_IMAGE): FROM scratch, static k6 + runner, user 65532.
	@$(call progress,building $(K6_IMAGE))
	@rm -rf $(K6_IMAGE_CONTEXT) && mkdir -p $(K6_IMAGE_CONTEXT)
	@cp $(K6_CACHE) $(K6_IMAGE_CONTEXT)/k6
	@cp $(K6_RUNNER) $(K6_IMAGE_CONTEXT)/runner
	@cp $(K6_IMAGE_DIR)/Dockerfile $(K6_IMAGE_CONTEXT)/Dockerfile
	@if [ -f /etc/ssl/certs/ca-certificates.crt ]; then cp /etc/ssl/certs/ca-certificates.crt $(K6_IMAGE_CONTEXT)/; else : > $(K6_IMAGE_CONTEXT)/ca-certificates.crt; fi
	docker build --pull=false -t $(K6_IMAGE) $(K6_IMAGE_CONTEXT)
	@$(call progress,built $(K6_IMAGE))

.PHONY: e2e-images
e2e-images: e2e-fetch-image e2e-slowloris-image e2e-gitserver-image e2e-dex-image $(if $(filter 1,$(E2E_ROUTES)),e2e-traefik-image) $(if $(filter 1,$(E2E_CERT_MANAGER)),e2e-cert-manager-image) server-image ## Build the e2e suite's images: the in-cluster fetch and slowloris clients, the Git server, Dex, Traefik with E2E_ROUTES=1 (make/traefik.mk), cert-manager with E2E_CERT_MANAGER=1 (make/certmanager.mk), baked test sites (the real one too: the Python docs), the server retagged -next.
	docker tag $(SERVER_IMAGE) $(SERVER_NEXT_IMAGE)
	@$(MAKE) site-image SITE_DIR=$(ROOT)/images/server/example/site SITE_IMAGE=$(EXAMPLE_SITE_IMAGE)
	@$(MAKE) site-image SITE_DIR=$(ROOT)/e2e/testdata/rollout-v1 SITE_IMAGE=$(ROLLOUT_V1_IMAGE)
	@$(MAKE) site-image SITE_DIR=$(ROOT)/e2e/testdata/rollout-v2 SITE_IMAGE=$(ROLLOUT_V2_IMAGE)
	@$(MAKE) e2e-capacity-images
	@$(MAKE) e2e-pydocs-images

.PHONY: e2e-capacity-images
e2e-capacity-images: server-image ## Build the capacity scenario's sites $(CAPACITY_IMAGE_PREFIX):v1/v2/v3-$(VERSION) (v3: every page 20x heavier).
	cd $(ROOT) && go run ./e2e/cmd/capsites -out $(CAPACITY_DIR)
	@for v in v1 v2 v3; do $(MAKE) --no-print-directory site-image SITE_DIR=$(CAPACITY_DIR)/$$v SITE_IMAGE=$(CAPACITY_IMAGE_PREFIX):$$v-$(VERSION) || exit 1; done

# The v1 image is `make site-image` of the docs (its precompress stage is the one slow step, and Docker's build
# cache skips it while the tree is unchanged). The v2 page is written from the v1 page every time, so it cannot go
# stale; the check that it differs guards against a page without a <title>, where sed would change nothing.
.PHONY: e2e-pydocs-images
e2e-pydocs-images: server-image ## Build the real-site e2e images $(PYDOCS_IMAGE) and $(PYDOCS_V2_IMAGE) (Python 3.11 docs; v2 changes one page).
	@start=$$(date +%s) && \
	  $(ROOT)/hack/python-docs.sh $(PYDOCS_DIR) && \
	  $(MAKE) --no-print-directory site-image SITE_DIR=$(PYDOCS_DIR) SITE_IMAGE=$(PYDOCS_IMAGE) && \
	  $(call progress,$(PYDOCS_IMAGE) built in $$(( $$(date +%s) - start )) s; now $(PYDOCS_V2_IMAGE)) && \
	  rm -rf $(PYDOCS_V2_DIR) && mkdir -p $(dir $(PYDOCS_V2_DIR)/$(PYDOCS_PAGE)) && \
	  sed 's|</title>| (hyperstatic e2e v2)</title>|' $(PYDOCS_DIR)/$(PYDOCS_PAGE) > $(PYDOCS_V2_DIR)/$(PYDOCS_PAGE) && \
	  if cmp -s $(PYDOCS_DIR)/$(PYDOCS_PAGE) $(PYDOCS_V2_DIR)/$(PYDOCS_PAGE); then \
	    echo "e2e-pydocs-images: $(PYDOCS_PAGE) has no </title>: the v2 page would equal v1" >&2; exit 1; fi && \
	  ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
	  cp -r $(PYDOCS_V2_DIR) "$$ctx/site" && cp $(ROOT)/e2e/testdata/site-update.Dockerfile "$$ctx/Dockerfile" && \
	  DOCKER_BUILDKIT=0 docker build --pull=false -q --build-arg SERVER_IMAGE=$(SERVER_IMAGE) \
	    --build-arg BASE_IMAGE=$(PYDOCS_IMAGE) -t $(PYDOCS_V2_IMAGE) "$$ctx" && \
	  $(call progress,real-site images $(PYDOCS_IMAGE) and $(PYDOCS_V2_IMAGE) built in $$(( $$(date +%s) - start )) s)

.PHONY: e2e-fetch-image
e2e-fetch-image: docker-engine ## Build $(FETCH_IMAGE): the e2e tests' static in-cluster HTTP clients (fetch; fetchh3, HTTP/3 on quic-go), FROM scratch.
	@$(call progress,building $(FETCH_IMAGE))
	@rm -rf $(FETCH_IMAGE_CONTEXT) && mkdir -p $(FETCH_IMAGE_CONTEXT)
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(FETCH_IMAGE_CONTEXT)/fetch ./e2e/cmd/fetch
	# quic-go lives in the interop client's own module (make/server.mk, h3-interop), not in the root go.mod.
	cd $(SERVER_DIR)/h3interop/quicgo && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(FETCH_IMAGE_CONTEXT)/fetchh3 ./fetchh3
	@cp $(ROOT)/e2e/cmd/fetch/Dockerfile $(FETCH_IMAGE_CONTEXT)/Dockerfile
	docker build --pull=false -q -t $(FETCH_IMAGE) $(FETCH_IMAGE_CONTEXT)

.PHONY: e2e-slowloris-image
e2e-slowloris-image: docker-engine ## Build $(SLOWLORIS_IMAGE): the e2e tests' slow admin-port client, FROM scratch.
	@$(call progress,building $(SLOWLORIS_IMAGE))
	@rm -rf $(SLOWLORIS_IMAGE_CONTEXT) && mkdir -p $(SLOWLORIS_IMAGE_CONTEXT)
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(SLOWLORIS_IMAGE_CONTEXT)/slowloris ./e2e/cmd/slowloris
	@cp $(ROOT)/e2e/cmd/slowloris/Dockerfile $(SLOWLORIS_IMAGE_CONTEXT)/Dockerfile
	docker build --pull=false -q -t $(SLOWLORIS_IMAGE) $(SLOWLORIS_IMAGE_CONTEXT)

.PHONY: e2e-gitserver-build
e2e-gitserver-build: ## Build $(GITSERVER_BIN): the tests' static Git server (smart HTTP fetch and push, go-git; no git binary).
	@$(call progress,building $(GITSERVER_BIN))
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(GITSERVER_BIN) ./e2e/cmd/gitserver

.PHONY: e2e-gitserver-image
e2e-gitserver-image: e2e-gitserver-build docker-engine ## Build $(GITSERVER_IMAGE): the Git server FROM scratch, user 65532 (scenario 14, content from Git).
	@$(call progress,building $(GITSERVER_IMAGE))
	@ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
	cp $(GITSERVER_BIN) "$$ctx/gitserver" && cp $(ROOT)/e2e/cmd/gitserver/Dockerfile "$$ctx/Dockerfile" && \
	docker build --pull=false -q -t $(GITSERVER_IMAGE) "$$ctx"

.PHONY: e2e-dex-image
e2e-dex-image: dex-build docker-engine ## Build $(DEX_IMAGE): Dex (make/sso.mk) FROM scratch, user 65532 (scenario 19, the signIn site's login).
	@$(call progress,building $(DEX_IMAGE))
	@ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
	cp $(DEX) "$$ctx/dex" && cp $(ROOT)/e2e/dex/Dockerfile "$$ctx/Dockerfile" && \
	docker build --pull=false -q -t $(DEX_IMAGE) "$$ctx"

.PHONY: e2e-traefik-image
e2e-traefik-image: traefik-build docker-engine ## Build $(TRAEFIK_IMAGE): the static Traefik FROM scratch, user 65532.
	@rm -rf $(TRAEFIK_IMAGE_CONTEXT) && mkdir -p $(TRAEFIK_IMAGE_CONTEXT)
	@cp $(TRAEFIK_CACHE) $(TRAEFIK_IMAGE_CONTEXT)/traefik
	@cp $(ROOT)/e2e/traefik/Dockerfile $(TRAEFIK_IMAGE_CONTEXT)/Dockerfile
	docker build --pull=false -q -t $(TRAEFIK_IMAGE) $(TRAEFIK_IMAGE_CONTEXT)

.PHONY: e2e-cert-manager-image
e2e-cert-manager-image: cert-manager-build docker-engine ## Build $(CERT_MANAGER_IMAGE): cert-manager's controllers (e2e/kind/certmanager) FROM scratch, user 65532.
	@rm -rf $(CERT_MANAGER_IMAGE_CONTEXT) && mkdir -p $(CERT_MANAGER_IMAGE_CONTEXT)
	@cp $(CERT_MANAGER_BIN) $(CERT_MANAGER_IMAGE_CONTEXT)/cert-manager-controller
	@cp $(ROOT)/e2e/kind/certmanager/Dockerfile $(CERT_MANAGER_IMAGE_CONTEXT)/Dockerfile
	docker build --pull=false -q -t $(CERT_MANAGER_IMAGE) $(CERT_MANAGER_IMAGE_CONTEXT)

.PHONY: kind-load
kind-load: $(KIND) ## Load the images (and the e2e images when built) into the kind cluster "$(KIND_CLUSTER_NAME)".
	@$(call progress,loading images into kind cluster $(KIND_CLUSTER_NAME))
	@imgs="$(SERVER_IMAGE) $(OPERATOR_IMAGE) $(K6_IMAGE) $(CONTENT_AGENT_IMAGE)"; \
	for i in $(E2E_IMAGES); do docker image inspect $$i >/dev/null 2>&1 && imgs="$$imgs $$i"; done; \
	$(KIND) load docker-image --name $(KIND_CLUSTER_NAME) $$imgs
	@$(call progress,images loaded)

# content-agent (issue 30): the Git fetcher and the pods' puller, one static binary (cmd/content-agent).
CONTENT_AGENT_IMAGE ?= hyperstatic/content-agent:$(VERSION)
CONTENT_AGENT_BIN := $(BIN)/content-agent

.PHONY: content-agent-build
content-agent-build: ## Build $(CONTENT_AGENT_BIN): `content-agent fetch|pull`, static (CGO_ENABLED=0), go-git (no git binary).
	@$(call progress,building $(CONTENT_AGENT_BIN))
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o $(CONTENT_AGENT_BIN) ./cmd/content-agent

.PHONY: content-agent-image
content-agent-image: content-agent-build server-build docker-engine ## Build $(CONTENT_AGENT_IMAGE): content-agent, hyperstatic-server (for --check) and the host's CA bundle FROM scratch, user 65532.
	@$(call progress,building $(CONTENT_AGENT_IMAGE))
	@ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
	cp $(CONTENT_AGENT_BIN) "$$ctx/content-agent" && cp $(SERVER_BIN) "$$ctx/hyperstatic-server" && \
	if [ -f /etc/ssl/certs/ca-certificates.crt ]; then cp /etc/ssl/certs/ca-certificates.crt "$$ctx/"; else : > "$$ctx/ca-certificates.crt"; fi && \
	cp $(ROOT)/images/content-agent/Dockerfile "$$ctx/Dockerfile" && \
	docker build --pull=false -q -t $(CONTENT_AGENT_IMAGE) "$$ctx"
