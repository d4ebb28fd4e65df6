module hyperstatic.dev/hyperstatic/e2e/kind/smoke

go 1.24
