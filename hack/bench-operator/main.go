// Command bench-operator measures the Hyperstatic operator at scale (issue 28, item 3): many StaticSites on
// fake kwok nodes, next to a real kube-apiserver and etcd (envtest's), kube-controller-manager and
// kube-scheduler, the operator running as a local process. It reports the time from the operator's start to
// every site reconciled, the API requests per minute in steady state, the operator's RSS and CPU, the StaticSite
// reconcile latency, and the autoscaler's passes over every pod. With -pool-sites (issue 40) it adds one
// StaticSitePool on kwok's nodes and that many sites placed in it (pool.go), served for real by the pool's
// processes (poolserve.go), and reports when every pool site was Placed and Ready and what the pool's passes cost.
// `make bench-operator` builds what it needs and runs it; docs/bench/operator-*.md holds results.
//
// Nothing leaves the machine: kwok gives pods IPs in a machine-local CIDR (machinelocal.go), checked before any
// process starts, on a preflight pod, and for every pod while it runs; the real hyperstatic-server answers the
// operator's scrapes on 0.0.0.0:9090; and the operator's sockets are checked with ss to have machine-local peers
// only. Machine-local is either loopback (127.0.0.0/8: the API server then refuses the pool sites'
// EndpointSlices, so they are never Ready) or, `make bench-operator`'s default, addresses in the benchmarking
// range 198.18.0.0/15 made local in a network namespace whose only interface is lo (netns.sh runs the harness
// there): the harness refuses any other address, and those unless it finds itself in such a namespace.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// config is the harness's flags.
type config struct {
	sites, replicas, nodes, namespaces, autoscaled int
	poolSites, poolReplicas, poolShards            int
	repo, assets, k8sBin, kwok, kwokStages         string
	serverBin, siteRoot, manager                   string
	podCIDR, nodeIP                                string
	local                                          machineLocal // what podCIDR and nodeIP were proven to be
	reconcileTimeout, settleQuiet, settleMax       time.Duration
	quiet, autoscaleWarmup, autoscaleWindow        time.Duration
	out                                            string
	operatorArgs                                   string
	operatorEnv                                    []string // KEY=VALUE, the operator's alone
	operatorMemoryLimit                            int64    // bytes; 0: the operator runs with no memory cgroup
	heapProfile                                    bool
}

func bindFlags(fs *flag.FlagSet) *config {
	c := &config{}
	fs.IntVar(&c.sites, "sites", 1000, "StaticSites to create")
	fs.IntVar(&c.replicas, "replicas", 2, "replicas per site")
	fs.IntVar(&c.nodes, "nodes", 100, "fake kwok nodes")
	fs.IntVar(&c.namespaces, "namespaces", 10, "namespaces the sites are spread over")
	fs.IntVar(&c.autoscaled, "autoscaled", -1, "sites to turn autoscaling on for in the last phase (-1: all, 0: skip the phase)")
	fs.IntVar(&c.poolSites, "pool-sites", 0, "StaticSites placed in one StaticSitePool (ConfigMap content), beside the dedicated ones; 0: no pool")
	fs.IntVar(&c.poolReplicas, "pool-replicas", 2, "the pool's server pods")
	fs.IntVar(&c.poolShards, "pool-shards", 16, "the pool's index shards (spec.indexShards)")
	fs.StringVar(&c.repo, "repo", ".", "repository root (CRDs in config/crd/bases)")
	fs.StringVar(&c.assets, "assets", "", "directory with kube-apiserver and etcd (envtest assets)")
	fs.StringVar(&c.k8sBin, "k8s-bin", "", "directory with kube-controller-manager and kube-scheduler")
	fs.StringVar(&c.kwok, "kwok", "", "kwok binary")
	fs.StringVar(&c.kwokStages, "kwok-stages", "", "kwok module's kustomize/stage directory (the stages it ships)")
	fs.StringVar(&c.serverBin, "server-bin", "", "hyperstatic-server binary (answers the operator's scrapes)")
	fs.StringVar(&c.siteRoot, "site-root", "", "directory the server serves (default: <repo>/images/server/example/site)")
	fs.StringVar(&c.manager, "manager", "", "operator binary (go build ./cmd/manager)")
	fs.StringVar(&c.podCIDR, "pod-cidr", "127.64.0.0/16", "kwok's pod CIDR (IPv4): loopback, or local in a network namespace with only lo (netns.sh)")
	fs.StringVar(&c.nodeIP, "node-ip", "127.0.0.2", "kwok's node IP: loopback, or local in a network namespace with only lo (netns.sh)")
	fs.DurationVar(&c.reconcileTimeout, "reconcile-timeout", 10*time.Minute, "give up waiting for every site to be reconciled and available after this")
	fs.DurationVar(&c.settleQuiet, "settle-quiet", 15*time.Second, "steady state: no write by the operator for this long")
	fs.DurationVar(&c.settleMax, "settle-max", 3*time.Minute, "measure the steady state after this even if writes never stop")
	fs.DurationVar(&c.quiet, "quiet", time.Minute, "length of the steady-state window")
	fs.DurationVar(&c.autoscaleWarmup, "autoscale-warmup", 30*time.Second, "wait after turning autoscaling on, before its window")
	fs.DurationVar(&c.autoscaleWindow, "autoscale-window", time.Minute, "length of the autoscaling window")
	fs.StringVar(&c.out, "out", "", "also write the report (markdown) to this file")
	fs.StringVar(&c.operatorArgs, "operator-args", "", "more flags for the operator, space-separated (e.g. --staticsite-max-concurrent-reconciles=1)")
	fs.Func("operator-env", "environment for the operator alone, space-separated KEY=VALUE (e.g. GOMEMLIMIT=160MiB GOGC=50); the other processes keep the harness'",
		func(v string) error {
			for _, kv := range strings.Fields(v) {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					return fmt.Errorf("%q is not KEY=VALUE", kv)
				}
				c.operatorEnv = append(c.operatorEnv, kv)
			}
			return nil
		})
	fs.Func("operator-memory-limit", "run the operator in a memory cgroup with this limit (a Kubernetes quantity, e.g. 512Mi), shown to it where a container shows it (memcg.go; needs root); empty: no cgroup",
		func(v string) error {
			q, err := resource.ParseQuantity(v)
			if err != nil || q.Value() <= 0 {
				return fmt.Errorf("%q is not a positive quantity of bytes", v)
			}
			c.operatorMemoryLimit = q.Value()
			return nil
		})
	fs.BoolVar(&c.heapProfile, "heap-profile", false,
		"serve the operator's /debug/pprof/ on loopback and, at the end of the steady-state window, save its heap profile (operator-heap.pb.gz, beside -out) and report its Go heap figures")
	return c
}

func (c *config) validate() error {
	for name, v := range map[string]string{"-assets": c.assets, "-k8s-bin": c.k8sBin, "-kwok": c.kwok, "-kwok-stages": c.kwokStages, "-server-bin": c.serverBin, "-manager": c.manager} {
		if v == "" {
			return fmt.Errorf("%s is required", name)
		}
	}
	if c.sites < 1 || c.replicas < 1 || c.nodes < 1 || c.namespaces < 1 {
		return fmt.Errorf("-sites, -replicas, -nodes and -namespaces must be positive")
	}
	if c.poolSites < 0 || c.poolReplicas < 1 || c.poolShards < 1 {
		return fmt.Errorf("-pool-sites must not be negative, -pool-replicas and -pool-shards must be positive")
	}
	if c.autoscaled < 0 || c.autoscaled > c.sites {
		c.autoscaled = c.sites
	}
	if c.siteRoot == "" {
		c.siteRoot = filepath.Join(c.repo, "images", "server", "example", "site")
	}
	prefix, err := parsePodCIDR(c.podCIDR)
	if err != nil {
		return err
	}
	c.podCIDR = prefix.String()
	nodeIP, err := netip.ParseAddr(c.nodeIP)
	if err != nil {
		return fmt.Errorf("-node-ip: %w", err)
	}
	c.local, err = machineLocalFor(prefix, nodeIP.Unmap(), hostProbe)
	return err
}

// parsePodCIDR accepts an IPv4 CIDR no wider than /8 (whether it is machine-local is machineLocalFor's).
func parsePodCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("-pod-cidr: %w", err)
	}
	if !p.Addr().Is4() || p.Bits() < 8 {
		return netip.Prefix{}, fmt.Errorf("-pod-cidr %s is not an IPv4 CIDR of /8 or narrower", s)
	}
	return p.Masked(), nil
}

func main() {
	cfg := bindFlags(flag.CommandLine)
	flag.Parse()
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-operator:", err)
		os.Exit(2)
	}
	// SIGINT/SIGTERM end the run through ctx: every deferred stop runs, so no child outlives the harness.
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, cfg)
	stopSignals()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-operator:", err)
		os.Exit(1)
	}
}

// say prints a timestamped progress line.
func say(format string, args ...any) {
	fmt.Printf("==> [%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
