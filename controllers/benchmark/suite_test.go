package benchmark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The envtest suite: a real kube-apiserver and etcd, the controller in a real manager. There is no kubelet and no
// Job controller: tests create the k6 pods themselves, feed their output through recordedLogs (recorded from real
// k6 runs, internal/benchresults/testdata) and write the Job's status.

var (
	env       *testenv.Env
	k8s       client.Client
	clk       = clocktesting.NewFakeClock(time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC))
	logs      = &recordedLogs{byPod: map[string][]byte{}}
	content   = &fakeContent{paths: []string{"/index.html", "/css/site.css", "/img/logo.png"}}
	scraper   = &fakeScraper{}
	nsCounter atomic.Int32
)

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

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "envtest:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8s = env.Client
	mgr, err := env.NewManager()
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor(FieldOwner), Clock: clk,
		Image: "hyperstatic/k6:test", Logs: logs, Content: content, Scraper: scraper, APIReader: mgr.GetAPIReader()}
	if err := r.SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "setup:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	return m.Run()
}

func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("bench-%d-%d", time.Now().Unix()%100000, nsCounter.Add(1))
	testenv.Must(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
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

// touch changes an annotation so the controller runs a pass now (after the test moved the fake clock).
func touch(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, "touch", func() error {
		b := &v1alpha1.Benchmark{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return err
		}
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations["test/touch"] = fmt.Sprint(time.Now().UnixNano())
		return k8s.Update(context.Background(), b)
	})
}

func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "internal", "benchresults", "testdata", "sweep-2pods", name))
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

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
