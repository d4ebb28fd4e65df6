// Command manager runs the Hyperstatic operator: the controller-runtime manager with the StaticSite,
// StaticSitePool, autoscaler and Benchmark controllers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling"
	"hyperstatic.dev/hyperstatic/controllers/benchmark"
	"hyperstatic.dev/hyperstatic/controllers/pool"
	"hyperstatic.dev/hyperstatic/controllers/staticsite"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/eventlanes"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/memlimit"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/statemetrics"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// version is set at build time: -ldflags "-X main.version=$(VERSION)". It names the default server image.
var version = "dev"

// options are the manager's flags.
type options struct {
	metricsAddr   string
	probeAddr     string
	leaderElect   bool
	leaderElectNS string
	serverImage   string
	printVersion  bool
	// autoscaleInterval is how often autoscaled StaticSites are scraped and re-decided.
	autoscaleInterval time.Duration
	// k6Image is the default image of Benchmark Jobs.
	k6Image string
	// contentAgentImage is the image of Git sites' fetcher pods and puller sidecars.
	contentAgentImage string
	// serverImageRolloutConcurrency is how many StaticSites may roll to a new default server image at a time.
	serverImageRolloutConcurrency int
	// operatorNamespace is where the operator runs: sites' NetworkPolicies open the admin port to it.
	operatorNamespace string
	// tenancyPolicy is the JSON of the tenancy policy (internal/tenancy); empty: tenancy.Default().
	tenancyPolicy string
	// staticSiteConcurrency is how many StaticSites the StaticSite controller reconciles at once.
	staticSiteConcurrency int
	// clusterDomain is the cluster's DNS domain: pool sites answer to their Service's names under it.
	clusterDomain string
	// kubeAPIQPS and kubeAPIBurst bound the manager's requests to the API server (client-go's token bucket); a QPS
	// of 0 keeps what the given rest.Config says.
	kubeAPIQPS   float64
	kubeAPIBurst int
	// skipNameValidation lets a process build the manager more than once (tests): controller-runtime otherwise
	// refuses a second controller of the same name, whose metrics would mix with the first's.
	skipNameValidation bool
	// pprofAddr serves Go's /debug/pprof/ (heap, CPU, goroutine profiles: issue 40's memory); "0", the default,
	// serves nothing: the endpoint has no authentication.
	pprofAddr string
}

// policy parses --tenancy-policy: the multi-tenant default when it is not given.
func (o *options) policy() (tenancy.Policy, error) {
	if o.tenancyPolicy == "" {
		return tenancy.Default(), nil
	}
	return tenancy.Parse(o.tenancyPolicy)
}

// defaultStaticSiteConcurrency is the StaticSite controller's default worker count. One worker made a restart
// with 1,000 sites take about 100 s (each reconcile waits on several API round trips, applies and a status
// write, and pods' readiness re-queues every site a few times): make bench-operator, docs/bench/operator-*.md.
const defaultStaticSiteConcurrency = 8

// defaultKubeAPIQPS and defaultKubeAPIBurst are the manager's client-side budget of API requests: 50 per second,
// 300 in a burst (Flux's controllers' defaults). controller-runtime's own default is no client-side limit
// (ctrl.GetConfig sets QPS -1 and leaves the API server's priority and fairness to protect it); a limit keeps one
// operator from flooding the API server when thousands of sites change at once. client-go keeps one such bucket per
// REST client: the manager's client has one per kind (StaticSites, Services, EndpointSlices...), and the events one
// of their own (internal/eventlanes), so a burst of one kind's writes does not spend another kind's budget. Within
// a kind, tokens go to requests in the order they ask, and each worker has one request in flight: a site's write
// waits for at most one write of each other worker, never for another tenant's backlog.
const (
	defaultKubeAPIQPS   = 50
	defaultKubeAPIBurst = 300
)

// poolBoardBuffer is how many pool sites' changes the Board holds for the StaticSite controller before the pool
// controller waits for it to take them.
const poolBoardBuffer = 4096

func bindFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the controller-runtime Prometheus metrics endpoint; \"0\" turns it off.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0",
		"Address of Go's /debug/pprof/ endpoints (heap, CPU and goroutine profiles: make bench-operator's BENCH_OPERATOR_HEAP_PROFILE); \"0\", the default, turns them off. Unauthenticated: bind it to loopback.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader, so only one of several replicas reconciles.")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader election Lease (default: the pod's namespace).")
	fs.StringVar(&o.serverImage, "server-image", "hyperstatic/server:"+version, "Default hyperstatic server image of StaticSite pods.")
	fs.IntVar(&o.serverImageRolloutConcurrency, "server-image-rollout-concurrency", staticsite.DefaultServerImageRolloutConcurrency,
		"How many StaticSites on the default server image may roll to a new --server-image at a time (after an operator upgrade); 0 means no limit.")
	fs.BoolVar(&o.printVersion, "version", false, "Print the version and exit.")
	fs.StringVar(&o.k6Image, "k6-image", "hyperstatic/k6:"+version, "Default k6 image of Benchmark Jobs.")
	fs.StringVar(&o.contentAgentImage, "content-agent-image", "hyperstatic/content-agent:"+version,
		"Image of Git sites' fetcher pods and of the puller sidecar of their server pods (content-agent fetch|pull).")
	fs.StringVar(&o.operatorNamespace, "operator-namespace", os.Getenv("POD_NAMESPACE"),
		"Namespace the operator runs in (default: $POD_NAMESPACE, which the chart sets): StaticSites' NetworkPolicies open the server's admin port to it.")
	fs.StringVar(&o.tenancyPolicy, "tenancy-policy", "",
		"The tenancy policy as JSON (the chart's values.tenancy; docs/security.md): what StaticSites and Benchmarks may ask beyond their own site. Empty: the multi-tenant default.")
	fs.IntVar(&o.staticSiteConcurrency, "staticsite-max-concurrent-reconciles", defaultStaticSiteConcurrency,
		"How many StaticSites are reconciled at once (distinct sites only: one site is never reconciled twice at a time).")
	fs.StringVar(&o.clusterDomain, "cluster-domain", pool.DefaultClusterDomain,
		"The cluster's DNS domain: a pool site answers to <name>.<namespace>.svc.<cluster-domain> (docs/design/pools.md).")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", defaultKubeAPIQPS,
		"Requests per second the manager may make to the Kubernetes API server, on average (client-go's token bucket, one per kind and one for events); -1: no client-side limit.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", defaultKubeAPIBurst, "Requests the manager may make to the API server in a burst above --kube-api-qps.")
	fs.DurationVar(&o.autoscaleInterval, "autoscaler-scrape-interval", autoscaling.DefaultScrapeInterval, "How often autoscaled StaticSites' pods are scraped and the replica count re-decided.")
	return o
}

func main() {
	o := bindFlags(flag.CommandLine) // --kubeconfig is registered there by controller-runtime
	zo := zap.Options{}
	zo.BindFlags(flag.CommandLine)
	flag.Parse()
	if o.printVersion {
		fmt.Println(version)
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo)))
	// Before anything allocates much: the runtime collects within the container's memory limit (internal/memlimit).
	if msg, err := memlimit.Apply("/"); err != nil {
		ctrl.Log.WithName("setup").Error(err, "no soft memory limit")
	} else {
		ctrl.Log.WithName("setup").Info(msg)
	}
	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), o); err != nil {
		ctrl.Log.WithName("setup").Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
}

// controllerOptions sets the StaticSite controller's worker count. It is keyed by the kind the controller is
// For: the autoscaler, also For StaticSites, sets its own count and keeps it; the Benchmark controller keeps one.
func controllerOptions(o *options) config.Controller {
	return config.Controller{GroupKindConcurrency: map[string]int{
		v1alpha1.GroupVersion.WithKind("StaticSite").GroupKind().String(): o.staticSiteConcurrency,
	}, SkipNameValidation: &o.skipNameValidation}
}

// run starts the manager and blocks until ctx ends.
func run(ctx context.Context, cfg *rest.Config, o *options) error {
	mgr, events, err := newManager(cfg, o)
	if err != nil {
		return err
	}
	defer events.Stop() // after the controllers, so that their last events are written
	// The objects' state (objectives, capacity, conditions) for the chart's alerts and dashboard, read from the
	// cache at each scrape of --metrics-bind-address.
	if err := registerStateMetrics(statemetrics.New(mgr.GetCache())); err != nil {
		return fmt.Errorf("register the state metrics: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting the manager", "version", version, "serverImage", o.serverImage, "serverImageRolloutConcurrency", o.serverImageRolloutConcurrency, "k6Image", o.k6Image, "contentAgentImage", o.contentAgentImage, "staticSiteConcurrency", o.staticSiteConcurrency, "clusterDomain", o.clusterDomain, "operatorNamespace", o.operatorNamespace, "leaderElection", o.leaderElect, "kubeAPIQPS", o.kubeAPIQPS, "kubeAPIBurst", o.kubeAPIBurst)
	return mgr.Start(ctx)
}

// registerStateMetrics registers c on controller-runtime's registry, in place of the collector of a manager that
// ran before it in this process (a test runs the manager more than once; the operator runs it once).
func registerStateMetrics(c prometheus.Collector) error {
	err := crmetrics.Registry.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		crmetrics.Registry.Unregister(already.ExistingCollector)
		err = crmetrics.Registry.Register(c)
	}
	return err
}

// newManager is the operator's manager with its controllers, as the operator runs it, not started: its API client
// within --kube-api-qps and --kube-api-burst, and every controller's events through one lane per namespace (the
// lanes returned, to be stopped once the manager has).
func newManager(cfg *rest.Config, o *options) (ctrl.Manager, *eventlanes.Lanes, error) {
	if o.kubeAPIQPS != 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = float32(o.kubeAPIQPS), o.kubeAPIBurst
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(gatewayv1.Install(scheme)) // HTTPRoutes of spec.route; nothing needs the CRDs until a site asks

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Cache:                         managercache.ManagerOptions(sitechild.FieldOwner, benchmark.FieldOwner),
		Controller:                    controllerOptions(o),
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "operator.hyperstatic.dev",
		LeaderElectionNamespace:       o.leaderElectNS,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create the manager: %w", err)
	}
	policy, err := o.policy()
	if err != nil {
		return nil, nil, err
	}
	policy = policy.AllowingImages(o.serverImage, o.k6Image) // the operator's own: never refused when named
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("create a discovery client: %w", err)
	}
	// Every controller's events go through one lane per namespace (internal/eventlanes), not through the manager's
	// recorder, whose one goroutine writes every event of the process in turn: a pool's burst of sites would hold
	// every other tenant's events behind its own (docs/design/pools.md).
	events, err := eventlanes.ForConfig(cfg, mgr.GetHTTPClient(), scheme, eventlanes.Options{Log: ctrl.Log.WithName("events")})
	if err != nil {
		return nil, nil, err
	}
	// What the pool controller learns of each pool site, read by the StaticSite controller (internal/poolstate).
	pools := poolstate.New(poolBoardBuffer)
	if err := (&staticsite.Reconciler{
		Client:            mgr.GetClient(),
		Recorder:          events.For(sitechild.FieldOwner),
		Clock:             clock.RealClock{},
		Scraper:           podmetrics.NewHTTPScraper(),
		ServerImage:       o.serverImage,
		ContentAgentImage: o.contentAgentImage,
		GitReader:         gitrevision.NewHTTPReader(),
		ServerVersion:     disco.ServerVersion,
		// An upgrade of the operator changes the default server image: roll the sites to it a few at a time.
		ServerImageRolloutConcurrency: o.serverImageRolloutConcurrency,
		OperatorNamespace:             o.operatorNamespace,
		Policy:                        &policy,
		Pools:                         pools,
	}).SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("set up the StaticSite controller: %w", err)
	}
	// One client reads the pool pods' /sites and releases their held drains.
	poolReader := poolread.NewHTTPReader(v1alpha1.AdminPort, v1alpha1.GitFetcherPort)
	if err := (&pool.Reconciler{
		Client:            mgr.GetClient(),
		Recorder:          events.For(sitechild.FieldOwner),
		Clock:             clock.RealClock{},
		ServerImage:       o.serverImage,
		ContentAgentImage: o.contentAgentImage,
		OperatorNamespace: o.operatorNamespace,
		ClusterDomain:     o.clusterDomain,
		Reader:            poolReader,
		Releaser:          poolReader,
		Scraper:           podmetrics.NewHTTPScraper(), // the own pods of sites placed automatically, for their traffic
		Board:             pools,
		Policy:            &policy,
	}).SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("set up the StaticSitePool controller: %w", err)
	}
	if err := autoscaling.New(mgr.GetClient(), events.For(autoscaling.ControllerName),
		podmetrics.NewHTTPScraper(), autoscaling.WithScrapeInterval(o.autoscaleInterval)).SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("set up the autoscaler: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("create a clientset: %w", err)
	}
	if err := (&benchmark.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  events.For(benchmark.FieldOwner),
		Clock:     clock.RealClock{},
		Image:     o.k6Image,
		Logs:      benchmark.KubeLogs{Clientset: clientset},
		Content:   benchmark.NewHTTPContentLister(),
		Scraper:   podmetrics.NewHTTPScraper(),
		Policy:    &policy,
	}).SetupWithManager(mgr); err != nil {
		return nil, nil, fmt.Errorf("set up the Benchmark controller: %w", err)
	}
	return mgr, events, nil
}
