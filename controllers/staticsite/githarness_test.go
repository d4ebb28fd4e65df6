package staticsite

// The Git parts of the envtest suite: envtest runs no kubelet, so the content-agent containers the controller
// asks for are played by the real processes, in this test process: a contentagent.Fetcher configured from the
// fetcher Deployment's own arguments, fetching from a real Git server (internal/gittestserver) and checking
// each tree with the real hyperstatic-server --check, and one contentagent.Puller per server pod. The controller
// reads them with the operator's own gitrevision.HTTPReader, on the loopback port of the process that plays the
// pod (gitReader below), as it reads real pods on their IPs.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/previews"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// gitWait bounds a wait on a Git site: a fetch, the real --check and the pullers' downloads come on top of the
// controller's watch and queue, on a loaded machine under the race detector. No assertion depends on it.
const gitWait = 2 * time.Minute

// quiet is the content-agent processes' log: the tests read their state, not their words.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeGitReader reads the content-agent process that plays a pod's container with the real HTTP reader, on that
// process's loopback port instead of the pod's IP. A pod no process plays does not answer.
type fakeGitReader struct {
	mu    sync.Mutex
	ports map[string]int // namespace/pod → port
	// held: reads of the pods of these namespaces wait until the channel closes (holdReads).
	held map[string]chan struct{}
}

var gitReader = &fakeGitReader{ports: map[string]int{}}

// holdReads makes every /revision read of a pod of namespace ns wait until the returned release is called: a
// site's pass then cannot get past its fetcher step (it reads the fetcher before it sends a pin).
func (f *fakeGitReader) holdReads(ns string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	f.held[ns] = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.held, ns)
			f.mu.Unlock()
			close(ch)
		})
	}
}

func (f *fakeGitReader) Read(ctx context.Context, p *corev1.Pod, _ int) (gitrevision.Revision, error) {
	f.mu.Lock()
	hold := f.held[p.Namespace]
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return gitrevision.Revision{}, ctx.Err()
		}
	}
	local, port, err := f.local(p)
	if err != nil {
		return gitrevision.Revision{}, err
	}
	return gitrevision.NewHTTPReader().Read(ctx, local, port)
}

// Wait is the controller's long poll of a fetcher (gitrevision.Watch), on the process's loopback port likewise.
func (f *fakeGitReader) Wait(ctx context.Context, p *corev1.Pod, _ int, have gitrevision.Revision) (gitrevision.Revision, error) {
	local, port, err := f.local(p)
	if err != nil {
		return gitrevision.Revision{}, err
	}
	return gitrevision.NewHTTPReader().Wait(ctx, local, port, have)
}

// Pin is the controller's POST /pin to a fetcher, on the process's loopback port likewise.
func (f *fakeGitReader) Pin(ctx context.Context, p *corev1.Pod, _ int, token []byte, commit string) (gitrevision.Revision, error) {
	local, port, err := f.local(p)
	if err != nil {
		return gitrevision.Revision{}, err
	}
	return gitrevision.NewHTTPReader().Pin(ctx, local, port, token, commit)
}

// local is the pod as its process on loopback plays it, and that process's port.
func (f *fakeGitReader) local(p *corev1.Pod) (*corev1.Pod, int, error) {
	f.mu.Lock()
	port, ok := f.ports[p.Namespace+"/"+p.Name]
	f.mu.Unlock()
	if !ok {
		return nil, 0, fmt.Errorf("dial tcp %s: connection refused", p.Status.PodIP)
	}
	local := p.DeepCopy()
	local.Status.PodIP = "127.0.0.1"
	return local, port, nil
}

func (f *fakeGitReader) serve(ns, pod string, port int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ports[ns+"/"+pod] = port
}

func portOf(t *testing.T, s *httptest.Server) int {
	t.Helper()
	_, p, err := net.SplitHostPort(s.Listener.Addr().String())
	testenv.Must(t, err)
	n, err := strconv.Atoi(p)
	testenv.Must(t, err)
	return n
}

// waitGit polls the site until check passes, for up to gitWait.
func waitGit(t *testing.T, ns, name, what string, check func(*v1alpha1.StaticSite) error) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{}
	deadline := time.Now().Add(gitWait)
	var err error
	for time.Now().Before(deadline) {
		if err = k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, site); err == nil {
			if err = check(site); err == nil {
				return site
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %v", what, err)
	return nil
}

// servedRevision checks status.content.revision: the commit and the Served column.
func servedRevision(commit, served string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		if s.Status.Content == nil || s.Status.Content.Revision == nil {
			return fmt.Errorf("no status.content.revision; %s", describe(s))
		}
		r := s.Status.Content.Revision
		if r.Commit != commit || r.Served != served {
			return fmt.Errorf("revision %s served %s, want %s served %s; %s", r.Commit, r.Served, commit, served, describe(s))
		}
		return nil
	}
}

// all passes when every check does.
func all(checks ...func(*v1alpha1.StaticSite) error) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		for _, c := range checks {
			if err := c(s); err != nil {
				return err
			}
		}
		return nil
	}
}

// testFetcher is the fetcher pod of a site: the pod object, and the real fetcher playing its container.
type testFetcher struct {
	f      *contentagent.Fetcher
	pod    *corev1.Pod
	ticks  chan time.Time
	synced chan contentagent.Revision
	// previewTicks end the previews' interval; rounds reports each previews round.
	previewTicks chan time.Time
	rounds       chan contentagent.Revision
	url          string // the fetcher's port, http://127.0.0.1:PORT
	secretDir    string
	secret       string   // the credentials Secret's name
	keys         []string // the keys its volume names
	ns           string
	started      atomic.Bool
	startLoop    func()
	stop         func()
}

// fetchFlags parses the fetcher container's arguments with the flags of `content-agent fetch` (their names and
// types; internal/contract runs the real binary's parser on them).
type fetchFlags struct {
	url, ref, path, secretDir, webhookSecretFile, checkServer, dir, listen, webhookListen string
	pinTokenFile                                                                          string
	interval                                                                              time.Duration
	maxBytes                                                                              int64
	history                                                                               int
	previews                                                                              previews.Settings
}

// previewInterval is the previews' listing interval the harness gives a fetcher: its timer is the test's
// previewTicks, apart from production's.
const previewInterval = 97 * time.Hour

func parseFetchArgs(t *testing.T, args []string) fetchFlags {
	t.Helper()
	if len(args) == 0 || args[0] != "fetch" {
		t.Fatalf("fetcher args %q do not start with the fetch subcommand", args)
	}
	var f fetchFlags
	fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.url, "url", "", "")
	fs.StringVar(&f.ref, "ref", "", "")
	fs.StringVar(&f.path, "path", "", "")
	fs.DurationVar(&f.interval, "interval", time.Minute, "")
	fs.Int64Var(&f.maxBytes, "max-bytes", 0, "")
	fs.StringVar(&f.secretDir, "secret-dir", "", "")
	fs.StringVar(&f.webhookSecretFile, "webhook-secret-file", "", "")
	fs.StringVar(&f.checkServer, "check-server", "", "")
	fs.StringVar(&f.dir, "dir", "", "")
	fs.StringVar(&f.listen, "listen", "", "")
	fs.StringVar(&f.webhookListen, "webhook-listen", "", "")
	fs.IntVar(&f.history, "history", 0, "")
	fs.StringVar(&f.pinTokenFile, "pin-token-file", "", "")
	fs.BoolVar(&f.previews.PullRequests, "previews-pull-requests", false, "")
	fs.Func("previews-branch", "", func(v string) error { f.previews.Branches = append(f.previews.Branches, v); return nil })
	fs.DurationVar(&f.previews.TTL, "previews-ttl", 0, "")
	fs.IntVar(&f.previews.Max, "previews-max", previews.DefaultMax, "")
	testenv.Must(t, fs.Parse(args[1:]))
	if fs.NArg() != 0 {
		t.Fatalf("fetcher args %q leave %q unparsed", args, fs.Args())
	}
	return f
}

// startGitFetcher plays the kubelet for the site's fetcher Deployment: a pod of its template, running, whose
// container is a real fetcher configured from the container's arguments (the check: the real server binary; the
// credentials: the Secret's keys written where the container mounts them). Its HTTP port answers at once; its
// loop (the first fetch, then one per tick) starts with run. Interval fetches happen only on tick.
func startGitFetcher(t *testing.T, ns, site string) *testFetcher {
	t.Helper()
	d := getDeployment(t, ns, site+v1alpha1.GitFetcherSuffix)
	c := d.Spec.Template.Spec.Containers[0]
	args := parseFetchArgs(t, c.Args)
	dir := t.TempDir()
	tf := &testFetcher{ticks: make(chan time.Time), synced: make(chan contentagent.Revision, 100), ns: ns,
		previewTicks: make(chan time.Time), rounds: make(chan contentagent.Revision, 100)}
	var check func(string) error
	if args.checkServer != "" {
		check = contentagent.ServerCheck(serverbin.Require(t), time.Minute, gitsource.DefaultMaxEntries, gitsource.DefaultMaxDepth)
	}
	tf.f = &contentagent.Fetcher{
		Source:      gitsource.Source{URL: args.url, Ref: args.ref, Path: args.path, MaxBytes: args.maxBytes},
		Store:       &gitsource.Store{Dir: filepath.Join(dir, "trees"), Check: check},
		BundleDir:   filepath.Join(dir, "bundles"),
		Interval:    args.interval,
		WaitTimeout: time.Second,
		After: func(d time.Duration) <-chan time.Time {
			if d == args.interval {
				return tf.ticks
			}
			if d == previewInterval {
				return tf.previewTicks
			}
			return time.After(d) // a long poll's bound: no assertion depends on it
		},
		OnSync:  func(_ string, rev contentagent.Revision) { tf.synced <- rev },
		Log:     quiet,
		History: args.history,
		// The previews of spec.previews, as the flags say; their loop has its own timer (previewTicks).
		Previews: args.previews, PreviewDir: filepath.Join(dir, "previews"), PreviewInterval: previewInterval,
		OnPreviews: func(_ string, rev contentagent.Revision) { tf.rounds <- rev },
	}
	if args.pinTokenFile != "" {
		tf.f.PinTokenFile = pinTokenFile(t, d, c, args.pinTokenFile, filepath.Join(dir, "pin"))
	}
	if args.secretDir != "" {
		tf.secretDir = filepath.Join(dir, "credentials")
		testenv.Must(t, os.MkdirAll(tf.secretDir, 0o755))
		tf.f.SecretDir = tf.secretDir
		// The volume mounted at --secret-dir, as the kubelet would fill it.
		volume := ""
		for _, m := range c.VolumeMounts {
			if m.MountPath == args.secretDir {
				volume = m.Name
			}
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == volume && v.Secret != nil {
				tf.secret = v.Secret.SecretName
				for _, item := range v.Secret.Items {
					tf.keys = append(tf.keys, item.Key)
				}
			}
		}
		tf.syncSecret(t)
	}
	testenv.Must(t, tf.f.Init())
	srv := httptest.NewServer(tf.f.Handler())
	tf.url = srv.URL

	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.Name + "-5d8f7c-x1", Labels: d.Spec.Template.Labels},
		Spec: *d.Spec.Template.Spec.DeepCopy()}
	p.Spec.NodeName = "node-1"
	testenv.Must(t, k8s.Create(context.Background(), p)) // the namespace enforces the restricted Pod Security Standard
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "10.0.9.1"
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: gitcontent.FetchContainerName, Image: c.Image,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	testenv.Must(t, k8s.Status().Update(context.Background(), p))
	tf.pod = p
	gitReader.serve(ns, p.Name, portOf(t, srv))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tf.stop = sync.OnceFunc(func() {
		cancel()
		if tf.started.Load() {
			<-done
		}
	})
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	t.Cleanup(tf.stop) // runs first: the loop ends before the server closes
	tf.startLoop = func() {
		tf.started.Store(true)
		go func() { tf.f.Run(ctx); close(done) }()
	}
	return tf
}

// run starts the fetcher's loop: its first fetch happens at once.
func (tf *testFetcher) run() { tf.startLoop() }

// next waits for the fetcher's next attempt.
func (tf *testFetcher) next(t *testing.T) contentagent.Revision {
	t.Helper()
	select {
	case rev := <-tf.synced:
		return rev
	case <-time.After(gitWait):
		t.Fatal("no fetch attempt")
		return contentagent.Revision{}
	}
}

// tick makes the fetcher's interval pass and returns the attempt it makes.
func (tf *testFetcher) tick(t *testing.T) contentagent.Revision {
	t.Helper()
	select {
	case tf.ticks <- time.Now():
	case <-time.After(gitWait):
		t.Fatal("the fetcher does not wait for its interval")
	}
	return tf.next(t)
}

// syncSecret plays the kubelet's update of the mounted credentials Secret: the keys the volume names that the
// Secret has (it is optional: a missing Secret or key is no file).
func (tf *testFetcher) syncSecret(t *testing.T) {
	t.Helper()
	s := &corev1.Secret{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: tf.ns, Name: tf.secret}, s)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	for _, k := range tf.keys {
		path := filepath.Join(tf.secretDir, k)
		if v, ok := s.Data[k]; ok && err == nil {
			testenv.Must(t, os.WriteFile(path, v, 0o644))
		} else if rmErr := os.Remove(path); rmErr != nil && !os.IsNotExist(rmErr) {
			t.Fatal(rmErr)
		}
	}
}

// gate stands between a puller and the fetcher: closed, it answers 503 (the puller's downloads fail and it backs
// off, serving what it has); open, it passes requests through.
type gate struct {
	open   atomic.Bool
	target string
	srv    *httptest.Server
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	g := &gate{target: target}
	g.open.Store(true)
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.open.Load() {
			http.Error(w, "gate closed", http.StatusServiceUnavailable)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, g.target+r.URL.RequestURI(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(func() { g.srv.CloseClientConnections(); g.srv.Close() })
	return g
}

// testPuller is a server pod's puller sidecar, played by a real puller behind a gate.
type testPuller struct {
	p    *contentagent.Puller
	gate *gate
}

// gitServerPod plays the Deployment controller and the kubelet for one ready server pod of a Git site: the pod,
// a content reading for status.content, and its puller, following the fetcher through a gate.
func gitServerPod(t *testing.T, d *appsv1.Deployment, name, ip string, tf *testFetcher) *testPuller {
	t.Helper()
	mem := d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().Value()
	scraper.set(d.Namespace, name, podmetrics.Sample{Workers: 1, CPUs: "1", Pinned: true, Content: &podmetrics.Content{
		Files: 2, Bytes: 100, MemoryBytes: 100, MemoryLimitBytes: mem, MemoryBudgetBytes: mem / 2, FitMemoryLimitBytes: 64 << 20}})
	tp := &testPuller{gate: newGate(t, tf.url)}
	tp.p = &contentagent.Puller{FetcherURL: tp.gate.srv.URL, Store: &gitsource.Store{Dir: t.TempDir()},
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Log: quiet}
	if layout := sitesLayoutOf(t, d); layout != nil {
		tp.p.Sites = layout
		tp.p.Store = &gitsource.Store{Dir: filepath.Join(layout.ContentDir(), contentagent.ProductionID)}
	}
	testenv.Must(t, tp.p.Init())
	srv := httptest.NewServer(tp.p.Handler(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tp.p.Run(ctx); close(done) }()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	t.Cleanup(func() { cancel(); <-done })
	serverPod(t, d, name, ip)
	gitReader.serve(d.Namespace, name, portOf(t, srv))
	return tp
}

// gitSecret creates the credentials Secret of a private repository, in Flux's keys.
func gitSecret(t *testing.T, ns, name, username, password string) *corev1.Secret {
	t.Helper()
	// Labelled as Git credentials, as the suite's policy (the default's requireCredentialsLabel) requires.
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.LabelGitCredentials: "true"}},
		Data: map[string][]byte{gitsource.SecretUsername: []byte(username), gitsource.SecretPassword: []byte(password)}}
	testenv.Must(t, k8s.Create(context.Background(), s))
	return s
}

// page is a small site under public/ (the sites' spec.content.git.path), with extra files beside it.
func page(body string, extra ...string) map[string]gittestserver.File {
	files := map[string]gittestserver.File{
		"public/index.html": gittestserver.Regular("<!doctype html><title>docs</title><p>" + body + "</p>\n"),
		"README.md":         gittestserver.Regular("outside the served path\n"),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		files[extra[i]] = gittestserver.Regular(extra[i+1])
	}
	return files
}

// hasEvent says whether an event of the site contains substr.
func hasEvent(t *testing.T, ns, name, substr string) bool {
	t.Helper()
	for _, e := range events(t, ns, name) {
		if strings.Contains(e, substr) {
			return true
		}
	}
	return false
}

// sitesLayoutOf is the --sites layout the Deployment's puller flags ask for (a site with previews), under a
// temporary directory with the site value "{"version":1}", or nil without --sites-dir: the harness's pullers take
// the operator's production hosts, site name and previews domain from the pod template.
func sitesLayoutOf(t *testing.T, d *appsv1.Deployment) *contentagent.SitesLayout {
	t.Helper()
	var args []string
	for _, c := range d.Spec.Template.Spec.InitContainers {
		if c.Name == gitcontent.PullerContainerName {
			args = c.Args
		}
	}
	if !slices.Contains(args, "--sites-dir") {
		return nil
	}
	l := &contentagent.SitesLayout{Dir: t.TempDir(), ValueFile: filepath.Join(t.TempDir(), "site.json")}
	testenv.Must(t, os.WriteFile(l.ValueFile, []byte(`{"version":1}`), 0o644))
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--host":
			l.Hosts = append(l.Hosts, args[i+1])
		case "--site-name":
			l.Site = args[i+1]
		case "--previews-domain":
			l.Domain = args[i+1]
		}
	}
	return l
}
