module hyperstatic.dev/hyperstatic/e2e/kind/capfix

go 1.24
