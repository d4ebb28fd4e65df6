package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"time"

	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
)

// poolFetch is `content-agent pool-fetch`: one process per pool, every site of its index (docs/design/pools.md,
// "The command lines").
func poolFetch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pool-fetch", flag.ExitOnError)
	index := fs.String("index", "/pool/index", "the pool's index: a directory of *.json shards (the index ConfigMaps' projected volume)")
	namespace := fs.String("namespace", "", "the pool's namespace, where the ConfigMap sites' mirrors are (empty: ConfigMap sites are not built)")
	check := fs.String("check-server", "", "hyperstatic-server binary: each new tree must pass its --check before it is published")
	checkTimeout := fs.Duration("check-timeout", 2*time.Minute, "bound of one --check run")
	dir := fs.String("dir", "/var/lib/content", "working directory: DIR/<site id>/trees and DIR/<site id>/bundles")
	listen := fs.String("listen", ":8080", "address of /sites, /sites/<id>/revision, /bundles/, /healthz, /metrics")
	concurrency := fs.Int("fetch-concurrency", 4, "most sites fetched or built at once")
	wait := fs.Duration("wait-timeout", 30*time.Second, "longest hold of a ?wait= long poll")
	indexEvery := fs.Duration("index-interval", 2*time.Second, "how often the index directory is checked for a change")
	_ = fs.Parse(args)
	if *concurrency < 1 {
		return errors.New("pool-fetch: --fetch-concurrency must be at least 1")
	}
	p := &contentagent.PoolFetcher{
		Index:        &contentagent.IndexDir{Dir: *index},
		Dir:          *dir,
		Namespace:    *namespace,
		CheckServer:  *check,
		CheckTimeout: *checkTimeout,
		Concurrency:  *concurrency,
		WaitTimeout:  *wait,
		IndexEvery:   *indexEvery,
	}
	if *namespace != "" {
		// The pod's ServiceAccount: the fetcher may get/list/watch ConfigMaps in its own namespace only.
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return err
		}
		if p.Kube, err = contentagent.NewConfigMapReader(cfg); err != nil {
			return err
		}
		if p.Metadata, err = metadata.NewForConfig(cfg); err != nil {
			return err
		}
	}
	if err := p.Init(); err != nil {
		return err
	}
	return serveAndRun(ctx, *listen, p.Handler(), p.Run)
}

// poolPull is `content-agent pool-pull`: the native sidecar of each pool server pod.
func poolPull(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pool-pull", flag.ExitOnError)
	index := fs.String("index", "/pool/index", "the pool's index: a directory of *.json shards (the index ConfigMaps' projected volume)")
	dir := fs.String("dir", "/pool/content", "directory shared with the server: DIR/<site id>/current, DIR/.ready/<site id>")
	fetcher := fs.String("fetcher", "", "the pool fetcher's base URL (http://POOL-fetcher.NS.svc:8080)")
	listen := fs.String("listen", ":8082", "address of /sites (what this pod has installed), /healthz, /metrics")
	concurrency := fs.Int("pull-concurrency", 4, "most bundles downloaded and installed at once")
	wait := fs.Duration("wait-timeout", 30*time.Second, "longest hold of a /sites?wait= long poll here")
	indexEvery := fs.Duration("index-interval", 2*time.Second, "how often the index directory is checked for a change")
	_ = fs.Parse(args)
	if *fetcher == "" {
		return errors.New("pool-pull: --fetcher is required")
	}
	if *concurrency < 1 {
		return errors.New("pool-pull: --pull-concurrency must be at least 1")
	}
	p := &contentagent.PoolPuller{
		Index:       &contentagent.IndexDir{Dir: *index},
		Dir:         *dir,
		FetcherURL:  *fetcher,
		Concurrency: *concurrency,
		WaitTimeout: *wait,
		IndexEvery:  *indexEvery,
		// Longer than the fetcher's long poll (30 s), so only a dead connection times out.
		Client: &http.Client{Timeout: 10 * time.Minute},
	}
	if err := p.Init(); err != nil {
		return err
	}
	return serveAndRun(ctx, *listen, p.Handler(), p.Run)
}
