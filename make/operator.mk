# make/operator.mk — placeholder; filled in by its owner.
.PHONY: go-test
go-test: ## Go unit tests and envtest suites.
	go test ./...
