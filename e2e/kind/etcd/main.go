// Command etcd is the etcd server, built from the Go module proxy for the kind node image and envtest.
// The root module go.etcd.io/etcd/v3 replaces its submodules with ./server paths, so it cannot be built as a
// dependency; go.etcd.io/etcd/server/v3 exposes the same entry point as etcdmain.Main.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
