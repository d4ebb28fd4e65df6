module hyperstatic.dev/hyperstatic/e2e/kind/pause

go 1.24
