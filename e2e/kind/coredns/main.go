// Command coredns is a slim CoreDNS for the kind node image: only the plugins kubeadm's Corefile uses (plus a
// few for debugging). Importing coredns' root plugin list would pull every cloud SDK (~2 GB of modules and
// minutes of compile on 2 cores) for plugins a test cluster never loads.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/debug"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// Directive order decides plugin execution order; it follows coredns' plugin.cfg for the plugins kept.
func init() {
	dnsserver.Directives = []string{
		"reload", "debug", "ready", "health", "prometheus", "errors", "log",
		"loadbalance", "cache", "rewrite", "hosts", "kubernetes", "loop", "forward", "whoami",
	}
}

func main() { coremain.Run() }
