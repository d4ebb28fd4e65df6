package contract

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The operator ↔ fetcher pin contract (docs/design/deploys.md): the real content-agent, started from the
// operator's own fetcher command line (its --history and --pin-token-file), and the operator's own client
// (gitrevision's Pin): the token from the file the operator mounts is required, a deploy of the history is
// pinned and the answer is the revision now published, a commit not in the history is refused as
// ErrNotInHistory, the unpin publishes the newest again.
func TestContractContentAgentPin(t *testing.T) {
	srv, base := gittestserver.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "docs.git", nil)
	c1 := repo.Commit("v1", map[string]gittestserver.File{"index.html": gittestserver.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)

	site := gitSite(v1alpha1.GitContent{URL: repo.URL, Ref: "main"})
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	testenv.Must(t, os.WriteFile(token, []byte("the-operators-token\n"), 0o600)) // a Secret's key may end in a newline
	addr := freePort(t)
	fetch := gitcontent.FetchArgs(site)
	fetch = setArg(t, fetch, "--dir", filepath.Join(dir, "fetcher"))
	fetch = setArg(t, fetch, "--listen", addr)
	fetch = setArg(t, fetch, "--pin-token-file", token)
	fetch = setArg(t, fetch, "--check-server", serverbin.Require(t))
	runAgent(t, fetch, addr)

	host, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	testenv.Must(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fetcher"}, Status: corev1.PodStatus{PodIP: host}}
	h := gitrevision.NewHTTPReader()
	ctx := context.Background()
	testenv.Eventually(t, "the first commit published", func() error {
		rev, err := h.Read(ctx, pod, n)
		if err == nil && (rev.Commit != c1.String() || len(rev.Deploys) != 1) {
			err = errors.New("not yet: " + rev.Commit)
		}
		return err
	})

	if _, err := h.Pin(ctx, pod, n, []byte("another-token"), c1.String()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a pin with another token: %v, want HTTP 401", err)
	}
	if _, err := h.Pin(ctx, pod, n, []byte("the-operators-token"), strings.Repeat("0", 40)); !errors.Is(err, gitrevision.ErrNotInHistory) {
		t.Errorf("a pin of a commit not in the history: %v, want ErrNotInHistory", err)
	}
	rev, err := h.Pin(ctx, pod, n, []byte("the-operators-token"), c1.String())
	if err != nil || rev.Pin != c1.String() || rev.Commit != c1.String() || !rev.HasDeploy(c1.String()) {
		t.Errorf("pin: %+v, %v; want the revision published, pinned", rev, err)
	}
	if rev, err := h.Read(ctx, pod, n); err != nil || rev.Pin != c1.String() {
		t.Errorf("/revision after the pin: %+v, %v", rev, err)
	}
	if rev, err := h.Pin(ctx, pod, n, []byte("the-operators-token"), ""); err != nil || rev.Pin != "" || rev.Commit != c1.String() {
		t.Errorf("unpin: %+v, %v", rev, err)
	}
}
