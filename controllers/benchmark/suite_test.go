package benchmark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The envtest suite: a real kube-apiserver and etcd, the controller in a real manager. There is no kubelet, no Job
// controller and no garbage collector: tests create the k6 pods themselves, feed their output through recordedLogs
// (recorded from real k6 runs, internal/benchresults/testdata) and write the Job's status.
//
// Nothing here waits on wall-clock time. A test waits for what it can observe: the API (testenv.Eventually), or, to
// know the controller has seen a change that leaves no trace (a pass that must NOT do something), passes: touch
// stamps the Benchmark with a new token and awaitPass waits until a completed pass had read it. The fake clock is
// shared by every test and only moves forward, and only when the Benchmark under test is waiting on a timer.

var (
	env       *testenv.Env
	k8s       client.Client
	clk       = clocktesting.NewFakeClock(time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC))
	logs      = &recordedLogs{byPod: map[string][]byte{}}
	content   = &fakeContent{paths: []string{"/index.html", "/css/site.css", "/img/logo.png"}}
	scraper   = &fakeScraper{}
	passes    = &passRecorder{seen: map[types.NamespacedName]int64{}}
	nsCounter atomic.Int32
	touches   atomic.Int64
)

// touchAnnotation carries touch's token.
const touchAnnotation = "test.hyperstatic.dev/touch"

// passRecorder wraps the Reconciler and records, per Benchmark, the highest touch token that a pass which
// completed without error had read. It reads the Benchmark from the manager's cache before the pass does; the cache
// only moves forward, so the pass read that token or a later one.
type passRecorder struct {
	inner reconcile.Reconciler
	cache client.Reader
	mu    sync.Mutex
	seen  map[types.NamespacedName]int64
}

func (p *passRecorder) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var token int64
	b := &v1alpha1.Benchmark{}
	if err := p.cache.Get(ctx, req.NamespacedName, b); err == nil {
		token, _ = strconv.ParseInt(b.Annotations[touchAnnotation], 10, 64)
	}
	res, err := p.inner.Reconcile(ctx, req)
	if err == nil {
		p.mu.Lock()
		if token > p.seen[req.NamespacedName] {
			p.seen[req.NamespacedName] = token
		}
		p.mu.Unlock()
	}
	return res, err
}

func (p *passRecorder) sawToken(key types.NamespacedName) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[key]
}

type recordedLogs struct {
	mu    sync.Mutex
	byPod map[string][]byte // namespace/name
}

func (l *recordedLogs) PodLog(_ context.Context, p *corev1.Pod) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.byPod[p.Namespace+"/"+p.Name]
	if !ok {
		return nil, fmt.Errorf("container k6 of pod %s has no log", p.Name)
	}
	return b, nil
}

func (l *recordedLogs) set(ns, pod string, b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byPod[ns+"/"+pod] = b
}

type fakeContent struct{ paths []string }

func (f *fakeContent) List(context.Context, *corev1.Pod) ([]string, error) { return f.paths, nil }

type fakeScraper struct {
	mu    sync.Mutex
	calls int
}

func (f *fakeScraper) Scrape(_ context.Context, p *corev1.Pod) (podmetrics.Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return podmetrics.Sample{Pod: p.Name, Time: clk.Now(), Requests: float64(1000 * f.calls), CPUSeconds: float64(f.calls), ResidentBytes: 8 << 20}, nil
}

// suitePolicy is the tenancy policy of the suite's operator: everything, but at most suiteMaxParallelism k6 pods
// (the other tests use fewer), so tenancy_test.go sees a refusal; each limit's own refusals are tested on the pure
// check (internal/tenancy).
var suitePolicy = func() tenancy.Policy {
	p := tenancy.Unrestricted()
	p.Benchmark.MaxParallelism = suiteMaxParallelism
	return p
}()

const suiteMaxParallelism = 8

// suiteResultBytes is the suite's result budget: far above the recorded runs (4 KiB a pod), small enough that a
// test over it parses little, even under the race detector.
const suiteResultBytes = 64 << 10

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard())
	testenv.Main(m, &env, setupSuite)
}

// setupSuite installs the controller behind the suite's pass counter, with fakes for the k6 logs, the site's
// content and its metrics.
func setupSuite(e *testenv.Env) (ctrl.Manager, error) {
	k8s = e.Client
	mgr, err := e.NewManager()
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(FieldOwner), Clock: clk,
		Image: "hyperstatic/k6:test", Logs: logs, Content: content, Scraper: scraper, APIReader: mgr.GetAPIReader(),
		Policy: &suitePolicy, ResultBytes: suiteResultBytes}
	passes.inner, passes.cache = r, mgr.GetClient()
	return mgr, r.setup(mgr, passes)
}

// namespace creates a namespace for one test. Its Benchmarks are deleted when the test ends, so that later tests
// moving the shared fake clock do not wake them (envtest never deletes a namespace's objects).
func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("bench-%d-%d", time.Now().Unix()%100000, nsCounter.Add(1))
	testenv.Must(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	t.Cleanup(func() {
		if err := k8s.DeleteAllOf(context.Background(), &v1alpha1.Benchmark{}, client.InNamespace(name)); err != nil {
			t.Errorf("delete the Benchmarks of %s: %v", name, err)
		}
	})
	return name
}

func condition(b *v1alpha1.Benchmark, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(b.Status.Conditions, typ)
	if c == nil {
		return fmt.Errorf("no %s condition: %s", typ, describe(b))
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return nil
}

func describe(b *v1alpha1.Benchmark) string {
	var s strings.Builder
	fmt.Fprintf(&s, "phase %q ", b.Status.Phase)
	for _, c := range b.Status.Conditions {
		fmt.Fprintf(&s, "[%s=%s %s: %s] ", c.Type, c.Status, c.Reason, c.Message)
	}
	return s.String()
}

func waitBenchmark(t *testing.T, ns, name, what string, check func(*v1alpha1.Benchmark) error) *v1alpha1.Benchmark {
	t.Helper()
	b := &v1alpha1.Benchmark{}
	testenv.Eventually(t, what, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return err
		}
		return check(b)
	})
	return b
}

// touch stamps the Benchmark with a new token, so the controller runs a pass now (after the test moved the fake
// clock), and returns the token for awaitPass.
func touch(t *testing.T, ns, name string) int64 {
	t.Helper()
	token := touches.Add(1)
	testenv.Eventually(t, "touch", func() error {
		b := &v1alpha1.Benchmark{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return err
		}
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[touchAnnotation] = strconv.FormatInt(token, 10)
		return k8s.Update(context.Background(), b)
	})
	return token
}

// awaitPass waits until a pass that read the Benchmark stamped with token (or later) completed: everything that
// pass would do is done. Tests use it before checking that something did NOT happen.
func awaitPass(t *testing.T, ns, name string, token int64) {
	t.Helper()
	key := types.NamespacedName{Namespace: ns, Name: name}
	testenv.Eventually(t, "a pass after the touch", func() error {
		if got := passes.sawToken(key); got < token {
			return fmt.Errorf("the last completed pass read touch %d, want %d", got, token)
		}
		return nil
	})
}

// advanceClock moves the shared fake clock forward by d. Call it only while the Benchmark under test is waiting on a
// timer (the test has seen that state in its status); a pass reads the clock once, so whichever pass reads the new
// time first acts on it, and a touch afterwards makes sure one does.
func advanceClock(t *testing.T, d time.Duration) {
	t.Helper()
	if d <= 0 {
		t.Fatalf("the fake clock only moves forward (asked to move by %s)", d)
	}
	clk.Step(d)
}

// recorded is the output of a real k6 runner pod of the sweep in internal/benchresults/testdata/sweep-2pods.
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	return recordedIn(t, "sweep-2pods", name)
}

// recordedIn is a recorded runner pod's output from internal/benchresults/testdata/<run> (each run's README says how
// it was recorded).
func recordedIn(t *testing.T, run, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "internal", "benchresults", "testdata", run, name))
	testenv.Must(t, err)
	return b
}

func events(t *testing.T, ns, name string) string {
	t.Helper()
	list := &corev1.EventList{}
	testenv.Must(t, k8s.List(context.Background(), list, client.InNamespace(ns)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "Benchmark" {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return strings.Join(out, "\n")
}

// waitEvents waits until the Benchmark's events contain every one of want ("<type> <reason>[ <message>]"). The
// recorder hands events to the API server asynchronously, after the status write that a test observed: reading
// them once right after that races the broadcaster.
func waitEvents(t *testing.T, ns, name string, want ...string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("events %q of %s", want, name), func() error {
		ev := events(t, ns, name)
		for _, w := range want {
			if !strings.Contains(ev, w) {
				return fmt.Errorf("no %q in the events:\n%s", w, ev)
			}
		}
		return nil
	})
}
