//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// gitRollbackBound guards the rollback's time in CI. The goal is 1 s (docs/design/deploys.md); the kind
// node shares two cores with every other scenario and the operator has 50m of CPU, so the bound is a regression
// guard and the MEASURED line is what the note reports against the goal. Measured 2026-12-03: 0.24 s with
// scenario 14 alone, 4.75 s (unpin 7.25 s) beside every scenario, of which 4.43 s passed before the fetcher
// published the pin (the operator's hop: watch, queue, pass, POST /pin); 10 s was too close to that to hold.
const gitRollbackBound = 30 * time.Second

// rollbackUnderLoad (h): under k6 load on the site's Service, `kubectl annotate hyperstatic.dev/pin=<commit>` of
// an earlier deploy (step d's good commit) makes every pod serve it, flipping to the tree already on its disk;
// DeployPinned turns True PinServed, the Deploy column says pinned. Removing the annotation takes every pod back to
// the branch's head. Both moves are timed from the API write to the last pod serving the page (each pod read
// directly every 100 ms); k6 sees both versions and no failed request; no pod is replaced or restarted.
func (sc *gitScenario) rollbackUnderLoad(t *testing.T) {
	if sc.rollbackTo.path == "" {
		t.Fatal("step d did not record a deploy to roll back to")
	}
	site := getSite(t, sc.ns, "www")
	head := sc.repo.heads["main"].String()
	headIndex := fileOf(sc.repo.trees["main"], "index.html")
	if !inDeploys(site, sc.rollbackCommit) {
		t.Fatalf("status.deploys has no %s: %v", sc.rollbackCommit[:12], deployCommits(site))
	}
	pods := gitServerPods(ctxFor(t, time.Minute), t, site)
	pages := newPodPages(t, pods)

	load := loadSite{name: "www", path: "/index.html", v1Marker: "version v6.", v2Marker: "version v4."}
	startLoad(t, sc.ns, "rollback-load", site.Status.URL, load, 100, 40*time.Second)
	time.Sleep(5 * time.Second) // the load on the head's page first

	pinned := annotatePin(t, sc.ns, &sc.rollbackCommit)
	pinServed := pages.servedTimes(t, sc.rollbackTo, pinned, time.Minute)
	took := maxDuration(pinServed)
	t.Logf("MEASURED git rollback (annotation) -> every pod serves %s: %.2f s (goal 1 s; 2 pods, under k6 load)", sc.rollbackCommit[:12], took.Seconds())
	logRollbackHops(t, sc.ns, pods, sc.rollbackCommit, pinned, pinServed)
	if took > gitRollbackBound {
		t.Errorf("rollback -> every pod took %s, want at most %s", took.Round(10*time.Millisecond), gitRollbackBound)
	}
	waitCondition(t, sc.ns, "www", v1alpha1.ConditionDeployPinned, metav1.ConditionTrue, v1alpha1.ReasonPinServed, time.Minute)
	site = getSite(t, sc.ns, "www")
	if rev := revisionOf(site); rev == nil || rev.Commit != sc.rollbackCommit {
		t.Errorf("status.content.revision = %s, want the pinned %s", revisionString(rev), sc.rollbackCommit[:12])
	} else {
		t.Logf("Deploy column: %q", rev.Deploy)
	}
	time.Sleep(5 * time.Second) // the load on the pinned page

	unpinned := annotatePin(t, sc.ns, nil)
	back := maxDuration(pages.servedTimes(t, headIndex, unpinned, time.Minute))
	t.Logf("MEASURED git unpin -> every pod serves the head %s again: %.2f s", head[:12], back.Seconds())
	if back > gitRollbackBound {
		t.Errorf("unpin -> every pod took %s, want at most %s", back.Round(10*time.Millisecond), gitRollbackBound)
	}
	waitGitRevision(t, sc.ns, "www", head, time.Minute)
	eventually(t, time.Minute, "DeployPinned gone", func(ctx context.Context) (bool, string, error) {
		s := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: sc.ns, Name: "www"}, s); err != nil {
			return false, err.Error(), nil
		}
		for i := range s.Status.Conditions {
			if s.Status.Conditions[i].Type == v1alpha1.ConditionDeployPinned {
				return false, condString(&s.Status.Conditions[i]), nil
			}
		}
		return true, "", nil
	})
	requireEvent(ctxFor(t, time.Minute), t, sc.ns, "www", corev1.EventTypeNormal, v1alpha1.ReasonPinServed)
	requireEvent(ctxFor(t, time.Minute), t, sc.ns, "www", corev1.EventTypeNormal, "Unpinned")

	r := loadResult(t, sc.ns, "rollback-load", 3*time.Minute)
	t.Logf("MEASURED git rollback and back under load: k6: %d requests, %d failed, %d dropped, %d served the head, %d the pinned deploy, p99 %.1f ms",
		r.Requests, r.Failed, r.Dropped, r.V1, r.V2, r.P99ms)
	if r.Requests == 0 || r.Failed != 0 {
		t.Errorf("want zero failed requests out of many, got %d failed of %d", r.Failed, r.Requests)
	}
	if r.V1 == 0 || r.V2 == 0 {
		t.Errorf("the load did not span the rollback: %d head and %d pinned responses", r.V1, r.V2)
	}
	sc.requireSamePods(t, site)
}

// annotatePin sets the site's pin annotation to commit (nil removes it) and returns when it began the write.
func annotatePin(t *testing.T, ns string, commit *string) time.Time {
	t.Helper()
	start := time.Now()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{v1alpha1.AnnotationPin: commit}}})
	if err != nil {
		t.Fatal(err)
	}
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "www"}}
	if err := k8s.Patch(ctxFor(t, 30*time.Second), site, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("annotate %s: %v", v1alpha1.AnnotationPin, err)
	}
	return start
}

func inDeploys(site *v1alpha1.StaticSite, commit string) bool {
	for _, d := range site.Status.Deploys {
		if d.Commit == commit {
			return true
		}
	}
	return false
}

func deployCommits(site *v1alpha1.StaticSite) []string {
	var out []string
	for _, d := range site.Status.Deploys {
		out = append(out, fmt.Sprintf("%.12s", d.Commit))
	}
	return out
}

// logRollbackHops logs where a rollback's time went, from the components' own log lines (the kubelet's
// timestamps, nanoseconds; every kind node shares the host's clock): the fetcher's "pin" line (the operator's
// watch, pass and POST /pin before it) and each puller's "installed" line (the long poll's answer and the flip
// before it); what follows is the server's reload and the test's 100 ms polling. A line not found is said, not
// failed: this is the breakdown the note reports against the 1 s goal, not an assertion.
func logRollbackHops(t *testing.T, ns string, pods []corev1.Pod, commit string, start time.Time, served map[string]time.Duration) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	f := fetcherPod(t, ns, "www")
	hops := []string{}
	if at, ok := logLineTime(ctx, f, f.Spec.Containers[0].Name, start, "pin="+commit); ok {
		hops = append(hops, fmt.Sprintf("fetcher publishes the pin %.2f s", at.Sub(start).Seconds()))
	} else {
		hops = append(hops, "fetcher's pin line not found")
	}
	for i := range pods {
		p := &pods[i]
		if at, ok := logLineTime(ctx, p, pullerContainer, start, "installed commit="+commit); ok {
			hops = append(hops, fmt.Sprintf("%s: puller flipped %.2f s, served %.2f s", p.Name, at.Sub(start).Seconds(), served[p.Name].Seconds()))
		} else {
			hops = append(hops, p.Name+": puller's installed line not found")
		}
	}
	t.Logf("MEASURED git rollback hops from the annotation's write: %s", strings.Join(hops, "; "))
}

// logLineTime is the kubelet's timestamp of the first line of the container's log since since that contains substr.
func logLineTime(ctx context.Context, p *corev1.Pod, container string, since time.Time, substr string) (time.Time, bool) {
	sinceTime := metav1.NewTime(since.Add(-time.Second))
	raw, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: container, Timestamps: true, SinceTime: &sinceTime}).DoRaw(ctx)
	if err != nil {
		return time.Time{}, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		stamp, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.Contains(rest, substr) {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil && !at.Before(since) {
			return at, true
		}
	}
	return time.Time{}, false
}
