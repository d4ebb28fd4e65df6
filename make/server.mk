# make/server.mk — placeholder; filled in by its owner.
.PHONY: server-test
server-test: ## The server's Rust tests.
	@echo "server tests: not yet"
