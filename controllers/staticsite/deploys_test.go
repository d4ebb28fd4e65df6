package staticsite

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// deploysAre checks status.deploys' commits, newest first, and the Deploy column.
func deploysAre(column string, commits ...string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		var got []string
		for _, d := range s.Status.Deploys {
			if d.Bundle == "" || d.Committed == nil {
				return fmt.Errorf("deploy %+v lacks its bundle or commit time", d)
			}
			got = append(got, d.Commit)
		}
		if !slices.Equal(got, commits) {
			return fmt.Errorf("status.deploys %v, want %v; %s", got, commits, describe(s))
		}
		if r := s.Status.Content; r == nil || r.Revision == nil || r.Revision.Deploy != column {
			return fmt.Errorf("Deploy column %+v, want %q", r, column)
		}
		return nil
	}
}

// noCondition passes while the site has no condition of type typ.
func noCondition(typ string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		if c := meta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
			return fmt.Errorf("%s is %s/%s: %s", typ, c.Status, c.Reason, c.Message)
		}
		return nil
	}
}

func setPinAnnotation(t *testing.T, ns, name, commit string) {
	t.Helper()
	site := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, site))
	patch := client.MergeFrom(site.DeepCopy())
	if commit == "" {
		delete(site.Annotations, v1alpha1.AnnotationPin)
	} else {
		if site.Annotations == nil {
			site.Annotations = map[string]string{}
		}
		site.Annotations[v1alpha1.AnnotationPin] = commit
	}
	testenv.Must(t, k8s.Patch(context.Background(), site, patch))
}

func setSpecPin(t *testing.T, ns, name, commit string) {
	t.Helper()
	site := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, site))
	patch := client.MergeFrom(site.DeepCopy())
	site.Spec.Content.Git.Pin = commit
	testenv.Must(t, k8s.Patch(context.Background(), site, patch))
}

// A Git site's deploys with real parts (the fetcher and two pullers, real processes; the test Git server): the
// history in status.deploys and the Deploy column; a rollback by the annotation served by both pods from their
// kept trees (DeployPinned=True, an event); the field winning over the annotation with a commit not in the
// history (NotInHistory, production unchanged, a Warning); the operator re-sending the pin to a fetcher that lost
// it; the unpin. The token Secret is mounted into the fetcher only.
func TestGitDeploysAndPin(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	_, repo := privateRepo(t)
	c1 := push(repo, "first", page("one"))
	gitSecret(t, ns, "docs-auth", "site-bot", "s3cret")
	spec := gitSiteSpec(repo.URL)
	spec.Content.Git.History = ptr.To[int32](3)
	spec.Content.Git.MaxSize = ptr.To(resource.MustParse("10Mi"))
	createGitSite(t, ns, "docs", spec)
	tf, d, pullers, _ := gitServing(t, ns, "docs")
	c2 := push(repo, "second", page("two"))
	tf.tick(t)
	c3 := push(repo, "third", page("three"))
	tf.tick(t)
	c4 := push(repo, "fourth", page("four"))
	tf.tick(t)
	waitGit(t, ns, "docs", "history of 3, newest first", all(servedRevision(c4, "2/2"), deploysAre(c4[:12], c4, c3, c2),
		noCondition(v1alpha1.ConditionDeployPinned)))

	t.Run("the token Secret is the fetcher's only, and the volumes hold the history", func(t *testing.T) {
		secret := &corev1.Secret{}
		testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs" + gitcontent.PinSecretSuffix}, secret))
		if len(secret.Data["token"]) < 32 || len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].Name != "docs" {
			t.Errorf("pin Secret: %d-byte token, owners %+v", len(secret.Data["token"]), secret.OwnerReferences)
		}
		fetcher := getDeployment(t, ns, "docs"+v1alpha1.GitFetcherSuffix)
		if !mountsSecret(fetcher.Spec.Template.Spec, secret.Name) {
			t.Error("the fetcher does not mount the pin token Secret")
		}
		if mountsSecret(d.Spec.Template.Spec, secret.Name) {
			t.Error("the server pods mount the pin token Secret")
		}
		for _, c := range []struct {
			spec corev1.PodSpec
			vol  string
			want string
		}{{fetcher.Spec.Template.Spec, "content", "80Mi"}, {d.Spec.Template.Spec, "site", "40Mi"}} {
			for _, v := range c.spec.Volumes {
				if v.Name == c.vol && (v.EmptyDir == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse(c.want)) != 0) {
					t.Errorf("volume %s: %+v, want sizeLimit %s (history 3 of 10Mi)", v.Name, v.EmptyDir, c.want)
				}
			}
		}
	})

	t.Run("the annotation rolls every pod back to a kept deploy", func(t *testing.T) {
		setPinAnnotation(t, ns, "docs", c2)
		waitGit(t, ns, "docs", "pinned to the second commit on both pods", all(servedRevision(c2, "2/2"),
			deploysAre(c2[:12]+" (pinned)", c4, c3, c2),
			conditionWith(v1alpha1.ConditionDeployPinned, metav1.ConditionTrue, v1alpha1.ReasonPinServed, "every ready pod (2)")))
		waitEvent(t, ns, "docs", "Normal PinServed DeployPinned: every ready pod (2) serves the pinned commit "+c2[:12])
		for i, p := range pullers {
			data, err := os.ReadFile(filepath.Join(p.p.Store.Served(), "index.html"))
			if err != nil || !strings.Contains(string(data), "<p>two</p>") {
				t.Errorf("pod %d serves %q (%v), want page two", i, data, err)
			}
		}
	})

	t.Run("the field wins; a commit not in the history changes nothing", func(t *testing.T) {
		setSpecPin(t, ns, "docs", c1) // fell out of the history of 3
		waitGit(t, ns, "docs", "refused", all(servedRevision(c2, "2/2"),
			conditionWith(v1alpha1.ConditionDeployPinned, metav1.ConditionFalse, v1alpha1.ReasonPinNotInHistory,
				"commit "+c1[:12]+" is not in the history")))
		waitEvent(t, ns, "docs", "Warning NotInHistory")
		setSpecPin(t, ns, "docs", c3)
		waitGit(t, ns, "docs", "the field's pin served", all(servedRevision(c3, "2/2"),
			conditionWith(v1alpha1.ConditionDeployPinned, metav1.ConditionTrue, v1alpha1.ReasonPinServed, c3[:12])))
	})

	t.Run("a fetcher that lost the pin gets it again", func(t *testing.T) {
		secret := &corev1.Secret{}
		testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs" + gitcontent.PinSecretSuffix}, secret))
		if code := postPinTo(t, tf.url, string(secret.Data["token"]), ""); code != 200 {
			t.Fatalf("unpin behind the operator's back: %d", code)
		}
		if rev, _ := tf.f.Revision(); rev.Pin != "" {
			t.Fatalf("the fetcher kept the pin %s after the unpin", rev.Pin)
		}
		// The unpin changes what the fetcher publishes: the operator's long poll wakes the site, whose pass sends
		// the pin again. Waited for on the fetcher's own notice of each change.
		waitFetcherPin(t, tf, c3, "sent again")
		waitGit(t, ns, "docs", "the pin served again", all(servedRevision(c3, "2/2"),
			conditionWith(v1alpha1.ConditionDeployPinned, metav1.ConditionTrue, v1alpha1.ReasonPinServed, c3[:12])))
	})

	t.Run("unpinning serves the newest again", func(t *testing.T) {
		setSpecPin(t, ns, "docs", "")
		setPinAnnotation(t, ns, "docs", "")
		waitGit(t, ns, "docs", "unpinned", all(servedRevision(c4, "2/2"), deploysAre(c4[:12], c4, c3, c2),
			noCondition(v1alpha1.ConditionDeployPinned)))
		waitEvent(t, ns, "docs", "Normal Unpinned")
		if rev, _ := tf.f.Revision(); rev.Pin != "" {
			t.Errorf("the fetcher is still pinned to %s", rev.Pin)
		}
	})

	t.Run("the pin reaches the fetcher while the site's pass is held", func(t *testing.T) {
		// Every read of the namespace's pods waits: no pass of the site gets past its fetcher step, where it
		// would send the pin. Only the fast path (gitcontent/pinnow.go) can deliver it.
		release := gitReader.holdReads(ns)
		t.Cleanup(release)
		setPinAnnotation(t, ns, "docs", c3)
		waitFetcherPin(t, tf, c3, "from the fast path, with the site's passes held")
		release()
		waitGit(t, ns, "docs", "the pass reports the pin the fast path sent", all(servedRevision(c3, "2/2"),
			conditionWith(v1alpha1.ConditionDeployPinned, metav1.ConditionTrue, v1alpha1.ReasonPinServed, c3[:12])))
	})
}

// waitFetcherPin waits, on the fetcher's own notice of each change, until it publishes the pin commit.
func waitFetcherPin(t *testing.T, tf *testFetcher, commit, how string) {
	t.Helper()
	timeout := time.After(gitWait)
	for {
		rev, changed := tf.f.Revision()
		if rev.Pin == commit {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the fetcher's pin is %q after %s, want %s %s", rev.Pin, gitWait, commit, how)
		}
	}
}

// mountsSecret says a pod spec has a volume of the Secret name.
func mountsSecret(spec corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
	}
	return false
}

// postPinTo POSTs {"pin": commit} ({"pin": null} for "") to a fetcher's port with token, and returns the status.
func postPinTo(t *testing.T, fetcherURL, token, commit string) int {
	t.Helper()
	body := `{"pin": null}`
	if commit != "" {
		body = `{"pin": "` + commit + `"}`
	}
	req, err := http.NewRequest("POST", fetcherURL+"/pin", strings.NewReader(body))
	testenv.Must(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	testenv.Must(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}
