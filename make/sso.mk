##@ Single sign-on (docs/design/sso.md)
# make/sso.mk — the real identity provider the sign-in tests run against: Dex, built from the Go module proxy into
# ./bin like the other tools (make/tools.mk). Dex's go.mod replaces its api/v2 module with a directory the proxy's
# zip does not hold, so `go install` refuses it: the module is downloaded, copied, the replace dropped (api/v2 then
# comes from the proxy at the version Dex requires) and built. Dex's tags (v2.x) are not valid versions of its
# module path, so the version is the pseudo-version of the tag's commit (DEX_TAG names it).

DEX_TAG ?= v2.45.1
DEX_VERSION ?= v0.0.0-20260303133905-11d2eeb52b42
DEX := $(BIN)/dex-$(DEX_TAG)

$(DEX):
	@$(call progress,building Dex $(DEX_TAG) ($(DEX_VERSION)) from the Go module proxy into $(DEX))
	@dir=$$(go mod download -json github.com/dexidp/dex@$(DEX_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	  tmp=$$(mktemp -d) && cp -r "$$dir/." "$$tmp" && chmod -R u+w "$$tmp" && \
	  (cd "$$tmp" && go mod edit -dropreplace github.com/dexidp/dex/api/v2 && \
	   CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags='-s -w' -o "$(DEX).tmp" ./cmd/dex) && \
	  rm -rf "$$tmp" && mv "$(DEX).tmp" "$(DEX)"
	@ln -sf "$$(basename $(DEX))" "$(BIN)/dex"

.PHONY: dex-build
dex-build: $(DEX) ## Build Dex $(DEX_TAG) (the identity provider of the sign-in tests) into ./bin.

.PHONY: go-test-sso
go-test-sso: server-build dex-build ## Sign in through the real Dex: the agent's login, callback and logout, the real server serving from the cookie.
	HYPERSTATIC_SERVER_BIN="$(SERVER_BIN)" HYPERSTATIC_DEX_BIN="$(DEX)" go test -tags dex ./internal/sso -count=1
