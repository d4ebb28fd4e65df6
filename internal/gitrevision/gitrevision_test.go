package gitrevision

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// waitLimit bounds a wait that would otherwise hang; no assertion depends on it.
const waitLimit = time.Minute

// pod is a pod whose IP is ip.
func pod(ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{PodIP: ip}}
}

// serve runs h on a loopback port and returns the pod and port that reach it.
func serve(t *testing.T, h http.Handler) (*corev1.Pod, int) {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	host, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return pod(host), n
}

// fetcher runs a real content-agent fetcher of src; each attempt's result comes on the returned channel. Its
// interval is the test's: each value sent on ticks is one more fetch; its long poll's own timeout never fires
// (the tests' changes end every wait).
func fetcher(t *testing.T, src gitsource.Source, configure ...func(*contentagent.Fetcher)) (*contentagent.Fetcher, <-chan contentagent.Revision, chan<- time.Time) {
	t.Helper()
	dir := t.TempDir()
	synced := make(chan contentagent.Revision, 10)
	ticks, never := make(chan time.Time), make(chan time.Time)
	f := &contentagent.Fetcher{
		Source:    src,
		Store:     &gitsource.Store{Dir: filepath.Join(dir, "trees")},
		BundleDir: filepath.Join(dir, "bundles"),
		Interval:  time.Hour,
		After: func(d time.Duration) <-chan time.Time {
			if d == time.Hour {
				return ticks
			}
			return never
		},
		OnSync: func(_ string, rev contentagent.Revision) { synced <- rev },
	}
	for _, c := range configure {
		c(f)
	}
	if err := f.Init(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f, synced, ticks
}

func next(t *testing.T, ch <-chan contentagent.Revision) contentagent.Revision {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatal("no fetch attempt")
		return contentagent.Revision{}
	}
}

// The reader against the real processes: a fetcher that published a commit of a private repository on the test
// Git server, a puller that took it, and a fetcher whose fetch failed (the reason mapped to the operator's).
func TestReadsTheRealFetcherAndPuller(t *testing.T) {
	srv, base := gittestserver.Start(t, "user", "secret", "")
	auth := &githttp.BasicAuth{Username: "user", Password: "secret"}
	repo := srv.NewRepo(t, base, "site.git", auth)
	commit := repo.Commit("first", map[string]gittestserver.File{"index.html": gittestserver.Regular("<p>one</p>\n")})
	repo.Push("refs/heads/main", commit, false)

	f, synced, _ := fetcher(t, gitsource.Source{URL: repo.URL, Ref: "main", Auth: auth})
	if got := next(t, synced); got.LastError != nil {
		t.Fatalf("first fetch failed: %+v", got.LastError)
	}
	fpod, fport := serve(t, f.Handler())
	r := NewHTTPReader()
	rev, err := r.Read(context.Background(), fpod, fport)
	if err != nil {
		t.Fatal(err)
	}
	if !rev.Published() || rev.Commit != commit.String() || rev.Ref != "refs/heads/main" || rev.Size <= 0 || len(rev.Digest) != 64 ||
		rev.CommitTime.IsZero() || rev.Failure != nil {
		t.Errorf("fetcher revision %+v, want commit %s of refs/heads/main", rev, commit)
	}

	// A puller following that fetcher reports the same commit once it serves it.
	p := &contentagent.Puller{FetcherURL: "http://" + net.JoinHostPort(fpod.Status.PodIP, strconv.Itoa(fport)),
		Store: &gitsource.Store{Dir: t.TempDir()}}
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	ppod, pport := serve(t, p.Handler(time.Second))
	before, err := r.Read(context.Background(), ppod, pport)
	if err != nil || before.Published() || before.Commit != "" {
		t.Fatalf("a puller that serves nothing yet: %+v, %v", before, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.After(waitLimit)
	for {
		got, changed := p.Revision()
		if got.Commit == commit.String() {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the puller serves %q, want %s", got.Commit, commit)
		}
	}
	served, err := r.Read(context.Background(), ppod, pport)
	if err != nil || served.Commit != commit.String() || served.Digest != rev.Digest {
		t.Errorf("puller revision %+v, %v; want the fetcher's %s", served, err, commit)
	}

	// A fetch that fails: the reason is the operator's name for it, the message the fetcher's.
	bad, badSynced, _ := fetcher(t, gitsource.Source{URL: repo.URL, Ref: "no-such-branch", Auth: auth})
	if got := next(t, badSynced); got.LastError == nil {
		t.Fatal("a missing branch was fetched")
	}
	bpod, bport := serve(t, bad.Handler())
	failed, err := r.Read(context.Background(), bpod, bport)
	if err != nil {
		t.Fatal(err)
	}
	if failed.Published() || failed.Failure == nil || failed.Failure.Reason != v1alpha1.ReasonGitRefNotFound ||
		!strings.Contains(failed.Failure.Message, "no-such-branch") || failed.Failure.Time.IsZero() {
		t.Errorf("failed fetch read as %+v (failure %+v), want GitRefNotFound naming the branch", failed, failed.Failure)
	}
}

// Every reason the fetcher can give has a ContentAvailable reason of its own; anything else is GitFetchFailed.
func TestConditionReasons(t *testing.T) {
	for in, want := range map[gitsource.Reason]string{
		gitsource.Unreachable:        v1alpha1.ReasonGitUnreachable,
		gitsource.AuthFailed:         v1alpha1.ReasonGitAuthFailed,
		gitsource.RepositoryNotFound: v1alpha1.ReasonGitRepositoryNotFound,
		gitsource.RefNotFound:        v1alpha1.ReasonGitRefNotFound,
		gitsource.TooLarge:           v1alpha1.ReasonGitTooLarge,
		gitsource.InvalidContent:     v1alpha1.ReasonGitInvalidContent,
		gitsource.InvalidSource:      v1alpha1.ReasonGitInvalidSource,
		gitsource.Unsupported:        v1alpha1.ReasonGitUnsupported,
		"Error":                      v1alpha1.ReasonGitFetchFailed,
		"":                           v1alpha1.ReasonGitFetchFailed,
		"Ready":                      v1alpha1.ReasonGitFetchFailed,
		"GitRevisionFetched":         v1alpha1.ReasonGitFetchFailed,
	} {
		if got := ConditionReason(string(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

// body is a /revision answer built from a Revision as the agent writes it.
func body(t *testing.T, rev contentagent.Revision) []byte {
	t.Helper()
	b, err := json.Marshal(rev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	goodDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	goodCommit = "89abcdef0123456789abcdef0123456789abcdef"
)

// Nothing a pod answers is taken as is: malformed fields are refused, the failure's reason is one of the
// operator's, its message escaped and bounded.
func TestParseRefusesWhatAPodCannotMean(t *testing.T) {
	good := contentagent.Revision{Digest: goodDigest, Size: 123, Commit: goodCommit, Ref: "refs/heads/main"}
	if rev, err := Parse(body(t, good)); err != nil || rev.Commit != goodCommit || rev.Size != 123 {
		t.Fatalf("a good answer: %+v, %v", rev, err)
	}
	if rev, err := Parse([]byte(`{}`)); err != nil || rev.Published() {
		t.Fatalf("nothing published: %+v, %v", rev, err)
	}
	for name, mutate := range map[string]func(*contentagent.Revision){
		"short digest":           func(r *contentagent.Revision) { r.Digest = goodDigest[:63] },
		"upper-case digest":      func(r *contentagent.Revision) { r.Digest = strings.ToUpper(goodDigest) },
		"digest without commit":  func(r *contentagent.Revision) { r.Commit = "" },
		"commit without digest":  func(r *contentagent.Revision) { r.Digest = "" },
		"abbreviated commit":     func(r *contentagent.Revision) { r.Commit = goodCommit[:12] },
		"commit not hex":         func(r *contentagent.Revision) { r.Commit = strings.Repeat("g", 40) },
		"negative size":          func(r *contentagent.Revision) { r.Size = -1 },
		"absurd size":            func(r *contentagent.Revision) { r.Size = 1 << 50 },
		"ref not under refs":     func(r *contentagent.Revision) { r.Ref = "main" },
		"ref with a space":       func(r *contentagent.Revision) { r.Ref = "refs/heads/a b" },
		"ref with an escape":     func(r *contentagent.Revision) { r.Ref = "refs/heads/\x1b[2J" },
		"ref too long":           func(r *contentagent.Revision) { r.Ref = "refs/heads/" + strings.Repeat("a", 250) },
		"size without a commit":  func(r *contentagent.Revision) { *r = contentagent.Revision{Size: 5} },
		"ref without a commit":   func(r *contentagent.Revision) { *r = contentagent.Revision{Ref: "refs/heads/main"} },
		"remote-tracking ref":    func(r *contentagent.Revision) { r.Ref = "refs/remotes/origin/main" },
		"commit of another hash": func(r *contentagent.Revision) { r.Commit = goodDigest },
	} {
		rev := good
		mutate(&rev)
		if got, err := Parse(body(t, rev)); err == nil {
			t.Errorf("%s: accepted as %+v", name, got)
		}
	}
	for _, bad := range []string{`not json`, `[]`, `{"commit": 5}`, strings.Repeat(" ", MaxBytes+1)} {
		if got, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%.20q: accepted as %+v", bad, got)
		}
	}

	hostile := good
	hostile.LastError = &contentagent.Failure{Reason: "Pwned\n", Message: "line\x1b[2J\r\nSet-Cookie: x\u202e" + strings.Repeat("A", 5000),
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	rev, err := Parse(body(t, hostile))
	if err != nil {
		t.Fatal(err)
	}
	f := rev.Failure
	if f == nil || f.Reason != v1alpha1.ReasonGitFetchFailed || len(f.Message) > podtext.MaxStatusText ||
		!strings.HasPrefix(f.Message, `line\x1b[2J  Set-Cookie: x\u202eAAA`) || !strings.HasSuffix(f.Message, "…") {
		t.Errorf("hostile failure read as %+v", f)
	}
}

// The HTTP side: no redirect is followed, a non-200 answer and an oversized one are errors (announced or not),
// and an IPv6 pod address is bracketed.
func TestHTTPReaderBounds(t *testing.T) {
	r := NewHTTPReader()
	followed := make(chan struct{}, 1)
	target, tport := serve(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed <- struct{}{} }))
	elsewhere := "http://" + net.JoinHostPort(target.Status.PodIP, strconv.Itoa(tport)) + Path
	for name, h := range map[string]http.HandlerFunc{
		"redirect": func(w http.ResponseWriter, req *http.Request) { http.Redirect(w, req, elsewhere, http.StatusFound) },
		"503": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "nothing yet", http.StatusServiceUnavailable)
		},
		"announced too long": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(MaxBytes+1))
			_, _ = w.Write([]byte(`{}`))
		},
		"chunked too long": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"commit":"`))
			for range 2 * MaxBytes / 1024 {
				_, _ = w.Write([]byte(strings.Repeat("a", 1024)))
				w.(http.Flusher).Flush()
			}
			_, _ = w.Write([]byte(`"}`))
		},
	} {
		p, port := serve(t, h)
		if rev, err := r.Read(context.Background(), p, port); err == nil {
			t.Errorf("%s: read as %+v", name, rev)
		}
	}
	select {
	case <-followed:
		t.Error("the reader followed a redirect")
	default:
	}
	if _, err := r.Read(context.Background(), pod(""), 8080); err == nil {
		t.Error("a pod without an IP was read")
	}

	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"digest":%q,"commit":%q,"size":1}`, goodDigest, goodCommit)
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	rev, err := r.Read(context.Background(), pod("::1"), l.Addr().(*net.TCPAddr).Port)
	if err != nil || rev.Commit != goodCommit {
		t.Errorf("IPv6 pod: %+v, %v", rev, err)
	}
}

// The answer this package decodes is the agent's Revision, field for field: a field renamed or added on one side
// fails here (the operator declares the shape itself so that it does not link go-git).
func TestAnswerIsTheAgentsRevision(t *testing.T) {
	jsonFields := func(typ reflect.Type) map[string]string {
		out := map[string]string{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			out[f.Tag.Get("json")] = ft.Kind().String()
		}
		return out
	}
	if got, want := jsonFields(reflect.TypeOf(answer{})), jsonFields(reflect.TypeOf(contentagent.Revision{})); !reflect.DeepEqual(got, want) {
		t.Errorf("answer fields %v, contentagent.Revision %v", got, want)
	}
	lastError, _ := reflect.TypeOf(answer{}).FieldByName("LastError")
	if got, want := jsonFields(lastError.Type.Elem()), jsonFields(reflect.TypeOf(contentagent.Failure{})); !reflect.DeepEqual(got, want) {
		t.Errorf("answer.lastError fields %v, contentagent.Failure %v", got, want)
	}
}
