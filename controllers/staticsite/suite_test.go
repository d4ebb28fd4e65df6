package staticsite

import (
	"context"
	"fmt"
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
	"k8s.io/client-go/discovery"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/benchmark"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The envtest suite: a real kube-apiserver and etcd, the controller running in a real manager. There is no
// kubelet, no Deployment controller and no garbage collector: tests play their part by writing Deployment and Pod
// status themselves.

var (
	env       *testenv.Env
	k8s       client.Client // direct client (no cache): what a user's kubectl sees
	clockTime = time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	scraper   = &fakeScraper{samples: map[string]podmetrics.Sample{}}
	nsCounter atomic.Int32
	// suiteClock is the controller's clock: it stands at clockTime; a test that needs time to pass (a deadline)
	// moves it and puts it back (advanceClock).
	suiteClock = clocktesting.NewFakePassiveClock(clockTime)
	// pools is the suite's Board: the tests play the pool controller by publishing into it (pool_test.go).
	pools = poolstate.New(1024)
	// suiteReconciler is the controller the suite runs, for the tests of its watches (optionalcrds_test.go).
	suiteReconciler *Reconciler
)

// fakeScraper stands in for the server pods' /metrics: envtest runs no kubelet, so no pod runs. A pod a test
// backs with a real server process (servers, see realserver_test.go) is scraped by the operator's own
// podmetrics.HTTPScraper on that process's admin port; the others answer canned samples.
type fakeScraper struct {
	mu      sync.Mutex
	samples map[string]podmetrics.Sample // by namespace/pod
	servers map[string]int               // by namespace/pod: the admin port of the real server behind it
	calls   map[string]int
}

func (f *fakeScraper) Scrape(ctx context.Context, p *corev1.Pod) (podmetrics.Sample, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[p.Namespace+"/"+p.Name]++
	port, real := f.servers[p.Namespace+"/"+p.Name]
	s, ok := f.samples[p.Namespace+"/"+p.Name]
	f.mu.Unlock()
	switch {
	case real:
		return (&podmetrics.HTTPScraper{Client: &http.Client{Timeout: 5 * time.Second}, Port: port}).Scrape(ctx, p)
	case !ok:
		return s, fmt.Errorf("connection refused")
	}
	return s, nil
}

// serve makes the pod ns/pod answer from the real server whose admin port is port.
func (f *fakeScraper) serve(ns, pod string, port int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.servers == nil {
		f.servers = map[string]int{}
	}
	f.servers[ns+"/"+pod] = port
}

func (f *fakeScraper) set(ns, pod string, s podmetrics.Sample) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.samples[ns+"/"+pod] = s
}

// suitePolicy is the tenancy policy of the suite's operator: everything but priority classes other than
// allowedPriorityClass, Git URLs and hostnames other than the tests' own, so the other tests' sites (their images,
// accounts, flags) pass while tenancy_test.go sees a refusal (each rule's own refusals are tested on the pure
// check, internal/tenancy).
var suitePolicy = func() tenancy.Policy {
	p := tenancy.Unrestricted()
	p.PriorityClasses = []string{allowedPriorityClass}
	// Git from the tests' own servers on loopback, up to 1Gi (TestGitTenancy sees the refusals).
	p.Git = tenancy.GitLimits{URLs: []string{"http://127.0.0.1:"}, MaxSize: "1Gi"}
	// Hostnames under example.com, or the site's namespace under sites.test; wildcards under those patterns, which
	// previews need for their domain (TestHostnamePolicy and TestPreviewsPolicy see the refusals; a wildcard refused
	// as such is internal/tenancy's test). At most 20 previews a site.
	p.Hostnames = tenancy.HostnameLimits{Patterns: []string{"example.com", "*.example.com", tenancy.NamespaceVariable + ".sites.test"}, Wildcards: true}
	p.Previews = tenancy.PreviewLimits{Max: 20}
	// One ClusterIssuer (TestCertificatePolicy sees another refused).
	p.Certificates = tenancy.CertificateLimits{ClusterIssuers: []string{suiteClusterIssuer}}
	// The tests' identity providers (TestSSOIssuerPolicy sees another refused).
	p.SSO = tenancy.SSOLimits{Issuers: []string{"https://dex.example.com", "https://idp.example.com"}}
	return p
}()

const (
	allowedPriorityClass = "tenant-low"
	suiteClusterIssuer   = "suite-ca"
)

// testOperatorNamespace stands for the namespace the operator runs in.
const testOperatorNamespace = "hyperstatic-system"

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	testenv.Main(m, &env, setupSuite)
}

// setupSuite installs the controller as the operator does, with the suite's fakes and short retries.
func setupSuite(e *testenv.Env) (ctrl.Manager, error) {
	k8s = e.Client
	// The production cache: children the operator did not label are invisible to it, as in a real cluster.
	mgr, err := e.NewManager(func(o *ctrl.Options) {
		o.Cache = managercache.ManagerOptions(sitechild.FieldOwner, benchmark.FieldOwner)
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	r := &Reconciler{
		Client:        mgr.GetClient(),
		Recorder:      mgr.GetEventRecorderFor(sitechild.FieldOwner),
		Clock:         suiteClock,
		Scraper:       scraper,
		ServerImage:   testServerImage,
		ServerVersion: disco.ServerVersion,
		// Git sites: their content-agent containers are real processes of this test (githarness_test.go), read
		// on loopback. A site whose pods all serve the fetcher's commit is not read again for an hour: its
		// fetcher's news (a commit, a failure) reach the status through the controller's long poll alone.
		ContentAgentImage: testAgentImage,
		GitReader:         gitReader,
		GitRefresh:        time.Hour,
		ScrapeRetry:       time.Second,
		StalledRetry:      time.Second,
		// Tests leave Stalled sites behind; a test's own Stalled site still heals within its wait.
		StalledRetriesPerSecond: 1000,
		TLSRecheck:              time.Second,
		// The NetworkPolicy's admin rule names it.
		OperatorNamespace: testOperatorNamespace,
		Policy:            &suitePolicy,
		Pools:             pools,
	}
	suiteReconciler = r
	return mgr, r.SetupWithManager(mgr)
}

// namespace creates a fresh namespace (and its default ServiceAccount, which pod admission wants) for one test.
func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("site-%d-%d", time.Now().Unix()%100000, nsCounter.Add(1))
	ctx := context.Background()
	// Enforce the restricted Pod Security Standard: pods made from the operator's template must pass it.
	testenv.Must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}))
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// condition checks a site's condition status and, when reason is not empty, its reason.
func condition(site *v1alpha1.StaticSite, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(site.Status.Conditions, typ)
	if c == nil {
		if status == "" {
			return nil
		}
		return fmt.Errorf("no %s condition in %s", typ, describe(site))
	}
	if status == "" {
		return fmt.Errorf("%s condition present: %+v", typ, *c)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return nil
}

// conditionWith checks a condition's status and reason, and that its message contains substr.
func conditionWith(typ string, status metav1.ConditionStatus, reason, substr string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		if err := condition(s, typ, status, reason); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(s.Status.Conditions, typ); !strings.Contains(c.Message, substr) {
			return fmt.Errorf("%s message %q does not contain %q", typ, c.Message, substr)
		}
		return nil
	}
}

func describe(site *v1alpha1.StaticSite) string {
	var b strings.Builder
	for _, c := range site.Status.Conditions {
		fmt.Fprintf(&b, "[%s=%s %s: %s] ", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// waitSite polls the site until check passes.
func waitSite(t *testing.T, ns, name, what string, check func(*v1alpha1.StaticSite) error) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{}
	testenv.Eventually(t, what, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, site); err != nil {
			return err
		}
		return check(site)
	})
	return site
}

// events lists the events recorded for an object, as "Type Reason Message" lines.
func events(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	testenv.Must(t, k8s.List(context.Background(), list, client.InNamespace(ns)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "StaticSite" {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return out
}

func waitEvent(t *testing.T, ns, name, substr string) {
	t.Helper()
	testenv.Eventually(t, "event "+substr, func() error {
		ev := events(t, ns, name)
		for _, e := range ev {
			if strings.Contains(e, substr) {
				return nil
			}
		}
		return fmt.Errorf("no event containing %q in %q", substr, ev)
	})
}
