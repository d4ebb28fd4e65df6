// Command content-agent is the two processes of content from Git (docs/design/git-content.md), one static
// binary for a FROM scratch image:
//
//	content-agent fetch --url URL --ref main [--path public] [--interval 1m] [--secret-dir /etc/git-credentials]
//	    [--webhook-secret-file /etc/git-webhook/token] [--check-server /hyperstatic-server]
//	    [--dir /var/lib/content] [--listen :8080] [--webhook-listen :8081] [--webhook-min-gap 10s]
//	    [--webhook-timeout 10s] [--status-file FILE] [--previews-pull-requests] [--previews-branch PATTERN]...
//	    [--previews-ttl 0] [--previews-max 10]
//	content-agent pull --fetcher http://SITE-git:8080 --dir /srv/site [--listen :8082]
//	    [--server-admin http://127.0.0.1:9090] [--reload-wait 5s]
//	    [--sites-dir DIR --host H... --site-name S --previews-domain D --site-value FILE] (a site with previews)
//	content-agent pool-fetch --index /pool/index --namespace NS [--check-server /hyperstatic-server]
//	    [--dir /var/lib/content] [--listen :8080] [--fetch-concurrency 4]
//	content-agent pool-pull --index /pool/index --dir /pool/content --fetcher http://POOL-fetcher.NS.svc:8080
//	    [--listen :8082] [--pull-concurrency 4]
//	content-agent sso --issuer URL --client-id ID --client-secret-file FILE --keys-file FILE --site-url URL
//	    [--callback-url URL] [--prefix /.hyperstatic/sso] [--session-ttl 8h] [--keep-groups a,b] [--listen :8083]
//
// fetch follows the repository (one per site), checks each new tree with the server's --check and publishes
// it as a digest-addressed bundle; pull (a sidecar of each server pod) long-polls the fetcher and swaps each new
// bundle in whole under --dir/current, the server's root. pool-fetch and pool-pull are the same two jobs for a
// shared pool's many sites (docs/design/pools.md): one fetcher per pool, one puller per pool server pod. sso is
// a site's single sign-on endpoints (docs/design/sso.md): the login flow ending in the cookie the server checks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/previews"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: content-agent fetch|pull|pool-fetch|pool-pull|sso [flags] (-h for the flags of each)")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		slog.Error("content-agent", "error", err)
		os.Exit(1)
	}
}

// run ends on SIGTERM (the pod stopping) with a graceful shutdown of the HTTP servers.
func run(cmd string, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	switch cmd {
	case "fetch":
		return fetch(ctx, args)
	case "pull":
		return pull(ctx, args)
	case "pool-fetch":
		return poolFetch(ctx, args)
	case "pool-pull":
		return poolPull(ctx, args)
	case "sso":
		return ssoAgent(ctx, args)
	}
	return fmt.Errorf("unknown subcommand %q: fetch, pull, pool-fetch, pool-pull or sso", cmd)
}

func fetch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fetch", flag.ExitOnError)
	repoURL := fs.String("url", "", "repository URL (https://... or ssh://...)")
	ref := fs.String("ref", "", "branch (followed), tag, or full commit hash")
	path := fs.String("path", "", "subdirectory of the repository to serve")
	interval := fs.Duration("interval", time.Minute, "time between fetches without a webhook")
	maxBytes := fs.Int64("max-bytes", gitsource.DefaultMaxBytes, "size limit of the packfile and of the written tree (each; the tree's files plus 512 bytes per entry)")
	maxEntries := fs.Int("max-entries", gitsource.DefaultMaxEntries, "most files, directories and links of the written tree")
	maxDepth := fs.Int("max-depth", gitsource.DefaultMaxDepth, "most path components of an entry of the written tree")
	secretDir := fs.String("secret-dir", "", "mounted credentials Secret, Flux's keys: username/password, bearerToken, identity/known_hosts, ca.crt; read at every fetch")
	hookSecret := fs.String("webhook-secret-file", "", "file holding the webhook secret (HMAC key or GitLab token; surrounding whitespace is ignored); read at every delivery")
	check := fs.String("check-server", "", "hyperstatic-server binary: each new tree must pass its --check before it is published")
	checkTimeout := fs.Duration("check-timeout", 2*time.Minute, "bound of one --check run")
	dir := fs.String("dir", "/var/lib/content", "working directory: trees under DIR/trees, bundles under DIR/bundles")
	listen := fs.String("listen", ":8080", "address of /revision, /bundles/, /healthz, /metrics")
	hookListen := fs.String("webhook-listen", ":8081", "address of /hooks alone (empty: no webhook)")
	hookGap := fs.Duration("webhook-min-gap", contentagent.DefaultWebhookMinGap, "least time from the end of a webhook's fetch to the start of the next; "+
		"pushes announced inside it are fetched once, at its end (0: none)")
	hookTimeout := fs.Duration("webhook-timeout", contentagent.DefaultWebhookTimeout, "bound of reading one webhook request, head and body")
	wait := fs.Duration("wait-timeout", 30*time.Second, "longest hold of a /revision?wait= long poll")
	status := fs.String("status-file", "", "file to write the revision and last error to (JSON) after each attempt")
	history := fs.Int("history", contentagent.DefaultHistory, fmt.Sprintf("deploys (bundles) kept and listed in /revision, 1-%d", contentagent.MaxHistory))
	pinToken := fs.String("pin-token-file", "", "file holding the bearer token of POST /pin, read at every request (unset: pinning is refused)")
	prs := fs.Bool("previews-pull-requests", false, "preview every pull request (refs/pull/N/head) and merge request (refs/merge-requests/N/head)")
	var branches stringList
	fs.Var(&branches, "previews-branch", "preview the branches matching this pattern (path.Match; repeat for more)")
	ttl := fs.Duration("previews-ttl", 0, "how long a preview's commit stays published (0: as long as its ref)")
	maxPreviews := fs.Int("previews-max", previews.DefaultMax, fmt.Sprintf("most previews at once, 1-%d", previews.MaxMax))
	_ = fs.Parse(args)
	if *repoURL == "" || *ref == "" {
		return errors.New("fetch: --url and --ref are required")
	}
	pv := previews.Settings{PullRequests: *prs, Branches: branches, TTL: *ttl, Max: *maxPreviews}
	if *maxPreviews < 1 {
		return fmt.Errorf("fetch: --previews-max must be 1 to %d", previews.MaxMax)
	}
	if err := pv.Validate(); err != nil {
		return fmt.Errorf("fetch: --previews-*: %w", err)
	}
	if *history < 1 || *history > contentagent.MaxHistory {
		return fmt.Errorf("fetch: --history must be 1 to %d", contentagent.MaxHistory)
	}
	// The Secrets are read at each use (the credentials at every fetch, the webhook secret at every delivery):
	// a rotated Secret applies once kubelet has updated the volume, and a wrong one is reported in /revision
	// (lastError) like any failed fetch, not by a crash loop.
	src := gitsource.Source{URL: *repoURL, Ref: *ref, Path: *path, MaxBytes: *maxBytes, MaxEntries: *maxEntries, MaxDepth: *maxDepth}
	if _, err := src.WithSecret(nil); err != nil {
		return err // not a Git URL: no attempt could ever work
	}
	// The Git object store is kept between fetches (DIR/objects), so a push fetches what changed; the previews'
	// Stores share it (gitsource.Objects).
	store := &gitsource.Store{Dir: filepath.Join(*dir, "trees"), Objects: &gitsource.Objects{Dir: filepath.Join(*dir, "objects")}}
	if *check != "" {
		store.Check = contentagent.ServerCheck(*check, *checkTimeout, *maxEntries, *maxDepth)
	}
	f := &contentagent.Fetcher{
		Source:            src,
		SecretDir:         *secretDir,
		Store:             store,
		BundleDir:         filepath.Join(*dir, "bundles"),
		Interval:          *interval,
		WebhookSecretFile: *hookSecret,
		WebhookMinGap:     *hookGap,
		WebhookTimeout:    *hookTimeout,
		WaitTimeout:       *wait,
		StatusFile:        *status,
		History:           *history,
		PinTokenFile:      *pinToken,
		Previews:          pv,
		PreviewDir:        filepath.Join(*dir, "previews"),
	}
	if err := f.Init(); err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- serve(ctx, *listen, server(f.Handler()), nil) }()
	if *hookListen != "" {
		// Its own server and listener, with the webhook's limits: a flood there never reaches the port above,
		// which the operator and the pullers long-poll.
		go func() { errs <- serve(ctx, *hookListen, f.WebhookServer(), contentagent.WebhookListener) }()
	}
	go f.Run(ctx)
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		return nil
	}
}

func pull(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pull", flag.ExitOnError)
	fetcher := fs.String("fetcher", "", "the fetcher's base URL (http://SITE-git.NS.svc:8080)")
	dir := fs.String("dir", "/srv/site", "directory shared with the server; its root is DIR/current")
	maxBytes := fs.Int64("max-bytes", gitsource.DefaultMaxBytes, "size limit of one bundle's tree (its files plus 512 bytes per entry); the fetcher's --max-bytes")
	maxEntries := fs.Int("max-entries", gitsource.DefaultMaxEntries, "most files, directories and links of one bundle; the fetcher's --max-entries")
	maxDepth := fs.Int("max-depth", gitsource.DefaultMaxDepth, "most path components of an entry of one bundle; the fetcher's --max-depth")
	listen := fs.String("listen", ":8082", "address of /revision (what this pod serves), /healthz, /metrics")
	wait := fs.Duration("wait-timeout", 30*time.Second, "longest hold of a /revision?wait= long poll here")
	admin := fs.String("server-admin", "", "the server's admin base URL (http://127.0.0.1:9090): after a flip, wait for its "+
		"hyperstatic_reloads_total to pass the value before the flip (or --reload-wait) before flipping again or removing old trees")
	reloadWait := fs.Duration("reload-wait", 5*time.Second, "longest wait for the server's reload after a flip (with --server-admin)")
	sitesDir := fs.String("sites-dir", "", "a site with previews: lay out the server's --sites DIR here (production and the previews) instead of --dir")
	var hosts stringList
	fs.Var(&hosts, "host", "with --sites-dir: a host of production (repeat for each)")
	siteName := fs.String("site-name", "", "with --sites-dir: the site's name, in each preview's host <preview>--<site>.<domain>")
	domain := fs.String("previews-domain", "", "with --sites-dir: the domain of the previews' hosts")
	value := fs.String("site-value", "", "with --sites-dir: the site value file, embedded in every entry of the index")
	entryFiles := fs.Int64("entry-max-files", int64(gitsource.DefaultMaxEntries), "with --sites-dir: each entry's maxFiles")
	entryBytes := fs.Int64("entry-max-bytes", gitsource.DefaultMaxBytes, "with --sites-dir: each entry's maxBytes")
	entryRPS := fs.Int64("entry-requests-per-second", 0, "with --sites-dir: each entry's requestsPerSecond (0: none)")
	_ = fs.Parse(args)
	if *fetcher == "" {
		return errors.New("pull: --fetcher is required")
	}
	storeDir := *dir
	var layout *contentagent.SitesLayout
	if *sitesDir != "" {
		if len(hosts) == 0 || *siteName == "" || *domain == "" || *value == "" {
			return errors.New("pull: --sites-dir needs --host, --site-name, --previews-domain and --site-value")
		}
		layout = &contentagent.SitesLayout{Dir: *sitesDir, Hosts: hosts, Site: *siteName, Domain: *domain, ValueFile: *value,
			Limits: poolindex.Limits{MaxFiles: *entryFiles, MaxBytes: *entryBytes, RequestsPerSecond: *entryRPS}}
		storeDir = filepath.Join(layout.ContentDir(), contentagent.ProductionID)
	}
	p := &contentagent.Puller{
		FetcherURL:  strings.TrimSuffix(*fetcher, "/"),
		Store:       &gitsource.Store{Dir: storeDir},
		Sites:       layout,
		MaxBytes:    *maxBytes,
		MaxEntries:  *maxEntries,
		MaxDepth:    *maxDepth,
		ServerAdmin: *admin,
		ReloadWait:  *reloadWait,
		// Longer than the fetcher's long poll (30 s), so only a dead connection times out.
		Client: &http.Client{Timeout: 10 * time.Minute},
	}
	if err := p.Init(); err != nil {
		return err
	}
	return serveAndRun(ctx, *listen, p.Handler(*wait), p.Run)
}

// serveAndRun serves h on listen while run works, until ctx ends or the server fails.
func serveAndRun(ctx context.Context, listen string, h http.Handler, run func(context.Context)) error {
	errs := make(chan error, 1)
	go func() { errs <- serve(ctx, listen, server(h), nil) }()
	go run(ctx)
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		return nil
	}
}

// server is the HTTP server of the agents' own ports. Header and idle timeouts bound slow clients; there is no
// read or write timeout, which would cut long polls and large bundle downloads.
func server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
}

// serve runs srv on addr (its listener wrapped by wrap, when set) until ctx ends.
func serve(ctx context.Context, addr string, srv *http.Server, wrap func(net.Listener) net.Listener) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if wrap != nil {
		l = wrap(l)
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stringList is a repeated string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
