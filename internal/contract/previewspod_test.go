package contract

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The operator ↔ pod contract of a site with previews (issue 41): the real content-agent fetcher and puller from
// the operator's own command lines (gitcontent.FetchArgs, PullArgs), the real server from the operator's own
// arguments (desired.ServerArgs: --sites, no --root nor --site), the site value the operator renders in the file
// the puller embeds. Production answers the operator's hosts (the site's hostnames and its Service's names) with
// production; an opened pull request's host <name>--<site>.<domain> its commit, with the site's rules (a header of
// spec.server.headers on both, and a basicAuth rule whose htpasswd file the puller copies to where the server's
// --sites-access-dir reads it: a preview of a private site is private); any other host 404; with
// spec.server.skewProtection, after a deploy production's hosts answer the deploy before's asset marked with its
// commit and the preview's host does not; an entry claiming production's host refused while production keeps it;
// the closed request's host 404 again.
func TestContractPreviewsServedFromTheOperatorsArguments(t *testing.T) {
	srv, base := gittestserver.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "docs.git", nil)
	prodFiles := func(asset string) map[string]gittestserver.File {
		return map[string]gittestserver.File{"index.html": gittestserver.Regular("production\n"),
			"team/doc.html": gittestserver.Regular("team doc\n"), "assets/" + asset: gittestserver.Regular(asset)}
	}
	c1 := repo.Commit("production", prodFiles("app-1.js"))
	repo.Push("refs/heads/main", c1, false)

	site := gitSite(v1alpha1.GitContent{URL: repo.URL, Ref: "main"})
	site.Spec.Hostnames = []v1alpha1.Hostname{"Docs.Example.com"}
	site.Spec.Previews = &v1alpha1.PreviewsSpec{Domain: "preview.example.com", PullRequests: true}
	site.Spec.Server.Headers = []v1alpha1.Header{{Name: "X-Site-Rule", Value: "applied"}}
	site.Spec.Server.SkewProtection = &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: time.Hour}}
	site.Spec.Server.Access = &v1alpha1.AccessSpec{HtpasswdSecret: &v1alpha1.SecretKeyRef{Name: "users"},
		Rules: []v1alpha1.AccessRule{{PathPrefix: "/team", BasicAuth: &v1alpha1.BasicAuth{}}}}
	dir := t.TempDir()
	valueFile := filepath.Join(dir, "site.json")
	testenv.Must(t, os.WriteFile(valueFile, sitevalue.Render(site).Bytes, 0o644))
	// The htpasswd Secret's key, where the operator's projected volume puts it: beside the value.
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), 4)
	testenv.Must(t, err)
	testenv.Must(t, os.WriteFile(filepath.Join(dir, sitevalue.HtpasswdFile), []byte("jane:"+string(hash)+"\n"), 0o644))
	fetchAddr := runOperatorFetcher(t, site, dir)
	pull := gitcontent.PullArgs(site)
	if slices.Contains(pull, "--server-admin") {
		t.Fatalf("the puller of a site with previews is given --server-admin (no reload count in --sites mode): %q", pull)
	}
	sites := filepath.Join(dir, "site")
	pull = setArg(t, pull, "--fetcher", "http://"+fetchAddr)
	pull = setArg(t, pull, "--dir", sites)
	pull = setArg(t, pull, "--sites-dir", sites)
	pull = setArg(t, pull, "--site-value", valueFile)
	runPuller(t, pull, freePort(t))

	bin := serverbin.Require(t)
	args := desired.ServerArgs(site)
	if slices.Contains(args, "--root") || slices.Contains(args, "--site") {
		t.Fatalf("the server of a site with previews is given --root or --site: %q", args)
	}
	// The pod's paths: the puller's --sites-dir is the server's --sites, and its access files' directory (under
	// that one) the server's --sites-access-dir.
	if at := slices.Index(args, "--sites-access-dir"); at < 0 || args[at+1] != filepath.Join(v1alpha1.SiteRoot, contentagent.AccessDirName) ||
		!slices.Contains(gitcontent.PullArgs(site), v1alpha1.SiteRoot) {
		t.Fatalf("the server's --sites-access-dir is not the puller's %s/%s: server %q, puller %q",
			v1alpha1.SiteRoot, contentagent.AccessDirName, args, gitcontent.PullArgs(site))
	}
	args = serverbin.SetFlag(t, args, "--sites-access-dir", filepath.Join(sites, contentagent.AccessDirName))
	server := serverbin.Start(t, bin, serverbin.SetFlag(t, args, "--sites", sites))
	get := func(host string) (int, string, string) {
		code, body, h := server.Ask(t, host, "/")
		return code, body, h.Get("X-Site-Rule")
	}
	serves := func(host, want string) {
		t.Helper()
		testenv.Eventually(t, host+" serves "+strings.TrimSpace(want), func() error {
			if code, body, rule := get(host); code != http.StatusOK || body != want || rule != "applied" {
				return fmt.Errorf("%s: %d %q, X-Site-Rule %q", host, code, body, rule)
			}
			return nil
		})
	}
	production := func() {
		t.Helper()
		hosts := gitcontent.SitesHosts(site)
		if want := []string{"docs.example.com", "docs", "docs.web", "docs.web.svc", "docs.web.svc.cluster.local"}; !slices.Equal(hosts, want) {
			t.Fatalf("production's hosts %q, want %q", hosts, want)
		}
		for _, h := range append(hosts, "DOCS.example.com.:8080") {
			serves(h, "production\n")
		}
	}
	// private: the basicAuth rule on host's /team/doc.html, without, with a wrong and with jane's password.
	private := func(host, want string) {
		t.Helper()
		status := func(user, password string) (int, string) {
			req, err := http.NewRequest(http.MethodGet, "http://"+server.HTTPAddr+"/team/doc.html", nil)
			testenv.Must(t, err)
			req.Host = host
			if user != "" {
				req.SetBasicAuth(user, password)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			testenv.Must(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			testenv.Must(t, err)
			return resp.StatusCode, string(body)
		}
		if code, _ := status("", ""); code != http.StatusUnauthorized {
			t.Errorf("%s without a password: %d, want 401", host, code)
		}
		if code, _ := status("jane", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong password: %d, want 401", host, code)
		}
		if code, body := status("jane", "secret"); code != http.StatusOK || body != want {
			t.Errorf("%s with jane's password: %d %q", host, code, body)
		}
	}
	notFound := func(host string) {
		t.Helper()
		testenv.Eventually(t, host+" answers 404", func() error {
			if code, body, _ := get(host); code != http.StatusNotFound {
				return fmt.Errorf("%s: %d %q", host, code, body)
			}
			return nil
		})
	}
	production()
	private("docs.example.com", "team doc\n")
	notFound("127.0.0.1")
	notFound("pr-1--docs.preview.example.com")

	c2 := repo.Commit("pr one", map[string]gittestserver.File{"index.html": gittestserver.Regular("pr one\n"),
		"team/doc.html": gittestserver.Regular("pr one's team doc\n")}, c1)
	repo.Push("refs/heads/contrib", c2, false)
	testenv.Must(t, srv.Pull("docs.git", gittestserver.PullEvent{Forge: gitwebhook.GitHub, Action: gittestserver.Opened, Number: 1, Head: c2}))
	t.Run("an opened request's host serves its commit with the site's rules; production unchanged", func(t *testing.T) {
		serves("pr-1--docs.preview.example.com", "pr one\n")
		private("pr-1--docs.preview.example.com", "pr one's team doc\n")
		production()
		notFound("pr-2--docs.preview.example.com")
	})

	t.Run("skew protection: production's deploy before answers its asset, a preview's host never", func(t *testing.T) {
		c3 := repo.Commit("production, app-3", prodFiles("app-3.js"), c1)
		repo.Push("refs/heads/main", c3, false)
		asset := func(host, path string) (int, string) {
			code, _, h := server.Ask(t, host, path, "Sec-Fetch-Dest", "script")
			return code, h.Get("X-Hyperstatic-Deploy")
		}
		testenv.Eventually(t, "production serving the new deploy", func() error {
			if code, deployed := asset("docs.example.com", "/assets/app-3.js"); code != http.StatusOK || deployed != "" {
				return fmt.Errorf("app-3.js: %d %q", code, deployed)
			}
			return nil
		})
		if code, deployed := asset("docs.example.com", "/assets/app-1.js"); code != http.StatusOK || deployed != c1.String() {
			t.Errorf("the deploy before's asset on production's host: %d %q, want 200 from %s", code, deployed, c1)
		}
		if code, deployed := asset("pr-1--docs.preview.example.com", "/assets/app-1.js"); code != http.StatusNotFound || deployed != "" {
			t.Errorf("production's previous asset on the preview's host: %d %q, want 404", code, deployed)
		}
		production()
	})

	t.Run("an entry claiming production's host is refused; production keeps it", func(t *testing.T) {
		evil := []poolindex.Site{{ID: contentagent.PreviewID("evil"), Hosts: []string{"docs.example.com"},
			Value: []byte(`{"version":1}`), Limits: poolindex.Limits{MaxFiles: 10, MaxBytes: 1 << 20}}}
		data, err := poolindex.Render(2, evil)
		testenv.Must(t, err)
		tree := filepath.Join(sites, "content", contentagent.PreviewID("evil"), "0123456789abcdef")
		testenv.Must(t, os.MkdirAll(tree, 0o755))
		testenv.Must(t, os.WriteFile(filepath.Join(tree, "index.html"), []byte("evil\n"), 0o644))
		testenv.Must(t, os.Symlink("0123456789abcdef", filepath.Join(filepath.Dir(tree), "current")))
		testenv.Must(t, os.WriteFile(filepath.Join(sites, "index", "2-evil.json"), data, 0o644))
		testenv.Eventually(t, "the server reports the refused entry", func() error {
			resp, err := http.Get("http://" + server.AdminAddr + "/sites")
			testenv.Must(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if code := resp.StatusCode; code != http.StatusOK || !strings.Contains(string(body), "host docs.example.com is already site production.site's") {
				return fmt.Errorf("/sites: %d %s", code, body)
			}
			return nil
		})
		production()
		testenv.Must(t, os.Remove(filepath.Join(sites, "index", "2-evil.json")))
	})

	t.Run("the request's ref gone: its host 404, production unchanged", func(t *testing.T) {
		testenv.Must(t, srv.DeletePullRef("docs.git", gitwebhook.GitHub, 1))
		notFound("pr-1--docs.preview.example.com")
		production()
	})
}
