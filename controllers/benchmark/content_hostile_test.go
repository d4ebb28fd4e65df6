package benchmark

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// Issue 24, item 2: the /content read of a target pod never goes where the pod redirects it.
func TestContentListNeverFollowsARedirect(t *testing.T) {
	var asked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Store(true)
		_, _ = w.Write([]byte("/secret\n"))
	}))
	t.Cleanup(elsewhere.Close)
	pod := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/content", http.StatusFound)
	}))
	t.Cleanup(pod.Close)
	host, port, _ := net.SplitHostPort(pod.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	l := &HTTPContentLister{Client: &http.Client{}, Port: p}
	_, err := l.List(context.Background(), &corev1.Pod{Status: corev1.PodStatus{PodIP: host}})
	if !errors.Is(err, podtext.ErrRedirect) {
		t.Fatalf("error %v, want the redirect refused", err)
	}
	if asked.Load() {
		t.Fatal("the operator read the address the pod redirected it to")
	}
}

// A file name with a control character never becomes a path of the k6 script.
func TestContentListSkipsControlCharacters(t *testing.T) {
	got, err := ParseContentList(strings.NewReader("/a.html\n/b\rINJECTED\tmemory\n/c\x1b.css\n/d.css\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "/a.html,/d.css" {
		t.Fatalf("paths %q", got)
	}
}
