//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

var metav1GetOptions = metav1.GetOptions{}

// ctxFor returns a context bounded by d and cancelled when the test ends.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every interval until it returns true, an error that is not retryable, or timeout.
// The last non-nil "why" is reported on timeout so a failure says what was still missing.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start, why := time.Now(), ""
	for {
		ok, w, err := cond(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			t.Logf("%s: after %s", what, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if w != "" {
			why = w
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s (last state: %s)", what, timeout, why)
		case <-time.After(time.Second):
		}
	}
}

// newNamespace creates a namespace for one test and deletes it (and waits for it to go) at the end, so every
// test leaves the cluster as it found it. Namespaces enforce the restricted Pod Security Standard unless
// relaxed is set (then it is only warned about).
func newNamespace(t *testing.T, prefix string, relaxed bool) string {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	name := fmt.Sprintf("e2e-%s-%04x", prefix, rand.IntN(1<<16))
	labels := map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}
	if relaxed {
		labels["pod-security.kubernetes.io/enforce"] = "baseline"
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { deleteNamespace(t, name) })
	// Pods need the namespace's default ServiceAccount, which the controller-manager creates asynchronously.
	eventually(t, time.Minute, "default ServiceAccount in "+name, func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, fmt.Sprint(err), nil
	})
	return name
}

func deleteNamespace(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if t.Failed() {
		dumpNamespace(t, name)
	}
	err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("delete namespace %s: %v", name, err)
		return
	}
	for ctx.Err() == nil {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(time.Second)
	}
	t.Errorf("namespace %s still there 3 minutes after its deletion", name)
}

// postmortemMarker starts the lines a failed test logs after its failure (the namespace's state, container logs):
// hack/e2e-why-failed.sh shows a failed test's last lines before it, which hold the failure itself.
const postmortemMarker = "POSTMORTEM"

// dumpNamespace logs what a person debugging a failure looks at first: StaticSites, Benchmarks, pods, events.
func dumpNamespace(t *testing.T, ns string) {
	t.Helper()
	t.Logf("%s: namespace %s after the failure: its StaticSites, Benchmarks, pods and events", postmortemMarker, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sites v1alpha1.StaticSiteList
	if k8s.List(ctx, &sites, client.InNamespace(ns)) == nil {
		for _, s := range sites.Items {
			b, _ := json.MarshalIndent(map[string]any{"spec": s.Spec, "status": s.Status}, "", "  ")
			t.Logf("StaticSite %s/%s:\n%s", ns, s.Name, b)
		}
	}
	var benches v1alpha1.BenchmarkList
	if k8s.List(ctx, &benches, client.InNamespace(ns)) == nil {
		for _, b := range benches.Items {
			js, _ := json.MarshalIndent(b.Status, "", "  ")
			t.Logf("Benchmark %s/%s status:\n%s", ns, b.Name, js)
		}
	}
	if pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s: phase=%s qos=%s", p.Name, p.Status.Phase, p.Status.QOSClass)
			for _, c := range p.Status.ContainerStatuses {
				t.Logf("  container %s ready=%v restarts=%d state=%+v", c.Name, c.Ready, c.RestartCount, c.State)
			}
		}
	}
	if evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			t.Logf("event %s %s/%s: %s %s", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// ---- helm and the operator

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx := ctxFor(t, 6*time.Minute)
	cmd := exec.CommandContext(ctx, cfg.helm, args...)
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+cfg.kubeCfg)
	out, err := cmd.CombinedOutput()
	t.Logf("helm %s\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// helmReleaseDeployed says whether the release is installed and deployed (quietly: no NOTES in the test log).
func helmReleaseDeployed(t *testing.T) bool {
	t.Helper()
	cmd := exec.CommandContext(ctxFor(t, time.Minute), cfg.helm, "status", cfg.releaseName, "--namespace", cfg.releaseNamespace, "-o", "json")
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+cfg.kubeCfg)
	out, err := cmd.Output()
	if err != nil {
		return false
	}
	var st struct {
		Info struct {
			Status string `json:"status"`
		} `json:"info"`
	}
	return json.Unmarshal(out, &st) == nil && st.Info.Status == "deployed"
}

// helmInstallArgs installs the chart with the locally built images. The operator gets 50m CPU (the chart's
// default is 100m): on the 2-CPU kind node this leaves room for one pinned `cpu: 1` site next to it.
// E2E_AUTOSCALER_SCRAPE_INTERVAL overrides the test's short scrape interval, e.g. with the operator's default
// (5s) to measure the load-step-to-Ready time as users get it.
func helmInstallArgs() []string {
	scrapeInterval := os.Getenv("E2E_AUTOSCALER_SCRAPE_INTERVAL")
	if scrapeInterval == "" {
		scrapeInterval = "2s"
	}
	return []string{"upgrade", "--install", cfg.releaseName, cfg.chart,
		"--namespace", cfg.releaseNamespace, "--create-namespace", "--wait", "--timeout", "4m",
		// CRDs left by an earlier install (uninstall keeps them, and charts before 0.1.0's templates/crds put them
		// in crds/, outside any release) are adopted instead of refused.
		"--take-ownership",
		"--set", "operator.image.tag=" + cfg.version,
		"--set", "server.image.tag=" + cfg.version,
		"--set", "k6.image.tag=" + cfg.version,
		"--set", "contentAgent.image.tag=" + cfg.version,
		// Git content from the scenario's own server only (gitserver_test.go): the default allows public forges.
		"--set", "tenancy.git.urls={" + strings.Join(gitURLPrefixes, ",") + "}",
		// The suite's site images, by repository: the default policy allows only the chart's own server and k6.
		"--set", "tenancy.images={" + strings.Join(siteImageRepositories(), ",") + "}",
		// The certificate scenario's CA ClusterIssuer (certmanager_test.go): by default sites may name only
		// Issuers of their own namespace.
		"--set", "tenancy.certificates.clusterIssuers={" + e2eClusterIssuer + "}",
		// Previews (scenario 14j) need their domain's wildcard: the default policy allows no wildcard hostname.
		"--set", "tenancy.hostnames.wildcards=true",
		"--set", "tenancy.previews.max=20", // scenario 14j opens 20 pull requests at once
		// The signIn site's identity provider (sso_test.go): by default only public ones are allowed.
		"--set", "tenancy.sso.issuers={" + dexIssuer + "}",
		"--set", "operator.resources.cpu=50m",
		// Scrape often so the autoscaling scenario reacts within the test's time.
		"--set", "operator.autoscalerScrapeInterval=" + scrapeInterval,
	}
}

// siteImageRepositories are the repositories of the images the suite's sites run (tags dropped: an entry of
// tenancy.images allows one repository with any tag).
func siteImageRepositories() []string {
	var repos []string
	for _, img := range []string{cfg.siteImage, cfg.rolloutV1Image, cfg.rolloutV2Image, cfg.pydocsImage, cfg.pydocsV2Image, capacityImage("v1")} {
		if repo, _, ok := splitImage(img); ok && !slices.Contains(repos, repo) {
			repos = append(repos, repo)
		}
	}
	return repos
}

// operatorInstall serialises requireOperator: scenarios run side by side, and two helm installs of one release at
// once would fight.
var operatorInstall sync.Mutex

// requireOperator installs the operator when a scenario runs without the install scenario before it.
func requireOperator(t *testing.T) {
	t.Helper()
	operatorInstall.Lock()
	defer operatorInstall.Unlock()
	if helmReleaseDeployed(t) {
		return
	}
	if _, err := helm(t, helmInstallArgs()...); err != nil {
		t.Fatalf("helm install: %v", err)
	}
}

// ---- StaticSites

func newSite(ns, name string, content v1alpha1.ContentSource, cpu string) *v1alpha1.StaticSite {
	q := resource.MustParse(cpu)
	mem := resource.MustParse("64Mi")
	return &v1alpha1.StaticSite{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.StaticSiteSpec{
			Content:  content,
			Replicas: ptr.To[int32](1),
			CPU:      &q,
			Memory:   &mem,
		},
	}
}

// waitSiteReady waits until the site's status describes its current generation and says Ready=True with every
// desired replica ready and updated, and returns it.
func waitSiteReady(t *testing.T, ns, name string, timeout time.Duration) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{}
	eventually(t, timeout, "StaticSite "+name+" Ready", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, site); err != nil {
			return false, err.Error(), nil
		}
		return siteReady(site)
	})
	return site
}

func siteReady(site *v1alpha1.StaticSite) (bool, string, error) {
	st := site.Status
	ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	want := int32(1)
	if site.Spec.Replicas != nil {
		want = *site.Spec.Replicas
	}
	why := fmt.Sprintf("generation %d observed %d, replicas %d ready %d updated %d (want %d), Ready=%v",
		site.Generation, st.ObservedGeneration, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, want, condString(ready))
	ok := st.ObservedGeneration == site.Generation && ready != nil && ready.Status == metav1.ConditionTrue &&
		st.ReadyReplicas == want && st.UpdatedReplicas == want && st.Replicas == want
	return ok, why, nil
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// sitePods lists the running, non-terminating server pods of a site.
func sitePods(ctx context.Context, t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelSite + "=" + name})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	return out
}

// scrapePod reads a server pod's /metrics through the API server's pod proxy (the test process only talks to
// the API server on loopback).
func scrapePod(ctx context.Context, pod *corev1.Pod) (podmetrics.Sample, error) {
	raw, err := cs.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, fmt.Sprint(v1alpha1.AdminPort), "/metrics", nil).DoRaw(ctx)
	if err != nil {
		return podmetrics.Sample{}, err
	}
	return podmetrics.Parse(bytes.NewReader(raw))
}

// ---- in-cluster clients

// restrictedContainer returns a container that passes the restricted Pod Security Standard.
func restrictedContainer(name, image string, args ...string) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            args,
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](65532),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// runJob creates a one-pod Job (no retries: a failed client is a failed test) and returns it.
func runJob(t *testing.T, ns, name string, pod corev1.PodSpec, deadline time.Duration) *batchv1.Job {
	t.Helper()
	pod.RestartPolicy = corev1.RestartPolicyNever
	pod.AutomountServiceAccountToken = ptr.To(false)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(int64(deadline.Seconds())),
			Template:              corev1.PodTemplateSpec{Spec: pod},
		},
	}
	if err := k8s.Create(ctxFor(t, 30*time.Second), job); err != nil {
		t.Fatalf("create job %s: %v", name, err)
	}
	return job
}

// waitJob waits for a Job to finish and returns whether it succeeded and its pod's log.
func waitJob(t *testing.T, ns, name string, timeout time.Duration) (bool, string) {
	t.Helper()
	var succeeded bool
	eventually(t, timeout, "job "+name+" finished", func(ctx context.Context) (bool, string, error) {
		job := &batchv1.Job{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
			return false, err.Error(), nil
		}
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				succeeded = true
				return true, "", nil
			case batchv1.JobFailed:
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d", job.Status.Active, job.Status.Succeeded, job.Status.Failed), nil
	})
	return succeeded, jobLog(t, ns, name)
}

// jobLog returns the log of the Job's (single) pod.
func jobLog(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pod of job %s: %v (%d pods)", name, err, len(pods.Items))
	}
	raw, err := cs.CoreV1().Pods(ns).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of job %s: %v", name, err)
	}
	return string(raw)
}

// fetchResult mirrors e2e/cmd/fetch's output lines.
type fetchResult struct {
	URL             string `json:"url"`
	Status          int    `json:"status"`
	Size            int    `json:"size"`
	SHA256          string `json:"sha256"`
	ContentType     string `json:"contentType"`
	Body            string `json:"body"`
	Error           string `json:"error"`
	CPUsAllowedList string `json:"cpusAllowedList"`
	ContentEncoding string `json:"contentEncoding"`
	DecodedSize     int    `json:"decodedSize"`
	DecodedSHA256   string `json:"decodedSha256"`
	CertSerial      string `json:"certSerial"`
	TLSVersion      string `json:"tlsVersion"`
	Proto           string `json:"proto"`
}

// fetch runs the fetch image in a pod with args and returns its JSON lines: the first carries the pod's
// allowed CPU list, the others one result per URL.
func fetch(t *testing.T, ns, name string, timeout time.Duration, args ...string) (bool, []fetchResult) {
	t.Helper()
	return fetchOnNode(t, ns, name, "", timeout, args...)
}

// fetchOnNode is fetch with the pod on the named node ("": wherever the scheduler puts it), for a check that
// compares what the client pod sees with a server pod on the same node (its shared CPU pool).
func fetchOnNode(t *testing.T, ns, name, node string, timeout time.Duration, args ...string) (bool, []fetchResult) {
	t.Helper()
	runJob(t, ns, name, corev1.PodSpec{NodeName: node, Containers: []corev1.Container{restrictedContainer("fetch", cfg.fetchImage, args...)}}, timeout)
	ok, log := waitJob(t, ns, name, timeout+30*time.Second)
	return ok, fetchResults(t, name, log)
}

// fetchResults decodes a fetch pod's JSON lines (fetch's, or fetchh3's); a line that is not one is logged.
func fetchResults(t *testing.T, name, log string) []fetchResult {
	t.Helper()
	var out []fetchResult
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r fetchResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Logf("fetch %s: %s", name, sc.Text())
			continue
		}
		out = append(out, r)
	}
	return out
}

// cpuSet parses a Linux CPU list ("0-2,5") into a set.
func cpuSet(list string) map[int]bool {
	set := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		if part == "" {
			continue
		}
		var lo, hi int
		if n, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); n == 2 {
			for c := lo; c <= hi; c++ {
				set[c] = true
			}
		} else if n, _ := fmt.Sscanf(part, "%d", &lo); n == 1 {
			set[lo] = true
		}
	}
	return set
}

// podCondition returns the pod's condition of type typ, or nil.
func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
