package staticsite

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// privateRepo is a repository on a real Git server that asks for credentials.
func privateRepo(t *testing.T) (*gittestserver.Server, *gittestserver.Repo) {
	t.Helper()
	srv, base := gittestserver.Start(t, "site-bot", "s3cret", "")
	return srv, srv.NewRepo(t, base, "docs.git", &githttp.BasicAuth{Username: "site-bot", Password: "s3cret"})
}

// push stores a commit of files on main (force: the tests' commits do not descend from one another) and
// returns its hash.
func push(repo *gittestserver.Repo, msg string, files map[string]gittestserver.File) string {
	h := repo.Commit(msg, files)
	repo.Push("refs/heads/main", h, true)
	return h.String()
}

func gitSiteSpec(url string) v1alpha1.StaticSiteSpec {
	return v1alpha1.StaticSiteSpec{Replicas: ptr.To[int32](2), Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{
		URL: url, Ref: "main", Path: "public", SecretRef: &v1alpha1.LocalObjectReference{Name: "docs-auth"}}}}
}

func serverMemory(d *appsv1.Deployment) resource.Quantity {
	return *d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory()
}

// gitServing brings a Git site to serving its first commit on two ready pods: the fetcher runs and publishes,
// the Deployment rolls out, each pod's puller takes the commit.
func gitServing(t *testing.T, ns, name string) (*testFetcher, *appsv1.Deployment, []*testPuller, string) {
	t.Helper()
	tf := startGitFetcher(t, ns, name)
	tf.run()
	first := tf.next(t)
	if first.LastError != nil || first.Digest == "" {
		t.Fatalf("first fetch: %+v %+v", first, first.LastError)
	}
	d := getDeployment(t, ns, name)
	completeRollout(t, d)
	pullers := []*testPuller{gitServerPod(t, d, name+"-a", "10.0.0.1", tf), gitServerPod(t, d, name+"-b", "10.0.0.2", tf)}
	waitGit(t, ns, name, "both pods serve the first commit", all(servedRevision(first.Commit, "2/2"),
		conditionWith(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable, "main@sha1:"+first.Commit)))
	return tf, d, pullers, first.Commit
}

// A Git site end to end with real parts: no server Deployment before the first commit (its memory comes from
// the commit's size), the first commit served by both pods, a new commit taken by one pod then the other (the
// status counts them), and a commit that crosses a memory step rolls the pods.
func TestGitSiteServesEachCommitOnEveryPod(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	_, repo := privateRepo(t)
	c1 := push(repo, "first", page("one"))
	gitSecret(t, ns, "docs-auth", "site-bot", "s3cret")
	createGitSite(t, ns, "docs", gitSiteSpec(repo.URL))

	// The fetcher exists, the server Deployment does not: its memory is sized from the first commit.
	tf := startGitFetcher(t, ns, "docs")
	waitGit(t, ns, "docs", "first fetch pending", all(
		conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionUnknown, v1alpha1.ReasonGitFetchPending, "first fetch of main is under way"),
		condition2(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonGitFetchPending),
		condition2(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonGitFetchPending)))
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the server Deployment exists before the first commit: %v", err)
	}

	tf.run()
	first := tf.next(t)
	if first.Commit != c1 || first.LastError != nil {
		t.Fatalf("first fetch %+v (%+v), want %s", first, first.LastError, c1)
	}
	d := getDeployment(t, ns, "docs")
	want := desired.MemoryFor(&v1alpha1.StaticSite{}, desired.Content{Size: first.Size})
	if got := serverMemory(d); got.Cmp(want) != 0 {
		t.Errorf("server memory %s, want %s (from the bundle's %d bytes)", got.String(), want.String(), first.Size)
	}
	site := waitGit(t, ns, "docs", "commit published", all(
		conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched, "commit "+c1[:12]+" of refs/heads/main")))
	if site.Status.ContentSource != v1alpha1.ContentSourceGit || site.Status.ContentRevision != "main@sha1:"+c1 || site.Status.Memory.Cmp(want) != 0 {
		t.Errorf("status source %q revision %q memory %v", site.Status.ContentSource, site.Status.ContentRevision, site.Status.Memory)
	}

	completeRollout(t, d)
	pa := gitServerPod(t, d, "docs-a", "10.0.0.1", tf)
	pb := gitServerPod(t, d, "docs-b", "10.0.0.2", tf)
	site = waitGit(t, ns, "docs", "both pods serve the first commit", all(servedRevision(c1, "2/2"),
		conditionWith(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable, "main@sha1:"+c1),
		conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched, "served by 2 of 2 ready pods")))
	r := site.Status.Content.Revision
	if r.ShortCommit != c1[:12] || r.Ref != "refs/heads/main" || r.ServedBy != 2 || r.ReadyPods != 2 || r.CommitTime == nil ||
		!r.CommitTime.Time.Equal(first.CommitTime.Truncate(1e9)) {
		t.Errorf("revision %+v (commit time %v)", r, first.CommitTime)
	}
	waitEvent(t, ns, "docs", "Normal GitRevisionServed commit "+c1[:12]+" of refs/heads/main")

	// A new commit: published at once, taken by each pod as its puller gets it.
	pa.gate.open.Store(false)
	pb.gate.open.Store(false)
	c2 := push(repo, "second", page("two"))
	if rev := tf.tick(t); rev.Commit != c2 {
		t.Fatalf("second fetch %+v", rev)
	}
	waitGit(t, ns, "docs", "published, served by none", all(servedRevision(c2, "0/2"),
		conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched, "served by 0 of 2 ready pods"),
		condition2(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)))
	pa.gate.open.Store(true)
	waitGit(t, ns, "docs", "served by one", servedRevision(c2, "1/2"))
	if hasEvent(t, ns, "docs", "GitRevisionServed commit "+c2[:12]) {
		t.Error("GitRevisionServed recorded while a pod does not serve the commit")
	}
	pb.gate.open.Store(true)
	waitGit(t, ns, "docs", "served by both", all(servedRevision(c2, "2/2"),
		conditionWith(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable, "main@sha1:"+c2)))
	waitEvent(t, ns, "docs", "Normal GitRevisionServed commit "+c2[:12])
	waitEvent(t, ns, "docs", "ContentChanged Content revision main@sha1:"+c1+" → main@sha1:"+c2)
	if got := serverMemory(getDeployment(t, ns, "docs")); got.Cmp(want) != 0 {
		t.Errorf("a small commit changed the memory to %s", got.String())
	}

	// A commit whose size crosses a memory step (9 MiB: 48Mi + 2 × 9Mi → 128Mi) changes the pod template.
	c3 := push(repo, "large", page("three", "public/big.txt", strings.Repeat("a large page of text\n", 9<<20/21+1)))
	if rev := tf.tick(t); rev.Commit != c3 || rev.LastError != nil {
		t.Fatalf("third fetch %+v %+v", rev, rev.LastError)
	}
	testenv.Eventually(t, "memory sized from the large commit", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, d); err != nil {
			return err
		}
		if got := serverMemory(d); got.Cmp(resource.MustParse("128Mi")) != 0 {
			return fmt.Errorf("memory %s, want 128Mi", got.String())
		}
		return nil
	})
}

// condition2 is condition as a check function.
func condition2(typ string, status metav1.ConditionStatus, reason string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error { return condition(s, typ, status, reason) }
}

// Each fetch failure the issue names: the last good commit keeps serving on every pod (Ready stays True),
// ContentAvailable=False says which and why, a Warning event too, and the next good commit clears it without an
// edit of the site.
func TestGitFailuresKeepTheLastGoodCommit(t *testing.T) {
	ns := namespace(t)
	_, repo := privateRepo(t)
	push(repo, "first", page("one"))
	gitSecret(t, ns, "docs-auth", "site-bot", "s3cret")
	spec := gitSiteSpec(repo.URL)
	spec.Content.Git.MaxSize = ptr.To(resource.MustParse("256Ki"))
	site := createGitSite(t, ns, "docs", spec)
	tf, _, _, good := gitServing(t, ns, "docs")

	setPassword := func(pw string) {
		s := &corev1.Secret{}
		testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "docs-auth"}, s))
		s.Data[gitsource.SecretPassword] = []byte(pw)
		testenv.Must(t, k8s.Update(context.Background(), s))
		tf.syncSecret(t) // the kubelet updates the mounted Secret; the fetcher reads it at its next fetch
	}
	random := make([]byte, 300<<10)
	_, _ = rand.Read(random)
	for _, tc := range []struct {
		reason  string
		fetcher gitsource.Reason
		breakIt func()
		fix     func()
		message string
	}{
		{v1alpha1.ReasonGitAuthFailed, gitsource.AuthFailed, func() { setPassword("wrong") }, func() { setPassword("s3cret") }, ""},
		{v1alpha1.ReasonGitRefNotFound, gitsource.RefNotFound, func() { repo.Delete("refs/heads/main") }, nil, "main"},
		{v1alpha1.ReasonGitInvalidContent, gitsource.InvalidContent,
			func() { push(repo, "bad redirects", page("bad", "public/_redirects", "/old\n")) }, nil, "_redirects"},
		{v1alpha1.ReasonGitTooLarge, gitsource.TooLarge,
			func() { push(repo, "too large", page("large", "public/blob.bin", string(random))) }, nil, ""},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			tc.breakIt()
			rev := tf.tick(t)
			if rev.LastError == nil || rev.LastError.Reason != string(tc.fetcher) || rev.Commit != good {
				t.Fatalf("fetch %+v (error %+v), want %s with %s still published", rev, rev.LastError, tc.fetcher, good)
			}
			waitGit(t, ns, "docs", tc.reason, all(
				conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, tc.reason, tc.message),
				conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, tc.reason, "commit "+good[:12]+" keeps being served (served by 2 of 2"),
				conditionWith(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable, "main@sha1:"+good),
				condition2(v1alpha1.ConditionStalled, "", ""),
				servedRevision(good, "2/2")))
			waitEvent(t, ns, "docs", "Warning "+tc.reason+" ContentAvailable False: the last fetch of main failed")

			if tc.fix != nil {
				tc.fix()
			}
			good = push(repo, "fixed after "+tc.reason, page("fixed "+tc.reason))
			if rev := tf.tick(t); rev.LastError != nil || rev.Commit != good {
				t.Fatalf("fetch after the fix %+v %+v", rev, rev.LastError)
			}
			waitGit(t, ns, "docs", "fixed", all(
				condition2(v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched),
				servedRevision(good, "2/2"),
				conditionWith(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable, "main@sha1:"+good)))
			waitEvent(t, ns, "docs", "Normal GitRevisionFetched Content available again: commit "+good[:12])
		})
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(site), site); err != nil || site.Generation != 1 {
		t.Errorf("the site was edited (generation %d, %v)", site.Generation, err)
	}
}

// A credentials Secret that does not exist: the fetcher still runs (its Secret volume is optional), the site says
// GitSecretNotFound, and it is Stalled while no commit was ever served; once the Secret exists the next fetch
// publishes and the site recovers without an edit.
func TestGitSecretNotFound(t *testing.T) {
	ns := namespace(t)
	_, repo := privateRepo(t)
	c1 := push(repo, "first", page("one"))
	spec := gitSiteSpec(repo.URL)
	spec.Memory = ptr.To(resource.MustParse("64Mi")) // the Deployment does not wait for the first commit
	createGitSite(t, ns, "docs", spec)
	tf := startGitFetcher(t, ns, "docs")
	tf.run()
	if rev := tf.next(t); rev.LastError == nil || rev.LastError.Reason != string(gitsource.AuthFailed) {
		t.Fatalf("fetch without credentials %+v %+v", rev, rev.LastError)
	}
	waitGit(t, ns, "docs", "GitSecretNotFound", all(
		conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, v1alpha1.ReasonGitSecretNotFound, `Secret "docs-auth" (spec.content.git.secretRef) not found`),
		condition2(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonGitSecretNotFound),
		condition2(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonGitSecretNotFound)))
	getDeployment(t, ns, "docs") // spec.memory set: the pods exist and wait for their first tree
	waitEvent(t, ns, "docs", "Warning GitSecretNotFound Stalled:")

	gitSecret(t, ns, "docs-auth", "site-bot", "s3cret")
	tf.syncSecret(t)
	if rev := tf.tick(t); rev.Commit != c1 || rev.LastError != nil {
		t.Fatalf("fetch with the Secret %+v %+v", rev, rev.LastError)
	}
	waitGit(t, ns, "docs", "recovered", all(
		condition2(v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched),
		condition2(v1alpha1.ConditionStalled, "", "")))
}

// The fetcher's objects: applied as specified, the webhook Service only with webhookSecretRef, all of them
// deleted when the site stops being a Git site; a foreign object of one of their names is never taken over.
func TestGitFetcherChildren(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	spec := v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "http://127.0.0.1:1/docs.git", Ref: "main",
		SecretRef: &v1alpha1.LocalObjectReference{Name: "auth"}, WebhookSecretRef: &v1alpha1.LocalObjectReference{Name: "hook"}}}}
	site := createGitSite(t, ns, "docs", spec)
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	d := getDeployment(t, ns, "docs-git")
	if !metav1.IsControlledBy(d, site) || !slices.Equal(d.Spec.Template.Spec.Containers[0].Args, gitcontent.FetchArgs(site)) ||
		d.Spec.Template.Spec.Containers[0].Image != testAgentImage || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("fetcher Deployment %+v", d.Spec)
	}
	svc, hook, np := &corev1.Service{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}
	testenv.Eventually(t, "fetcher Services and NetworkPolicy", func() error {
		if err := k8s.Get(ctx, key("docs-git"), svc); err != nil {
			return err
		}
		if err := k8s.Get(ctx, key("docs-git-webhook"), hook); err != nil {
			return err
		}
		return k8s.Get(ctx, key("docs-git"), np)
	})
	if svc.Spec.Ports[0].Port != 8080 || hook.Spec.Ports[0].Port != 80 || hook.Spec.Ports[0].TargetPort.StrVal != "webhook" ||
		len(np.Spec.Ingress) != 2 || !metav1.IsControlledBy(hook, site) || !metav1.IsControlledBy(np, site) {
		t.Errorf("Service %+v, webhook Service %+v, NetworkPolicy %+v", svc.Spec.Ports, hook.Spec.Ports, np.Spec.Ingress)
	}
	if np.Spec.Ingress[0].From[2].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != testOperatorNamespace {
		t.Errorf("fetcher port peers %+v", np.Spec.Ingress[0].From)
	}
	// The pods of the fetcher are not the site's: the site's Service selects none of them.
	siteSvc := &corev1.Service{}
	testenv.Eventually(t, "site Service", func() error { return k8s.Get(ctx, key("docs"), siteSvc) })
	for k, v := range siteSvc.Spec.Selector {
		if d.Spec.Template.Labels[k] == v && k == sitechild.LabelName {
			t.Errorf("the site's Service selects the fetcher's pods by %s=%s", k, v)
		}
	}

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.Git.WebhookSecretRef = nil })
	testenv.Eventually(t, "webhook Service deleted", func() error { return testenv.Gone(k8s.Get(ctx, key("docs-git-webhook"), &corev1.Service{})) })
	testenv.Eventually(t, "NetworkPolicy without the webhook rule", func() error {
		if err := k8s.Get(ctx, key("docs-git"), np); err != nil {
			return err
		}
		if len(np.Spec.Ingress) != 1 {
			return fmt.Errorf("%d rules", len(np.Spec.Ingress))
		}
		return nil
	})
	waitEvent(t, ns, "docs", "Deleted Service docs-git-webhook: spec.content.git.webhookSecretRef is unset")

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content = v1alpha1.ContentSource{Image: "example/docs:v1"} })
	for _, c := range []struct {
		name string
		obj  client.Object
	}{{"docs-git", &appsv1.Deployment{}}, {"docs-git", &corev1.Service{}}, {"docs-git", &networkingv1.NetworkPolicy{}}} {
		testenv.Eventually(t, fmt.Sprintf("%T %s deleted", c.obj, c.name), func() error { return testenv.Gone(k8s.Get(ctx, key(c.name), c.obj)) })
	}
	waitEvent(t, ns, "docs", "Deleted Deployment docs-git: spec.content.git is unset")
	getDeployment(t, ns, "docs") // the image site's own Deployment

	// Someone else's Service under a fetcher name: the site is Stalled naming it, and no fetcher pod is created.
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-git"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	testenv.Must(t, k8s.Create(ctx, foreign))
	createGitSite(t, ns, "other", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "http://127.0.0.1:1/docs.git", Ref: "main"}}})
	waitSite(t, ns, "other", "NotOwned", conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonNotOwned, "other-git"))
	if err := k8s.Get(ctx, key("other-git"), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("a fetcher Deployment was created beside a foreign Service: %v", err)
	}
	if err := k8s.Get(ctx, key("other-git"), foreign); err != nil || len(foreign.OwnerReferences) != 0 {
		t.Errorf("the foreign Service was changed: %+v %v", foreign.OwnerReferences, err)
	}
}

// The tenancy policy's git settings: a URL under no allowed prefix, or a maxSize over the cap, is refused naming
// the field, and no fetcher is created.
func TestGitTenancy(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	for _, tc := range []struct {
		name, url, maxSize, field string
	}{
		{"evil", "https://github.com.evil.example/x.git", "", "spec.content.git.url"},
		{"huge", "http://127.0.0.1:1/docs.git", "2Gi", "spec.content.git.maxSize"},
	} {
		g := &v1alpha1.GitContent{URL: tc.url, Ref: "main"}
		if tc.maxSize != "" {
			g.MaxSize = ptr.To(resource.MustParse(tc.maxSize))
		}
		createGitSite(t, ns, tc.name, v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: g}})
		s := waitSite(t, ns, tc.name, "refused", conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPolicyViolation, tc.field))
		if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("%s: Ready %+v", tc.name, c)
		}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.name + "-git"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a fetcher was created for a refused site: %v", tc.name, err)
		}
	}
}

// The CRD's rules for spec.content.git, each naming its field.
func TestGitValidation(t *testing.T) {
	ns := namespace(t)
	git := func(mutate func(*v1alpha1.GitContent)) v1alpha1.StaticSiteSpec {
		g := &v1alpha1.GitContent{URL: "https://github.com/example/docs.git", Ref: "main"}
		mutate(g)
		return v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: g}}
	}
	for _, tc := range []struct {
		name string
		spec v1alpha1.StaticSiteSpec
		want string
	}{
		{"ftp url", git(func(g *v1alpha1.GitContent) { g.URL = "ftp://example.com/docs.git" }), "spec.content.git.url must be"},
		{"file url", git(func(g *v1alpha1.GitContent) { g.URL = "file:///etc" }), "spec.content.git.url must be"},
		{"credentials in url", git(func(g *v1alpha1.GitContent) { g.URL = "https://bot:token@github.com/example/docs.git" }), "spec.content.git.url must not carry credentials"},
		{"ref with ..", git(func(g *v1alpha1.GitContent) { g.Ref = "main..evil" }), "spec.content.git.ref must be a branch, tag or commit hash"},
		{"ref with a space", git(func(g *v1alpha1.GitContent) { g.Ref = "my branch" }), "spec.content.git.ref"},
		{"path climbing out", git(func(g *v1alpha1.GitContent) { g.Path = "public/../../etc" }), "spec.content.git.path must be a relative path without '..'"},
		{"absolute path", git(func(g *v1alpha1.GitContent) { g.Path = "/public" }), "spec.content.git.path must be a relative path"},
		{"interval under 10s", git(func(g *v1alpha1.GitContent) { g.Interval = &metav1.Duration{Duration: 5e9} }), "spec.content.git.interval must be at least 10s"},
		{"maxSize 0", git(func(g *v1alpha1.GitContent) { g.MaxSize = ptr.To(resource.MustParse("0")) }), "spec.content.git.maxSize must be greater than 0"},
		{"fetcher memory too small", git(func(g *v1alpha1.GitContent) { g.FetcherMemory = ptr.To(resource.MustParse("32Mi")) }), "spec.content.git.fetcherMemory must be at least 64Mi"},
		{"short pin", git(func(g *v1alpha1.GitContent) { g.Pin = "0123456789ab" }), "spec.content.git.pin must be a full commit hash"},
		{"upper-case pin", git(func(g *v1alpha1.GitContent) { g.Pin = strings.Repeat("A", 40) }), "spec.content.git.pin must be a full commit hash"},
		{"history 0", git(func(g *v1alpha1.GitContent) { g.History = ptr.To[int32](0) }), "spec.content.git.history"},
		{"history 21", git(func(g *v1alpha1.GitContent) { g.History = ptr.To[int32](21) }), "spec.content.git.history"},
		{"git and an image", func() v1alpha1.StaticSiteSpec {
			s := git(func(*v1alpha1.GitContent) {})
			s.Content.Image = "example/docs:v1"
			return s
		}(), "spec.content must set exactly one of image, configMaps, imageVolume, persistentVolumeClaim, git"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, ns, tc.spec, tc.want) })
	}
	long := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a" + strings.Repeat("b", 51)},
		Spec: git(func(*v1alpha1.GitContent) {})}
	if err := k8s.Create(context.Background(), long); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at most 51 characters for a Git site") {
		t.Errorf("a 52-character Git site: %v", err)
	}
	long.Name = long.Name[:51]
	long.ResourceVersion = ""
	if err := k8s.Create(context.Background(), long, client.DryRunAll); err != nil {
		t.Errorf("a 51-character Git site refused: %v", err)
	}
	for _, url := range []string{"https://github.com/example/docs.git", "http://gitserver.e2e.svc:8080/site.git",
		"ssh://git@github.com/example/docs.git", "ssh://git@gitea.internal:2222/example/docs.git", "git@github.com:example/docs.git"} {
		s := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"},
			Spec: git(func(g *v1alpha1.GitContent) {
				g.URL = url
				g.Ref = "0123456789abcdef0123456789abcdef01234567"
				g.Path = "site/build"
				g.Pin, g.History = "0123456789abcdef0123456789abcdef01234567", ptr.To[int32](20)
			})}
		if err := k8s.Create(context.Background(), s, client.DryRunAll); err != nil {
			t.Errorf("%s refused: %v", url, err)
		}
	}
}

// createGitSite creates a site and deletes it when the test ends: a Git site whose processes are gone would
// otherwise keep the controller polling it every few seconds for the rest of the suite (envtest runs no garbage
// collector, so its children stay, unreconciled).
func createGitSite(t *testing.T, ns, name string, spec v1alpha1.StaticSiteSpec) *v1alpha1.StaticSite {
	t.Helper()
	site := createSite(t, ns, name, spec)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), site) })
	return site
}
