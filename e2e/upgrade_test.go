//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

const (
	// upgradeSites sites under load while the operator is upgraded; at most one rolls at a time (the chart's
	// default serverImage.rolloutConcurrency).
	upgradeSites       = 3
	upgradeConcurrency = 1
	// upgradeLoadRate requests per second on each site for upgradeLoadDuration: long enough to span the operator's
	// own rollout and the sites' rollouts one after the other (the test checks that it did).
	upgradeLoadRate     = 40
	upgradeLoadDuration = 100 * time.Second
	// upgradeContainer is the server container of a site's Deployment (controllers/staticsite).
	upgradeContainer = "server"
)

// upgradeLoadScript loads several sites at once from one k6 pod (one scenario per site, constant arrival rate) and
// counts, per site, the requests and those that did not get a 200 with the site's own marker in the body.
// TARGETS is a JSON object {site: url}; MARKERS {site: marker}. handleSummary prints K6UPGRADE {...}.
const upgradeLoadScript = `import http from 'k6/http';
import { Counter } from 'k6/metrics';

const targets = JSON.parse(__ENV.TARGETS);
const markers = JSON.parse(__ENV.MARKERS);
const metric = (prefix, site) => prefix + '_' + site.replace(/[^a-zA-Z0-9_]/g, '_');
const reqs = {}, fails = {};
for (const site of Object.keys(targets)) {
  reqs[site] = new Counter(metric('site_reqs', site));
  fails[site] = new Counter(metric('site_fails', site));
}

const scenarios = {};
for (const site of Object.keys(targets)) {
  scenarios[metric('load', site)] = {
    executor: 'constant-arrival-rate', env: { SITE: site },
    rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION,
    preAllocatedVUs: Number(__ENV.VUS), maxVUs: Number(__ENV.VUS),
  };
}
export const options = { scenarios, summaryTrendStats: ['avg', 'p(99)', 'max'] };

export default function () {
  const site = __ENV.SITE;
  const r = http.get(targets[site]);
  reqs[site].add(1);
  if (r.status !== 200 || !r.body || !r.body.includes(markers[site])) {
    fails[site].add(1);
  }
}

function count(m) { return m ? m.values.count : 0; }

export function handleSummary(data) {
  const m = data.metrics;
  const sites = {};
  for (const site of Object.keys(targets)) {
    sites[site] = { requests: count(m[metric('site_reqs', site)]), failed: count(m[metric('site_fails', site)]) };
  }
  const out = {
    sites: sites,
    httpFailed: m.http_req_failed ? m.http_req_failed.values.passes : -1,
    dropped: count(m.dropped_iterations),
    p99ms: m.http_req_duration ? m.http_req_duration.values['p(99)'] : 0,
  };
  return { stdout: 'K6UPGRADE ' + JSON.stringify(out) + '\n' };
}
`

type upgradeLoad struct {
	Sites map[string]struct {
		Requests int64 `json:"requests"`
		Failed   int64 `json:"failed"`
	} `json:"sites"`
	HTTPFailed int64   `json:"httpFailed"`
	Dropped    int64   `json:"dropped"`
	P99ms      float64 `json:"p99ms"`
}

// siteRollout is what the test saw of one site's move to the new server image.
type siteRollout struct {
	started, done time.Time // first observation with the new image in the template, then rolled out too
	queued        bool      // seen with Reconciling=True reason ServerImageUpgradeQueued
}

// testOperatorUpgradeUnderLoad: `helm upgrade` changes the operator's default server image while three ConfigMap
// sites (which run that default image) are under constant load. The operator moves them to the new image one site
// at a time (serverImage.rolloutConcurrency, default 1): at no observation do two Deployments carry the new image
// without having finished rolling out, waiting sites say Reconciling=True reason ServerImageUpgradeQueued, and not
// one request fails. The release is put back to the original image at the end.
func testOperatorUpgradeUnderLoad(t *testing.T) {
	requireOperator(t)
	oldImage, newImage := cfg.serverImage, serverNextImage()
	repo, tag, ok := splitImage(newImage)
	if !ok {
		t.Fatalf("E2E_SERVER_NEXT_IMAGE %q has no tag", newImage)
	}
	// Registered before the namespace: cleanups run last-in first-out, so the release goes back to its revision
	// from before the upgrade (chart and values as they were) only once the sites are deleted (no second wave of
	// rollouts), and even if the test fails.
	revision := helmRevision(t)
	t.Cleanup(func() {
		if _, err := helm(t, "rollback", cfg.releaseName, fmt.Sprint(revision), "--namespace", cfg.releaseNamespace,
			"--wait", "--timeout", "3m"); err != nil {
			t.Errorf("roll the release back to revision %d: %v", revision, err)
		}
	})
	ns := newNamespace(t, "upgrade", false)
	ctx := ctxFor(t, 12*time.Minute)

	names := make([]string, upgradeSites)
	targets, markers := map[string]string{}, map[string]string{}
	for i := range names {
		names[i] = fmt.Sprintf("site-%d", i)
		markers[names[i]] = fmt.Sprintf("upgrade-marker-%d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names[i]},
			Data: map[string]string{"index.html": fmt.Sprintf("<!doctype html><title>upgrade</title><p>%s</p>\n", markers[names[i]])}}
		if err := k8s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		site := newSite(ns, names[i], v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: names[i]}}}, "100m")
		if err := k8s.Create(ctx, site); err != nil {
			t.Fatalf("create StaticSite %s: %v", names[i], err)
		}
	}
	for _, name := range names {
		site := waitSiteReady(t, ns, name, 3*time.Minute)
		targets[name] = urlFor(site.Status.URL, "/index.html")
		dep := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, dep); err != nil {
			t.Fatal(err)
		}
		if img := serverImageOf(dep); img != oldImage {
			t.Fatalf("Deployment %s runs %q before the upgrade, want the default server image %q", name, img, oldImage)
		}
	}

	startUpgradeLoad(t, ns, "load", targets, markers)
	loadEnds := time.Now().Add(upgradeLoadDuration)
	time.Sleep(5 * time.Second) // every site serves load on its old pod before the operator changes

	// helm --wait returns once the new operator pod is Ready; the sites may start moving before that, so watch
	// them from now on while helm runs.
	var helmErr error
	helmFinished := make(chan struct{})
	upgradeStart := time.Now()
	go func() {
		defer close(helmFinished)
		_, helmErr = helm(t, append(helmInstallArgs(),
			"--set", "server.image.repository="+repo, "--set", "server.image.tag="+tag,
			"--set", fmt.Sprintf("serverImage.rolloutConcurrency=%d", upgradeConcurrency))...)
	}()
	t.Cleanup(func() { <-helmFinished }) // helm logs to t: never let it outlive the test

	rollouts := map[string]*siteRollout{}
	for _, n := range names {
		rollouts[n] = &siteRollout{}
	}
	var violations []string
	helmDone, helmWait, observations, maxRolling := false, helmFinished, 0, 0
	timeout := time.After(6 * time.Minute)
	for {
		select {
		case <-helmWait:
			if helmErr != nil {
				t.Fatalf("helm upgrade to %s: %v", newImage, helmErr)
			}
			helmDone, helmWait = true, nil
			t.Logf("helm upgrade --wait done after %s", time.Since(upgradeStart).Round(100*time.Millisecond))
		case <-timeout:
			t.Fatalf("the sites did not all move to %s within 6 minutes: %s", newImage, rolloutState(names, rollouts))
		case <-time.After(500 * time.Millisecond):
		}
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var deps appsv1.DeploymentList
		var sites v1alpha1.StaticSiteList
		err := k8s.List(octx, &deps, client.InNamespace(ns))
		if err == nil {
			err = k8s.List(octx, &sites, client.InNamespace(ns))
		}
		cancel()
		if err != nil {
			t.Logf("observation failed (retrying): %v", err)
			continue
		}
		observations++
		now := time.Now()
		var rolling []string
		for i := range deps.Items {
			d := &deps.Items[i]
			r := rollouts[d.Name]
			if r == nil || serverImageOf(d) != newImage {
				continue
			}
			if r.started.IsZero() {
				r.started = now
				t.Logf("%s: Deployment %s has the new image", now.Sub(upgradeStart).Round(100*time.Millisecond), d.Name)
			}
			if deploymentRolledOut(d) {
				if r.done.IsZero() {
					r.done = now
					t.Logf("%s: Deployment %s rolled out", now.Sub(upgradeStart).Round(100*time.Millisecond), d.Name)
				}
			} else {
				rolling = append(rolling, fmt.Sprintf("%s (%s)", d.Name, deploymentState(d)))
			}
		}
		maxRolling = max(maxRolling, len(rolling))
		if len(rolling) > upgradeConcurrency && len(violations) < 10 {
			violations = append(violations, fmt.Sprintf("%s: %d sites rolling at once: %s",
				now.Sub(upgradeStart).Round(100*time.Millisecond), len(rolling), strings.Join(rolling, ", ")))
		}
		for i := range sites.Items {
			s := &sites.Items[i]
			c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciling)
			if r := rollouts[s.Name]; r != nil && !r.queued && c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonServerImageUpgradeQueued {
				r.queued = true
				t.Logf("%s: StaticSite %s queued: %s", now.Sub(upgradeStart).Round(100*time.Millisecond), s.Name, c.Message)
			}
		}
		if helmDone && allRolledOut(rollouts) {
			break
		}
	}
	upgradeTook := time.Since(upgradeStart)
	t.Logf("upgrade of %d sites under load took %s (%d observations, at most %d rolling at once): %s",
		upgradeSites, upgradeTook.Round(100*time.Millisecond), observations, maxRolling, rolloutState(names, rollouts))
	for _, v := range violations {
		t.Errorf("more than %d site rolling at once: %s", upgradeConcurrency, v)
	}
	// One at a time, as seen every 500 ms: each site started only after the one before it was done.
	order := slices.Clone(names)
	slices.SortFunc(order, func(a, b string) int { return rollouts[a].started.Compare(rollouts[b].started) })
	for i := 1; i < len(order); i++ {
		prev, cur := rollouts[order[i-1]], rollouts[order[i]]
		if cur.started.Before(prev.done) {
			t.Errorf("site %s started rolling (%s) before %s was rolled out (%s)", order[i],
				cur.started.Sub(upgradeStart).Round(100*time.Millisecond), order[i-1], prev.done.Sub(upgradeStart).Round(100*time.Millisecond))
		}
	}
	queued := 0
	for _, r := range rollouts {
		if r.queued {
			queued++
		}
	}
	if queued == 0 {
		t.Errorf("no site was ever seen with Reconciling=True reason %s", v1alpha1.ReasonServerImageUpgradeQueued)
	}
	if time.Now().After(loadEnds) {
		t.Errorf("the sites finished rolling %s after the load ended: the load did not span the upgrade (raise upgradeLoadDuration)",
			time.Since(loadEnds).Round(time.Second))
	}

	// The sites end Ready on the new image, and the queue is gone from their conditions.
	for _, name := range names {
		site := waitSiteReady(t, ns, name, 2*time.Minute)
		if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReconciling); c != nil && c.Reason == v1alpha1.ReasonServerImageUpgradeQueued {
			t.Errorf("StaticSite %s still queued after the upgrade: %s", name, condString(c))
		}
		for _, p := range sitePods(ctx, t, ns, name) {
			if img := p.Spec.Containers[0].Image; img != newImage {
				t.Errorf("pod %s of %s runs %s after the upgrade, want %s", p.Name, name, img, newImage)
			}
		}
	}

	r := upgradeLoadResult(t, ns, "load", upgradeLoadDuration+3*time.Minute)
	t.Logf("k6: %d dropped iterations, %d http_req_failed, p99 %.1f ms", r.Dropped, r.HTTPFailed, r.P99ms)
	for _, name := range names {
		s, ok := r.Sites[name]
		t.Logf("k6 %s: %d requests, %d failed", name, s.Requests, s.Failed)
		if !ok || s.Requests < int64(upgradeLoadRate*upgradeLoadDuration.Seconds()/2) || s.Failed != 0 {
			t.Errorf("site %s: want zero failed requests out of many, got %d failed of %d", name, s.Failed, s.Requests)
		}
	}
	if r.HTTPFailed != 0 {
		t.Errorf("k6 counted %d failed HTTP requests", r.HTTPFailed)
	}
}

// helmRevision is the release's current revision.
func helmRevision(t *testing.T) int {
	t.Helper()
	cmd := exec.CommandContext(ctxFor(t, time.Minute), cfg.helm, "status", cfg.releaseName, "--namespace", cfg.releaseNamespace, "-o", "json")
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+cfg.kubeCfg)
	out, err := cmd.Output()
	var st struct {
		Version int `json:"version"`
	}
	if err == nil {
		err = json.Unmarshal(out, &st)
	}
	if err != nil || st.Version == 0 {
		t.Fatalf("helm status %s: %v (revision %d)", cfg.releaseName, err, st.Version)
	}
	return st.Version
}

// serverNextImage is the server image under its second tag, the operator's new default image in the upgrade.
func serverNextImage() string {
	if v := os.Getenv("E2E_SERVER_NEXT_IMAGE"); v != "" {
		return v
	}
	return cfg.serverImage + "-next"
}

// splitImage splits "repo/name:tag" into repository and tag (a registry port is not a tag).
func splitImage(image string) (repo, tag string, ok bool) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i+1:], "/") {
		return image, "", false
	}
	return image[:i], image[i+1:], true
}

func serverImageOf(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == upgradeContainer {
			return c.Image
		}
	}
	return ""
}

// deploymentRolledOut is `kubectl rollout status`'s test: the controller saw the latest spec, every replica runs
// the latest template and is available, and no replica of an older template is left.
func deploymentRolledOut(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.Replicas == st.UpdatedReplicas &&
		st.AvailableReplicas == st.UpdatedReplicas
}

func deploymentState(d *appsv1.Deployment) string {
	st := d.Status
	return fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d",
		d.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
}

func allRolledOut(rollouts map[string]*siteRollout) bool {
	for _, r := range rollouts {
		if r.done.IsZero() {
			return false
		}
	}
	return true
}

func rolloutState(names []string, rollouts map[string]*siteRollout) string {
	var parts []string
	for _, n := range names {
		r := rollouts[n]
		at := func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("15:04:05.0")
		}
		parts = append(parts, fmt.Sprintf("%s started %s done %s queued %v", n, at(r.started), at(r.done), r.queued))
	}
	return strings.Join(parts, "; ")
}

// startUpgradeLoad runs one k6 pod that loads every site of targets at upgradeLoadRate for upgradeLoadDuration
// (one pod, so that three sites' load fits on the 2-CPU node next to the sites and their surge pods).
func startUpgradeLoad(t *testing.T, ns, name string, targets, markers map[string]string) {
	t.Helper()
	tj, _ := json.Marshal(targets)
	mj, _ := json.Marshal(markers)
	runK6(t, ns, name, upgradeLoadScript, []corev1.EnvVar{
		{Name: "TARGETS", Value: string(tj)}, {Name: "MARKERS", Value: string(mj)},
		{Name: "RATE", Value: fmt.Sprint(upgradeLoadRate)},
		{Name: "DURATION", Value: fmt.Sprintf("%ds", int(upgradeLoadDuration.Seconds()))},
		{Name: "VUS", Value: fmt.Sprint(upgradeLoadRate)},
	}, upgradeLoadDuration)
}

var upgradeResultLine = regexp.MustCompile(`K6UPGRADE (\{.*\})`)

// upgradeLoadResult waits for the k6 Job and parses its K6UPGRADE line.
func upgradeLoadResult(t *testing.T, ns, name string, timeout time.Duration) upgradeLoad {
	t.Helper()
	ok, log := waitJob(t, ns, name, timeout)
	m := upgradeResultLine.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("k6 job %s (succeeded=%v) printed no result; log:\n%s", name, ok, shorten(log, 4000))
	}
	var r upgradeLoad
	if err := json.Unmarshal([]byte(m[1]), &r); err != nil {
		t.Fatalf("k6 result %q: %v", m[1], err)
	}
	if !ok {
		t.Errorf("k6 job %s failed (result %+v)", name, r)
	}
	return r
}
