package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// The pool's processes, for real, on this machine. kwok's pool pods are fake: the operator reads GET /sites on
// each ready pool pod's IP (admin port 9090) and on the fetcher pod's IP (port 8080), all machine-local, so these
// processes answer there:
//
//   - the index: the harness follows the pool's index ConfigMaps and writes them into a directory the way the
//     kubelet updates the projected volume of the pool pods (a new ..data directory, one rename);
//   - the pool fetcher (internal/contentagent's PoolFetcher, the code of `content-agent pool-fetch`, in this
//     process) on 0.0.0.0:8080: it reads the index, watches and reads the mirrors the operator writes, and builds
//     and checks (hyperstatic-server --check) each site's bundle;
//   - one puller (PoolPuller, `content-agent pool-pull`, in this process) installing the bundles of the index;
//   - one real `hyperstatic-server --sites` serving them, its admin port on loopback;
//   - a proxy on 0.0.0.0:9090 that sends /sites to the pool server and every other path (the dedicated pods'
//     scrapes) to the single-site server (startResponder), so both kinds of pod answer on the one port.
//
// Every pool pod is answered by the same server and puller: what the operator sees is N pods that all serve what
// this one serves. The fetcher reads the API with the harness' admin credentials, not its ServiceAccount's token
// (the operator's Role for it is applied but not exercised here).

// poolServing is the running chain; stop ends what runs in this process (the server is one of procs' children).
type poolServing struct {
	dir      string // the server's --sites directory: index/ and content/
	adminURL string // the pool server's admin listener
	stop     func()
}

// startPoolServing starts the chain; c must be a watching reader whose cache holds the index ConfigMaps.
func startPoolServing(ctx context.Context, cfg *config, ps *procs, restCfg *rest.Config, c client.Reader,
	onIndexChange func(func()) error, workDir string, dedicatedAdmin string) (*poolServing, error) {
	dir := filepath.Join(workDir, "pool")
	index, content := filepath.Join(dir, "index"), filepath.Join(dir, "content")
	for _, d := range []string{index, content, filepath.Join(workDir, "fetcher")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	logf, err := os.Create(filepath.Join(workDir, "pool-agents.log"))
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(logf, nil))
	ctx, cancel := context.WithCancel(ctx)
	var servers []*http.Server
	s := &poolServing{dir: dir, stop: func() {
		cancel()
		for _, srv := range servers {
			_ = srv.Close()
		}
		_ = logf.Close()
	}}
	fail := func(err error) (*poolServing, error) { s.stop(); return nil, err }

	// The index, as the kubelet would project it: written again on every change of a shard ConfigMap.
	w := &indexWriter{dir: index, list: func(ctx context.Context) (map[string]string, error) { return indexFiles(ctx, c) }}
	if err := w.write(ctx); err != nil {
		return fail(err)
	}
	if err := onIndexChange(w.kick); err != nil {
		return fail(err)
	}
	go w.run(ctx)

	// The fetcher.
	kube, err := contentagent.NewConfigMapReader(restCfg)
	if err != nil {
		return fail(err)
	}
	md, err := metadata.NewForConfig(restCfg)
	if err != nil {
		return fail(err)
	}
	fetcher := &contentagent.PoolFetcher{
		Index: &contentagent.IndexDir{Dir: index, Log: log}, Dir: filepath.Join(workDir, "fetcher"),
		Namespace: benchPoolNamespace, Kube: kube, Metadata: md, CheckServer: cfg.serverBin, Log: log,
	}
	if err := fetcher.Init(); err != nil {
		return fail(err)
	}
	fetcherAddr := "0.0.0.0:" + strconv.Itoa(v1alpha1.GitFetcherPort)
	srv, err := serveHTTP(fetcherAddr, fetcher.Handler())
	if err != nil {
		return fail(fmt.Errorf("the pool fetcher on %s (pods' port %d taken?): %w", fetcherAddr, v1alpha1.GitFetcherPort, err))
	}
	servers = append(servers, srv)
	go fetcher.Run(ctx)

	// The puller, into the server's content directory.
	puller := &contentagent.PoolPuller{
		Index: &contentagent.IndexDir{Dir: index, Log: log}, Dir: content, Log: log,
		FetcherURL: "http://127.0.0.1:" + strconv.Itoa(v1alpha1.GitFetcherPort),
		Client:     &http.Client{Timeout: 10 * time.Minute},
	}
	if err := puller.Init(); err != nil {
		return fail(err)
	}
	go puller.Run(ctx)

	// The server, then the proxy in front of both servers' admin ports.
	httpAddr, err := freeLoopbackAddr()
	if err != nil {
		return fail(err)
	}
	adminAddr, err := freeLoopbackAddr()
	if err != nil {
		return fail(err)
	}
	server, err := ps.start("hyperstatic-server-pool", cfg.serverBin, "--sites", dir, "--listen", httpAddr, "--admin-listen", adminAddr)
	if err != nil {
		return fail(err)
	}
	s.adminURL = "http://" + adminAddr
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if server.exited() {
			return false, fmt.Errorf("the pool server exited: see hyperstatic-server-pool.log")
		}
		return httpOK(ctx, s.adminURL+"/healthz") == nil, nil
	})
	if err != nil {
		return fail(fmt.Errorf("wait for the pool server's admin port: %w", err))
	}
	proxy, err := adminProxy(dedicatedAdmin, adminAddr)
	if err != nil {
		return fail(err)
	}
	proxyAddr := "0.0.0.0:" + strconv.Itoa(v1alpha1.AdminPort)
	if srv, err = serveHTTP(proxyAddr, proxy); err != nil {
		return fail(fmt.Errorf("the admin proxy on %s: %w", proxyAddr, err))
	}
	servers = append(servers, srv)
	return s, nil
}

// adminProxy sends GET /sites (a pool pod's report, docs/design/pools.md) to the pool server's admin listener and
// everything else (a dedicated pod's /metrics, /content, /load-error) to the single-site server's.
func adminProxy(dedicated, pool string) (http.Handler, error) {
	d, err := url.Parse("http://" + dedicated)
	if err != nil {
		return nil, err
	}
	p, err := url.Parse("http://" + pool)
	if err != nil {
		return nil, err
	}
	toDedicated, toPool := httputil.NewSingleHostReverseProxy(d), httputil.NewSingleHostReverseProxy(p)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if adminRoute(r.URL.Path) == routePool {
			toPool.ServeHTTP(w, r)
			return
		}
		toDedicated.ServeHTTP(w, r)
	}), nil
}

const (
	routeDedicated = "dedicated"
	routePool      = "pool"
)

// adminRoute is adminProxy's choice for a path.
func adminRoute(path string) string {
	if path == "/sites" {
		return routePool
	}
	return routeDedicated
}

// serveHTTP serves h on addr until the returned server is closed.
func serveHTTP(addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return srv, nil
}

// indexFiles is the index volume's files: every shard ConfigMap's keys, from the cache.
func indexFiles(ctx context.Context, c client.Reader) (map[string]string, error) {
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(benchPoolNamespace),
		client.MatchingLabels{poolplacement.LabelPool: benchPool, poolplacement.LabelComponent: poolIndexComponent}); err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, cm := range cms.Items {
		for k, v := range cm.Data {
			files[k] = v
		}
	}
	return files, nil
}
