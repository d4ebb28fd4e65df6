package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// snapshot is every counter the report needs, at one moment.
type snapshot struct {
	at   time.Time
	api  families // kube-apiserver /metrics
	op   families // the operator's /metrics
	proc procSample
}

// bench is one run's moving parts.
type bench struct {
	cfg        *config
	cluster    *cluster
	client     client.Client
	watched    client.Reader // StaticSites and the operator's Deployments, from watches
	operator   *child
	metricsURL string
	pprofURL   string // the operator's /debug/pprof/ with -heap-profile
	memcg      *memcg // with -operator-memory-limit: the operator's cgroup
	logDir     string // the children's logs
}

func run(ctx context.Context, cfg *config) (err error) {
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	workDir, err := os.MkdirTemp("", "bench-operator-")
	if err != nil {
		return err
	}
	say("work directory (logs, kubeconfig): %s", workDir)
	ps := &procs{logDir: workDir}
	var cgroup *memcg // removed last, once the operator in it has stopped (deferred before ps.stopAll)
	defer func() {
		if cgroup != nil {
			cgroup.remove()
		}
	}()

	say("starting kube-apiserver and etcd (%s)", cfg.assets)
	cl, err := startControlPlane(cfg, workDir)
	if err != nil {
		return err
	}
	// Deferred in this order, the children stop first, then the API server and etcd they talk to.
	defer func() { _ = cl.env.Stop() }()
	defer ps.stopAll()
	say("starting kube-controller-manager, kube-scheduler (%s) and kwok (pod CIDR %s, node IP %s)", cfg.k8sBin, cfg.podCIDR, cfg.nodeIP)
	if err := cl.startComponents(cfg, ps, workDir); err != nil {
		return err
	}
	say("creating %d fake nodes", cfg.nodes)
	if err := cl.createNodes(ctx, cfg.nodes); err != nil {
		return err
	}
	// With a pool, the single-site server's admin port is behind the admin proxy (poolserve.go).
	adminAddr := "0.0.0.0:" + strconv.Itoa(v1alpha1.AdminPort)
	if cfg.poolSites > 0 {
		if adminAddr, err = freeLoopbackAddr(); err != nil {
			return err
		}
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	restCfg := *cl.env.Config
	restCfg.QPS, restCfg.Burst = 200, 400
	c, err := client.New(&restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	// The harness' view of the sites, Deployments and the pool's index: watched, not polled.
	byObject := map[client.Object]cache.ByObject{
		&appsv1.Deployment{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue})},
	}
	watchedKinds := []client.Object{&v1alpha1.StaticSite{}, &appsv1.Deployment{}}
	if cfg.poolSites > 0 {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{benchPoolNamespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{poolplacement.LabelPool: benchPool, poolplacement.LabelComponent: poolIndexComponent}),
		}
		watchedKinds = append(watchedKinds, &corev1.ConfigMap{})
	}
	watched, err := cache.New(&restCfg, cache.Options{Scheme: scheme, ByObject: byObject})
	if err != nil {
		return err
	}
	for _, obj := range watchedKinds {
		if _, err := watched.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	go func() { _ = watched.Start(ctx) }()
	if !watched.WaitForCacheSync(ctx) {
		return fmt.Errorf("the harness' cache did not sync")
	}
	say("creating %d StaticSites × %d replicas in %d namespaces", cfg.sites, cfg.replicas, cfg.namespaces)
	if err := createSites(ctx, c, cfg); err != nil {
		return err
	}

	// The dedicated sites' site value, as the operator renders it from a site the API server defaulted: every
	// dedicated site has the same one, and the server the scrapes reach serves it (the StaticSite controller waits
	// until every ready pod reports the revision it rendered).
	siteFile, err := writeSiteValue(ctx, c, cfg.namespaces, workDir)
	if err != nil {
		return err
	}
	say("starting the real hyperstatic-server, its admin port on %s (answers every dedicated pod IP's scrape)", adminAddr)
	if _, err := startResponder(ctx, cfg, ps, adminAddr, siteFile); err != nil {
		return err
	}

	if cfg.poolSites > 0 {
		say("starting the pool's processes: its index volume, fetcher and puller (in this process), a hyperstatic-server --sites, and the admin proxy on 0.0.0.0:%d", v1alpha1.AdminPort)
		onIndexChange := func(kick func()) error {
			inf, err := watched.GetInformer(ctx, &corev1.ConfigMap{})
			if err != nil {
				return err
			}
			_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { kick() },
				UpdateFunc: func(any, any) { kick() },
				DeleteFunc: func(any) { kick() },
			})
			return err
		}
		serving, err := startPoolServing(ctx, cfg, ps, &restCfg, watched, onIndexChange, workDir, adminAddr)
		if err != nil {
			return err
		}
		defer serving.stop()
	}
	ip, err := cl.preflight(ctx, cfg.local)
	if err != nil {
		return err
	}
	say("preflight: kwok gave a pod %s (machine-local: %s) and the server answered a scrape on it", ip, cfg.local)
	b := &bench{cfg: cfg, cluster: cl, client: c, watched: watched, logDir: workDir}

	// The tripwire: any pod IP that is not machine-local stops the operator at once (kwok's config already rules
	// it out).
	var tripped error
	var trippedOnce sync.Once
	podIPsChecked, err := guardPodIPs(ctx, informers.NewSharedInformerFactory(cl.clientset, 0), cfg.local, func(e error) {
		trippedOnce.Do(func() {
			tripped = e
			if b.operator != nil {
				stop(b.operator, 0)
			}
			abort(e)
		})
	})
	if err != nil {
		return err
	}

	if cfg.poolSites > 0 {
		say("creating StaticSitePool %s (%d pods, %d index shards) and %d sites placed in it, each with a ConfigMap", benchPool, cfg.poolReplicas, cfg.poolShards, cfg.poolSites)
		if err := createPool(ctx, c, cfg); err != nil {
			return err
		}
	}

	r := &report{cfg: cfg, startedAt: time.Now()}
	if r.apiAtStart, err = b.apiMetrics(ctx); err != nil {
		return err
	}
	err = b.startOperator(ps)
	cgroup = b.memcg // made even when the start then failed
	if err != nil {
		return err
	}
	r.operatorStart = time.Now()
	r.loadAtStart = loadAverage()
	say("operator started (pid %d); waiting for every site to be reconciled", b.operator.Process.Pid)
	if err := b.waitReconciled(ctx, r); err != nil {
		return withTripped(err, tripped)
	}
	startup, err := b.snapshot(ctx)
	if err != nil {
		return err
	}
	r.startup = startup

	say("waiting for the steady state: no write by the operator for %s (at most %s)", cfg.settleQuiet, cfg.settleMax)
	r.settled, r.settleTime = b.waitSettled(ctx, cfg.settleQuiet, cfg.settleMax)
	say("steady-state window: %s, the harness makes no API request meanwhile", cfg.quiet)
	if r.quietBefore, err = b.snapshot(ctx); err != nil {
		return err
	}
	if err := sleep(ctx, cfg.quiet); err != nil {
		return withTripped(err, tripped)
	}
	if r.quietAfter, err = b.snapshot(ctx); err != nil {
		return err
	}
	if err := b.memoryLimitFigures(r); err != nil {
		return err
	}
	if cfg.heapProfile { // after the window, so that its forced GC changes none of the window's figures
		dir := workDir
		if cfg.out != "" {
			dir = filepath.Dir(cfg.out)
		}
		if r.heap, err = b.takeHeapProfile(ctx, dir); err != nil {
			return err
		}
		say("the operator's heap profile: %s", r.heap.file)
	}
	adminPort := strconv.Itoa(v1alpha1.AdminPort)
	if r.sockets, err = checkMachineLocalOnly(b.operator.Process.Pid, adminPort, cfg.local); err != nil {
		return err
	}

	if cfg.autoscaled > 0 {
		say("turning autoscaling on for %d sites (%d pods to scrape every pass)", cfg.autoscaled, cfg.autoscaled*cfg.replicas)
		if err := enableAutoscaling(ctx, c, cfg, cfg.autoscaled); err != nil {
			return err
		}
		if err := sleep(ctx, cfg.autoscaleWarmup); err != nil {
			return withTripped(err, tripped)
		}
		say("autoscaling window: %s", cfg.autoscaleWindow)
		if r.scaleBefore, err = b.snapshot(ctx); err != nil {
			return err
		}
		if err := sleep(ctx, cfg.autoscaleWindow/2); err != nil {
			return withTripped(err, tripped)
		}
		// Mid-window, while scrapes are in flight: the operator's sockets again.
		n, err := checkMachineLocalOnly(b.operator.Process.Pid, adminPort, cfg.local)
		if err != nil {
			return err
		}
		r.sockets.operatorSockets += n.operatorSockets
		r.sockets.scrapeSockets += n.scrapeSockets
		if err := sleep(ctx, cfg.autoscaleWindow-cfg.autoscaleWindow/2); err != nil {
			return withTripped(err, tripped)
		}
		if r.scaleAfter, err = b.snapshot(ctx); err != nil {
			return err
		}
	}
	if tripped != nil {
		return tripped
	}
	r.podIPsChecked = podIPsChecked()
	r.loadAtEnd = loadAverage()
	if b.operator.exited() {
		return fmt.Errorf("the operator exited during the run: see %s/operator.log", workDir)
	}
	text := r.markdown()
	fmt.Print(text)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(text), 0o644); err != nil {
			return err
		}
		say("report written to %s", cfg.out)
	}
	return nil
}

func withTripped(err, tripped error) error {
	if tripped != nil {
		return tripped
	}
	return err
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// freeLoopbackAddr returns a free 127.0.0.1 port's address.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// benchPolicy is the operator's tenancy policy here: its multi-tenant default, with the dedicated sites' content
// image (newSite) allowed, as a platform allows its tenants' registries. A later --tenancy-policy in
// -operator-args replaces it.
func benchPolicy() (string, error) {
	p := tenancy.Default().AllowingImages(benchContentImage)
	b, err := json.Marshal(p)
	return string(b), err
}

// startOperator runs the manager binary against the cluster, its endpoints on loopback.
func (b *bench) startOperator(ps *procs) error {
	metricsAddr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	probeAddr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	b.metricsURL = "http://" + metricsAddr + "/metrics"
	policy, err := benchPolicy()
	if err != nil {
		return err
	}
	args := append([]string{
		"--tenancy-policy=" + policy,
		"--kubeconfig=" + b.cluster.kubeconfig,
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + probeAddr,
		"--leader-elect=false",
		"--operator-namespace=hyperstatic-system",
	}, strings.Fields(b.cfg.operatorArgs)...)
	if b.cfg.heapProfile {
		pprofAddr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		b.pprofURL = "http://" + pprofAddr + "/debug/pprof/"
		args = append(args, "--pprof-bind-address="+pprofAddr)
	}
	bin := b.cfg.manager
	if b.cfg.operatorMemoryLimit > 0 {
		if b.memcg, err = newMemcg(b.cfg.operatorMemoryLimit); err != nil {
			return err
		}
		bin, args = b.memcg.wrap(filepath.Join(b.cfg.repo, "hack", "bench-operator", "memcg.sh"), bin, args)
	}
	b.operator, err = ps.startWithEnv("operator", bin, b.cfg.operatorEnv, args...)
	return err
}

// memoryLimitFigures reads, with -operator-memory-limit, the soft limit the operator logged and its cgroup's
// figures (after the steady-state window, while it still runs).
func (b *bench) memoryLimitFigures(r *report) error {
	if b.memcg == nil {
		return nil
	}
	log, err := os.ReadFile(filepath.Join(b.logDir, "operator.log"))
	if err != nil {
		return err
	}
	r.softLimit = softLimitLogged(log)
	s, err := b.memcg.stats()
	if err != nil {
		return fmt.Errorf("the operator's memory cgroup: %w", err)
	}
	r.memcg = &s
	return nil
}

// waitReconciled polls until every dedicated site is reconciled (recording when) and every Deployment is
// available, and every pool site is Placed and Ready (recording when each happened first).
func (b *bench) waitReconciled(ctx context.Context, r *report) error {
	deadline := time.Now().Add(b.cfg.reconcileTimeout)
	lastSay := time.Time{}
	for {
		if b.operator.exited() {
			return fmt.Errorf("the operator exited: see its log in the work directory")
		}
		p, err := observe(ctx, b.watched)
		var pp poolProgress
		if err == nil && b.cfg.poolSites > 0 {
			pp, err = observePool(ctx, b.watched)
		}
		now := time.Now()
		if err == nil {
			since := now.Sub(r.operatorStart).Seconds()
			if p.reconciled == b.cfg.sites && r.reconciledAt.IsZero() {
				r.reconciledAt = now
				say("every dedicated site reconciled %.1f s after the operator started", since)
			}
			if p.available == b.cfg.sites && r.availableAt.IsZero() {
				r.availableAt = now
				say("every Deployment available (%d ready pods) %.1f s after the operator started", p.readyPods, since)
			}
			if b.cfg.poolSites > 0 && pp.placed == b.cfg.poolSites && r.poolPlacedAt.IsZero() {
				r.poolPlacedAt = now
				say("every pool site Placed %.1f s after the operator started", since)
			}
			if b.cfg.poolSites > 0 && pp.ready == b.cfg.poolSites && r.poolReadyAt.IsZero() {
				r.poolReadyAt = now
				say("every pool site Ready %.1f s after the operator started", since)
			}
			// With loopback pod IPs, Placed, not Ready: a pool site's EndpointSlice lists the pool pods' IPs, and the
			// API server refuses loopback ones (machinelocal.go), so a pool site is never Ready. Isolated (netns.sh),
			// it takes Ready too.
			r.poolReady = pp.ready
			poolDone := !r.poolPlacedAt.IsZero() && (!b.cfg.local.isolated || !r.poolReadyAt.IsZero())
			if !r.availableAt.IsZero() && (b.cfg.poolSites == 0 || poolDone) {
				return nil
			}
			if now.Sub(lastSay) >= 5*time.Second {
				line := fmt.Sprintf("%5.1f s: %d/%d sites reconciled, %d available, %d pods ready", since,
					p.reconciled, b.cfg.sites, p.available, p.readyPods)
				if b.cfg.poolSites > 0 {
					line += fmt.Sprintf("; pool sites %d/%d placed, %d ready", pp.placed, b.cfg.poolSites, pp.ready)
				}
				say("%s", line)
				lastSay = now
			}
		}
		if now.After(deadline) {
			return fmt.Errorf("not every site reconciled and available (and every pool site placed, and Ready when isolated) after %s", b.cfg.reconcileTimeout)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitSettled waits until the operator has made no write request the API server accepted (POST, PUT, PATCH,
// DELETE: read from its own metrics, no API request) for quiet, at most max. It says whether it settled and how long it took. Reconciles
// may go on (the StaticSite controller re-reads each site's content gauges every minute): what must stop is
// writing.
func (b *bench) waitSettled(ctx context.Context, quiet, maxWait time.Duration) (bool, time.Duration) {
	start := time.Now()
	last, lastChange := -1.0, time.Now()
	for time.Since(start) < maxWait {
		if f, err := b.operatorMetrics(ctx); err == nil {
			// Writes the API server accepted: a refused one (with loopback pod IPs, a pool site's EndpointSlice,
			// retried) changes nothing, and is reported apart.
			n := writes(f.sumBy("rest_client_requests_total", "method", nil), restClientWriteMethods) - f.refusedWrites()
			if n != last {
				last, lastChange = n, time.Now()
			} else if time.Since(lastChange) >= quiet {
				return true, time.Since(start)
			}
		}
		if sleep(ctx, time.Second) != nil {
			break
		}
	}
	return false, time.Since(start)
}

func (b *bench) operatorMetrics(ctx context.Context) (families, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseFamilies(bytes.NewReader(body))
}

// apiMetrics reads kube-apiserver's /metrics.
func (b *bench) apiMetrics(ctx context.Context) (families, error) {
	raw, err := b.cluster.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	return parseFamilies(bytes.NewReader(raw))
}

func (b *bench) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now()}
	var err error
	if s.api, err = b.apiMetrics(ctx); err != nil {
		return s, err
	}
	if s.op, err = b.operatorMetrics(ctx); err != nil {
		return s, fmt.Errorf("operator /metrics: %w", err)
	}
	if s.proc, err = readProc(b.operator.Process.Pid); err != nil {
		return s, fmt.Errorf("operator /proc: %w", err)
	}
	return s, nil
}
