package staticsite

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
	"hyperstatic.dev/hyperstatic/internal/previews"
)

// previewsAre checks status.previews: each name with its URL, commit, ready and whether it has an error.
func previewsAre(want ...v1alpha1.PreviewStatus) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		got := s.Status.Previews
		if len(got) != len(want) {
			return fmt.Errorf("status.previews %+v, want %d", got, len(want))
		}
		for i, w := range want {
			g := got[i]
			if g.Name != w.Name || g.URL != w.URL || g.Ref != w.Ref || g.Commit != w.Commit || g.Ready != w.Ready ||
				(g.Error == "") != (w.Error == "") || (g.Commit != "") != (g.Since != nil) {
				return fmt.Errorf("status.previews[%d] %+v, want %+v", i, g, w)
			}
		}
		return nil
	}
}

// A Git site's previews with real parts (the fetcher, a real process configured from the Deployment's arguments;
// the test Git server and its pull requests; the real --check): the fetcher's flags and volume; a pull request's
// preview in status.previews with its URL and commit and a PreviewPublished event; a request whose commit fails
// the check listed with its error and a Warning PreviewFailed; a request whose ref goes removed with
// PreviewRemoved; production served unchanged by both pods throughout. The pod template runs the server in
// --sites mode and the puller laying it out (the harness's pullers take their layout from its flags), and a
// preview is ready once every ready pod's puller serves it.
func TestGitPreviews(t *testing.T) {
	ns := namespace(t)
	srv, repo := privateRepo(t)
	c1 := push(repo, "first", page("one"))
	gitSecret(t, ns, "docs-auth", "site-bot", "s3cret")
	spec := gitSiteSpec(repo.URL)
	spec.Previews = &v1alpha1.PreviewsSpec{Domain: "preview.example.com", PullRequests: true, TTL: &metav1.Duration{Duration: time.Hour}}
	createGitSite(t, ns, "docs", spec)
	tf, _, _, _ := gitServing(t, ns, "docs")
	<-tf.rounds // the previews' first round: none yet
	waitGit(t, ns, "docs", "production served, no previews", all(servedRevision(c1, "2/2"), previewsAre()))

	t.Run("the fetcher is told the previews", func(t *testing.T) {
		args := parseFetchArgs(t, getDeployment(t, ns, "docs"+v1alpha1.GitFetcherSuffix).Spec.Template.Spec.Containers[0].Args)
		if want := (previews.Settings{PullRequests: true, TTL: time.Hour, Max: 10}); !args.previews.PullRequests ||
			args.previews.TTL != want.TTL || args.previews.Max != want.Max || len(args.previews.Branches) != 0 {
			t.Fatalf("fetcher previews flags %+v, want %+v", args.previews, want)
		}
	})

	t.Run("the pods are told the previews", func(t *testing.T) {
		pod := getDeployment(t, ns, "docs").Spec.Template.Spec
		server := strings.Join(pod.Containers[0].Args, " ")
		if !strings.HasPrefix(server, "--sites /site ") || strings.Contains(server, "--root") || strings.Contains(server, "--site ") {
			t.Errorf("server args %q, want --sites /site and neither --root nor --site", server)
		}
		puller := pod.InitContainers[0]
		args := strings.Join(puller.Args, " ")
		for _, want := range []string{"--sites-dir /site", "--site-name docs", "--previews-domain preview.example.com",
			"--site-value /etc/hyperstatic/site/site.json", "--host docs --host docs." + ns + " --host docs." + ns + ".svc --host docs." + ns + ".svc.cluster.local"} {
			if !strings.Contains(args, want) {
				t.Errorf("puller args %q lack %q", args, want)
			}
		}
		if strings.Contains(args, "--server-admin") {
			t.Errorf("puller args %q: --server-admin in --sites mode", args)
		}
		if !slices.ContainsFunc(puller.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == "site-value" && m.MountPath == "/etc/hyperstatic/site" && m.ReadOnly
		}) {
			t.Errorf("the puller does not mount the site value: %+v", puller.VolumeMounts)
		}
	})

	open := func(number int, branch string, files map[string]gittestserver.File) string {
		t.Helper()
		h := repo.Commit(branch, files)
		repo.Push("refs/heads/"+branch, h, true)
		if err := srv.Pull("docs.git", gittestserver.PullEvent{Forge: gitwebhook.GitHub, Action: gittestserver.Opened, Number: number, Head: h}); err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	round := func() {
		t.Helper()
		select {
		case tf.previewTicks <- time.Now():
		case <-time.After(gitWait):
			t.Fatal("the previews' loop does not wait for its interval")
		}
		select {
		case <-tf.rounds:
		case <-time.After(gitWait):
			t.Fatal("no previews round")
		}
	}

	pr1 := open(1, "feature", page("feature"))
	bad := open(2, "broken", page("broken", "public/_redirects", "/only-one-field\n"))
	round()
	want1 := v1alpha1.PreviewStatus{Name: "pr-2", URL: "http://pr-2--docs.preview.example.com/", Ref: "refs/pull/2/head", Error: "x"}
	want2 := v1alpha1.PreviewStatus{Name: "pr-1", URL: "http://pr-1--docs.preview.example.com/", Ref: "refs/pull/1/head", Commit: pr1, Ready: true}
	t.Run("status.previews lists both, the failing one with its error; production unchanged", func(t *testing.T) {
		site := waitGit(t, ns, "docs", "two previews", all(servedRevision(c1, "2/2"), previewsAre(want1, want2)))
		if i := slices.IndexFunc(site.Status.Previews, func(p v1alpha1.PreviewStatus) bool { return p.Name == "pr-2" }); i < 0 ||
			!containsAll(site.Status.Previews[i].Error, "GitInvalidContent", "_redirects") {
			t.Fatalf("pr-2's error: %+v", site.Status.Previews)
		}
		waitEvent(t, ns, "docs", "Normal PreviewPublished preview pr-1 (refs/pull/1/head) publishes "+pr1[:12]+" at http://pr-1--docs.preview.example.com/")
		waitEvent(t, ns, "docs", "Warning PreviewFailed preview pr-2 (refs/pull/2/head): GitInvalidContent")
		_ = bad
	})

	t.Run("a request whose ref goes is removed", func(t *testing.T) {
		if err := srv.DeletePullRef("docs.git", gitwebhook.GitHub, 2); err != nil {
			t.Fatal(err)
		}
		round()
		waitGit(t, ns, "docs", "one preview left", all(servedRevision(c1, "2/2"), previewsAre(want2)))
		waitEvent(t, ns, "docs", "Normal PreviewRemoved preview pr-2 (refs/pull/2/head) removed")
	})
}

// containsAll says s holds every part.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// spec.previews is refused, naming the field, where it cannot work.
func TestGitPreviewsValidation(t *testing.T) {
	ns := namespace(t)
	git := func(p *v1alpha1.PreviewsSpec) v1alpha1.StaticSiteSpec {
		s := gitSiteSpec("https://git.example.com/docs.git")
		s.Previews = p
		return s
	}
	ok := func() *v1alpha1.PreviewsSpec {
		return &v1alpha1.PreviewsSpec{Domain: "preview.example.com", PullRequests: true}
	}
	cm := v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}, Previews: ok()}
	wild := git(ok())
	wild.Hostnames = []v1alpha1.Hostname{"docs.example.com", "*.docs.example.com"}
	htpasswd := git(ok())
	htpasswd.Server.Access = &v1alpha1.AccessSpec{HtpasswdSecret: &v1alpha1.SecretKeyRef{Name: "users"}}
	sso := git(ok())
	sso.Hostnames = []v1alpha1.Hostname{"docs.example.com"}
	sso.Server.Access = &v1alpha1.AccessSpec{SSO: &v1alpha1.SSOSpec{IssuerURL: "https://idp.example.com", ClientID: "docs", SecretName: "docs-sso"}}
	pooled := git(ok())
	pooled.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: "shared"}
	for _, tc := range []struct {
		name string
		spec v1alpha1.StaticSiteSpec
		want string
	}{
		{"on a ConfigMap site", cm, "spec.previews needs spec.content.git"},
		{"in a pool", pooled, "spec.previews needs spec.placement.mode Dedicated"},
		{"nothing to preview", git(&v1alpha1.PreviewsSpec{Domain: "preview.example.com"}), "spec.previews needs pullRequests: true or at least one of spec.previews.branches"},
		{"a wildcard domain", git(&v1alpha1.PreviewsSpec{Domain: "*.example.com", PullRequests: true}), "spec.previews.domain must be a lower-case DNS domain"},
		{"a one-label domain", git(&v1alpha1.PreviewsSpec{Domain: "localhost", PullRequests: true}), "spec.previews.domain must be a lower-case DNS domain"},
		{"a short ttl", git(&v1alpha1.PreviewsSpec{Domain: "p.example.com", PullRequests: true, TTL: &metav1.Duration{Duration: 30 * time.Second}}), "spec.previews.ttl must be between 1m and 720h"},
		{"too many", git(&v1alpha1.PreviewsSpec{Domain: "p.example.com", PullRequests: true, Max: ptr.To[int32](51)}), "spec.previews.max"},
		{"beside a wildcard hostname", wild, "spec.previews cannot be used with a wildcard in spec.hostnames"},
		{"beside single sign-on", sso, "spec.previews cannot be used with spec.server.access.sso"},
		{"an empty pattern", git(&v1alpha1.PreviewsSpec{Domain: "p.example.com", Branches: []string{""}}), "spec.previews.branches[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, ns, tc.spec, tc.want) })
	}
	// Basic authentication is admitted: the previews are served with the site's rules, its htpasswd file
	// included (internal/contentagent/accessfiles.go).
	createGitSite(t, ns, "private", htpasswd)
	site := createGitSite(t, ns, "fine", git(&v1alpha1.PreviewsSpec{Domain: "preview.example.com", Branches: []string{"feature/*"}}))
	if site.Spec.Previews.Max == nil || *site.Spec.Previews.Max != 10 {
		t.Fatalf("spec.previews.max defaulted to %v, want 10", site.Spec.Previews.Max)
	}
}
