package pool

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/benchmark"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The envtest suite: a real kube-apiserver and etcd, the controller in a real manager with the production cache.
// There is no kubelet, Deployment controller or garbage collector: tests write Deployment and Pod status themselves,
// and the pods' and the fetcher's /sites are answered by httptest servers on loopback (podAddrs).

var (
	env       *testenv.Env
	k8s       client.Client // direct client (no cache): what a user's kubectl sees
	board     = poolstate.New(1 << 14)
	podAddrs  = &addrs{m: map[string]string{}}
	nsCounter atomic.Int32
	// poolClock is the controller's clock. A test that measures traffic moves it forward, never back: the other
	// tests' pools keep running their passes.
	poolClock = clocktesting.NewFakePassiveClock(time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC))
	// metricsAddrs maps a site's own pod's IP to the loopback address of the httptest server that answers its
	// admin port's /metrics (the Scraper dials it there).
	metricsAddrs = &addrs{m: map[string]string{}}
	// suiteReferenced is the reconciler's referenced metadata cache, so that a test can wait until the operator has
	// seen an object (the order of two informers' events is not guaranteed).
	suiteReferenced client.Reader
)

const (
	testServerImage       = "example.test/hyperstatic/server:pool"
	testAgentImage        = "example.test/hyperstatic/content-agent:pool"
	testOperatorNamespace = "hyperstatic-system"
)

// addrs maps a pod (namespace/name) to the loopback address of the httptest server that answers for it.
type addrs struct {
	mu sync.Mutex
	m  map[string]string
}

func (a *addrs) set(ns, pod, addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.m[ns+"/"+pod] = addr
}

func (a *addrs) addr(p *corev1.Pod, _ int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if addr, ok := a.m[p.Namespace+"/"+p.Name]; ok {
		return addr
	}
	return "127.0.0.1:1" // nothing listens: connection refused
}

// dialPodIP dials the test server that answers for a site pod's IP (metricsAddrs), or addr itself.
func dialPodIP(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	metricsAddrs.mu.Lock()
	to, ok := metricsAddrs.m[host]
	metricsAddrs.mu.Unlock()
	if ok {
		addr = to
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	// Nothing in this suite plays the site controller: the board's announcements are drained here.
	go func() {
		for range board.Events() { //nolint:revive // draining
		}
	}()
	testenv.Main(m, &env, setupSuite)
}

func setupSuite(e *testenv.Env) (ctrl.Manager, error) {
	k8s = e.Client
	mgr, err := e.NewManager(func(o *ctrl.Options) {
		o.Cache = managercache.ManagerOptions(sitechild.FieldOwner, benchmark.FieldOwner)
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	podReader := &poolread.HTTPReader{Client: &http.Client{Timeout: 2 * time.Second},
		AdminPort: v1alpha1.AdminPort, FetcherPort: v1alpha1.GitFetcherPort, Addr: podAddrs.addr}
	r := &Reconciler{
		Client:            mgr.GetClient(),
		Recorder:          mgr.GetEventRecorderFor(sitechild.FieldOwner),
		Clock:             poolClock,
		ServerImage:       testServerImage,
		ContentAgentImage: testAgentImage,
		OperatorNamespace: testOperatorNamespace,
		Reader:            podReader,
		Releaser:          podReader,
		Scraper: &podmetrics.HTTPScraper{Client: &http.Client{Timeout: 2 * time.Second,
			Transport: &http.Transport{DialContext: dialPodIP}}},
		Board:           board,
		TrafficInterval: time.Second,
		Policy:          &suitePolicy,
		ServedRetry:     200 * time.Millisecond,
		ServedRefresh:   time.Second,
		StalledRetry:    500 * time.Millisecond,
		// One mirror a pass: every test with ConfigMap sites goes through the batches (step_mirrors.go).
		MirrorsPerPass: 1,
	}
	err = r.SetupWithManager(mgr)
	suiteReferenced = r.referenced
	return mgr, err
}

// uniqueName is a fresh name for a namespace or a pool.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().Unix()%100000, nsCounter.Add(1))
}

// namespace creates a namespace enforcing the restricted Pod Security Standard, with its default ServiceAccount.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	testenv.Must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}))
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// poolCondition checks a pool's condition status and, when reason is not empty, its reason.
func poolCondition(p *v1alpha1.StaticSitePool, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(p.Status.Conditions, typ)
	if c == nil {
		if status == "" {
			return nil
		}
		return fmt.Errorf("no %s condition in %s", typ, describe(p))
	}
	if status == "" {
		return fmt.Errorf("%s condition present: %+v", typ, *c)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return nil
}

func describe(p *v1alpha1.StaticSitePool) string {
	var b strings.Builder
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "[%s=%s %s: %s] ", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// waitPool polls the pool until check passes.
func waitPool(t *testing.T, name, what string, check func(*v1alpha1.StaticSitePool) error) *v1alpha1.StaticSitePool {
	t.Helper()
	p := &v1alpha1.StaticSitePool{}
	testenv.Eventually(t, what, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		return check(p)
	})
	return p
}

// poolEvents lists the events recorded for a pool (cluster-scoped: in namespace default), as "Type Reason Message".
func poolEvents(t *testing.T, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	testenv.Must(t, k8s.List(context.Background(), list))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "StaticSitePool" {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return out
}

func waitPoolEvent(t *testing.T, name, substr string) {
	t.Helper()
	testenv.Eventually(t, "event "+substr, func() error {
		ev := poolEvents(t, name)
		for _, e := range ev {
			if strings.Contains(e, substr) {
				return nil
			}
		}
		return fmt.Errorf("no event containing %q in %q", substr, ev)
	})
}

// suitePolicy allows everything but Git repositories outside https://git.example/ (the fixtures' gitSite), so
// TestPolicyKeepsASiteOut sees a refusal.
var suitePolicy = func() tenancy.Policy {
	p := tenancy.Unrestricted()
	p.Git.URLs = []string{"https://git.example/"}
	return p
}()
