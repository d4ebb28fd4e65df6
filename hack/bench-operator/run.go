package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
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
	say("starting the real hyperstatic-server on 0.0.0.0:%d (answers every pod IP's scrape)", v1alpha1.AdminPort)
	if _, err := startResponder(ctx, cfg, ps); err != nil {
		return err
	}
	ip, err := cl.preflight(ctx)
	if err != nil {
		return err
	}
	say("preflight: kwok gave a pod %s (loopback) and the server answered a scrape on it", ip)

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	restCfg := *cl.env.Config
	restCfg.QPS, restCfg.Burst = 200, 400
	c, err := client.New(&restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	// The harness' view of the sites and Deployments: watched, not polled.
	watched, err := cache.New(&restCfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&appsv1.Deployment{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue})},
	}})
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{&v1alpha1.StaticSite{}, &appsv1.Deployment{}} {
		if _, err := watched.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	go func() { _ = watched.Start(ctx) }()
	if !watched.WaitForCacheSync(ctx) {
		return fmt.Errorf("the harness' cache did not sync")
	}
	b := &bench{cfg: cfg, cluster: cl, client: c, watched: watched}

	// The tripwire: any pod IP outside loopback stops the operator at once (kwok's config already rules it out).
	var tripped error
	var trippedOnce sync.Once
	podIPsChecked, err := guardPodIPs(ctx, informers.NewSharedInformerFactory(cl.clientset, 0), func(e error) {
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

	say("creating %d StaticSites × %d replicas in %d namespaces", cfg.sites, cfg.replicas, cfg.namespaces)
	if err := createSites(ctx, c, cfg); err != nil {
		return err
	}

	r := &report{cfg: cfg, startedAt: time.Now()}
	if err := b.startOperator(ps); err != nil {
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
	adminPort := strconv.Itoa(v1alpha1.AdminPort)
	if r.sockets, err = checkLoopbackOnly(b.operator.Process.Pid, adminPort); err != nil {
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
		n, err := checkLoopbackOnly(b.operator.Process.Pid, adminPort)
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
	args := append([]string{
		"--kubeconfig=" + b.cluster.kubeconfig,
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + probeAddr,
		"--leader-elect=false",
		"--operator-namespace=hyperstatic-system",
	}, strings.Fields(b.cfg.operatorArgs)...)
	b.operator, err = ps.start("operator", b.cfg.manager, args...)
	return err
}

// waitReconciled polls until every site is reconciled (recording when) and every Deployment is available.
func (b *bench) waitReconciled(ctx context.Context, r *report) error {
	deadline := time.Now().Add(b.cfg.reconcileTimeout)
	lastSay := time.Time{}
	for {
		if b.operator.exited() {
			return fmt.Errorf("the operator exited: see its log in the work directory")
		}
		p, err := observe(ctx, b.watched)
		now := time.Now()
		if err == nil {
			if p.reconciled == b.cfg.sites && r.reconciledAt.IsZero() {
				r.reconciledAt = now
				say("every site reconciled %.1f s after the operator started", now.Sub(r.operatorStart).Seconds())
			}
			if p.available == b.cfg.sites {
				r.availableAt = now
				say("every Deployment available (%d ready pods) %.1f s after the operator started", p.readyPods, now.Sub(r.operatorStart).Seconds())
				return nil
			}
			if now.Sub(lastSay) >= 5*time.Second {
				say("%5.1f s: %d/%d sites reconciled, %d available, %d pods ready", now.Sub(r.operatorStart).Seconds(),
					p.reconciled, b.cfg.sites, p.available, p.readyPods)
				lastSay = now
			}
		}
		if now.After(deadline) {
			return fmt.Errorf("not every site reconciled and available after %s", b.cfg.reconcileTimeout)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitSettled waits until the operator has made no write request (POST, PUT, PATCH, DELETE: read from its own
// metrics, no API request) for quiet, at most max. It says whether it settled and how long it took. Reconciles
// may go on (the StaticSite controller re-reads each site's content gauges every minute): what must stop is
// writing.
func (b *bench) waitSettled(ctx context.Context, quiet, maxWait time.Duration) (bool, time.Duration) {
	start := time.Now()
	last, lastChange := -1.0, time.Now()
	for time.Since(start) < maxWait {
		if f, err := b.operatorMetrics(ctx); err == nil {
			n := writes(f.sumBy("rest_client_requests_total", "method", nil), restClientWriteMethods)
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

func (b *bench) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now()}
	raw, err := b.cluster.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return s, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	if s.api, err = parseFamilies(bytes.NewReader(raw)); err != nil {
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
