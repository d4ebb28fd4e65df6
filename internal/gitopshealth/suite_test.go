package gitopshealth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/benchmark"
	"hyperstatic.dev/hyperstatic/controllers/staticsite"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The envtest suite: a real kube-apiserver and etcd, and the operator's StaticSite and Benchmark controllers as
// cmd/manager sets them up (the production cache, the chart's default tenancy policy), in a manager each test
// starts and may stop: a stopped operator is how a test shows a spec the operator has not observed. There is no
// kubelet, Deployment or Job controller: tests play them by writing the Deployment's and the Job's status, and
// feed the k6 pods' output from runs recorded with real k6 (internal/benchresults/testdata).

var (
	env       *testenv.Env
	k8s       client.Client // direct, no cache: what Argo CD and Flux read
	nsCounter atomic.Int32
	scripts   map[string]string // the Argo CD health checks, by kind
)

// Images of the operator under test: the tenancy policy always allows its own.
const (
	serverImage = "hyperstatic/server:test"
	k6Image     = "hyperstatic/k6:test"
)

// policy is the chart's default, multi-tenant, tenancy policy, as cmd/manager completes it.
var policy = tenancy.Default().AllowingImages(serverImage, k6Image)

// benchClock is the Benchmark controller's clock. It never moves: no server sample point and no deadline comes
// due, so a running Benchmark stays Running until its Job ends.
var benchClock = clocktesting.NewFakeClock(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	var err error
	if scripts, err = Scripts(testenv.RepoRoot()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m, &env, func(e *testenv.Env) (ctrl.Manager, error) {
		k8s = e.Client
		return nil, nil // each test runs its operator (startOperator)
	})
}

// operator is a running manager with the StaticSite and Benchmark controllers, watching one namespace.
type operator struct {
	cancel context.CancelFunc
	done   chan error
}

// startOperator starts the operator for namespace ns; it stops when the test ends, or earlier by stop. Its cache
// holds ns alone, so that it does not reconcile the objects of the tests before.
func startOperator(t *testing.T, ns string) *operator {
	t.Helper()
	mgr, err := env.NewManager(func(o *ctrl.Options) {
		o.Cache = managercache.ManagerOptions(sitechild.FieldOwner, benchmark.FieldOwner)
		o.Cache.DefaultNamespaces = map[string]cache.Config{ns: {}}
	})
	testenv.Must(t, err)
	disco, err := discovery.NewDiscoveryClientForConfig(env.Config)
	testenv.Must(t, err)
	testenv.Must(t, (&staticsite.Reconciler{
		Client:        mgr.GetClient(),
		Recorder:      mgr.GetEventRecorderFor(sitechild.FieldOwner),
		Clock:         clock.RealClock{},
		ServerImage:   serverImage,
		ServerVersion: disco.ServerVersion,
		Policy:        &policy,
		// No pod runs in envtest: no metrics to scrape (Scraper nil), and a stalled site is retried soon.
		StalledRetry: time.Second,
	}).SetupWithManager(mgr))
	testenv.Must(t, (&benchmark.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorderFor(benchmark.FieldOwner),
		Clock:     benchClock,
		Image:     k6Image,
		Logs:      recordedLogs{},
		Policy:    &policy,
	}).SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{cancel: cancel, done: make(chan error, 1)}
	go func() { op.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { op.stop(t) })
	return op
}

// stop stops the operator and waits until its passes have ended; it may be called again.
func (op *operator) stop(t *testing.T) {
	t.Helper()
	if op.cancel == nil {
		return
	}
	op.cancel()
	op.cancel = nil
	testenv.Must(t, <-op.done)
}

// namespace creates a namespace for one test, enforcing the restricted Pod Security Standard (the operator's pods
// must pass it), with the default ServiceAccount that pod admission wants.
func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("gitops-%d-%d", time.Now().Unix()%100000, nsCounter.Add(1))
	testenv.Must(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}))
	testenv.Must(t, k8s.Create(context.Background(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}))
	return name
}

// read reads an object as a GitOps tool does: unstructured, straight from the API server.
func read(ns, name, kind string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
	return u, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

// waitFor reads the object until check, on its typed form, passes, and returns what was read then.
func waitFor[T any, P interface {
	*T
	client.Object
}](t *testing.T, ns, name, kind, what string, check func(P) error) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	testenv.Eventually(t, fmt.Sprintf("%s %s: %s", kind, name, what), func() error {
		var err error
		if u, err = read(ns, name, kind); err != nil {
			return err
		}
		typed := P(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return err
		}
		return check(typed)
	})
	return u
}

// conditionIs checks a condition's status and, when reason is not empty, its reason.
func conditionIs(conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(conds, typ)
	switch {
	case c == nil:
		return fmt.Errorf("no %s condition in %s", typ, describe(conds))
	case c.Status != status || (reason != "" && c.Reason != reason):
		return fmt.Errorf("%s is %s/%s, want %s/%s: %s", typ, c.Status, c.Reason, status, reason, describe(conds))
	}
	return nil
}

func describe(conds []metav1.Condition) string {
	s := ""
	for _, c := range conds {
		s += fmt.Sprintf("[%s=%s %s: %s] ", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// seen is what Argo CD and Flux make of an object: the Lua health check of its kind, and kstatus.
type seen struct {
	argo Health
	flux *kstatus.Result
}

func see(t *testing.T, u *unstructured.Unstructured) seen {
	t.Helper()
	h, err := ArgoHealth(scripts[u.GetKind()], u.Object)
	testenv.Must(t, err)
	r, err := kstatus.Compute(u)
	testenv.Must(t, err)
	return seen{argo: h, flux: r}
}

// expect checks what Argo CD and Flux make of u: Argo's status and message, and kstatus's status.
func expect(t *testing.T, u *unstructured.Unstructured, argoStatus, argoMessage string, flux kstatus.Status) seen {
	t.Helper()
	s := see(t, u)
	if s.argo.Status != argoStatus || s.argo.Message != argoMessage {
		t.Errorf("%s %s: Argo CD health %q %q, want %q %q", u.GetKind(), u.GetName(), s.argo.Status, s.argo.Message, argoStatus, argoMessage)
	}
	if s.flux.Status != flux {
		t.Errorf("%s %s: kstatus %s (%s), want %s", u.GetKind(), u.GetName(), s.flux.Status, s.flux.Message, flux)
	}
	return s
}

// said is the message the health checks give for a deciding condition: "Reason: message".
func said(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "(no " + typ + " condition)"
	}
	if c.Message == "" {
		return c.Reason
	}
	return c.Reason + ": " + c.Message
}

// conditionsOf is the typed conditions of an object read unstructured.
func conditionsOf(t *testing.T, u *unstructured.Unstructured) []metav1.Condition {
	t.Helper()
	var s struct {
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	testenv.Must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s))
	return s.Status.Conditions
}

// recordedLogs are the k6 pods' output: pod <bench>-<index>-x printed what runner pod <index> of the recorded
// sweep (internal/benchresults/testdata/sweep-2pods) printed.
type recordedLogs struct{}

func (recordedLogs) PodLog(_ context.Context, p *corev1.Pod) ([]byte, error) {
	index := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	return os.ReadFile(filepath.Join(testenv.RepoRoot(), "internal", "benchresults", "testdata", "sweep-2pods", "pod"+index+".log"))
}
