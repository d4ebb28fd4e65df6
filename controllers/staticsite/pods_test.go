package staticsite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// serverPod plays the Deployment controller and kubelet for one pod of a site.
func serverPod(t *testing.T, d *appsv1.Deployment, name, ip string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name, Labels: d.Spec.Template.Labels,
		Annotations: d.Spec.Template.Annotations}, Spec: *d.Spec.Template.Spec.DeepCopy()}
	p.Spec.NodeName = "node-1"
	testenv.Must(t, k8s.Create(ctx, p))
	if p.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("pod %s QoS class %q, want Guaranteed", name, p.Status.QOSClass)
	}
	// The operator may annotate the new pod meanwhile (its site value revision, step_sitevalue.go): retried on the
	// pod as it is then.
	testenv.Eventually(t, "pod "+name+" running and ready", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = ip
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: sitechild.ContainerName, Ready: true, Image: p.Spec.Containers[0].Image,
			ImageID: "docker.io/example/pinned@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}
		return k8s.Status().Update(ctx, p)
	})
	return p
}

func TestPinnedAndGuaranteedPods(t *testing.T) {
	ns := namespace(t)
	createSite(t, ns, "pinned", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/pinned:v1"}, Replicas: ptr.To[int32](2)})
	d := getDeployment(t, ns, "pinned")
	completeRollout(t, d)
	waitSite(t, ns, "pinned", "no pods yet", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionUnknown, "NoReadyPods")
	})

	// The namespace enforces the restricted Pod Security Standard (see namespace()): a plain pod is refused, so the
	// server pods created below from the operator's template prove that the template passes it.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := k8s.Create(context.Background(), plain); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("a non-restricted pod was not refused by PodSecurity admission: %v", err)
	}

	scraper.set(ns, "pinned-a", podmetrics.Sample{Workers: 1, CPUs: "2", Pinned: true})
	serverPod(t, d, "pinned-a", "10.0.0.1")
	serverPod(t, d, "pinned-b", "10.0.0.2") // its metrics cannot be read yet
	waitSite(t, ns, "pinned", "metrics unavailable", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionUnknown, "MetricsUnavailable")
	})
	// The controller retries unreadable pods on its own (RequeueAfter), no event needed.
	scraper.set(ns, "pinned-b", podmetrics.Sample{Workers: 1, CPUs: "3", Pinned: true})
	site := waitSite(t, ns, "pinned", "pinned", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionTrue, "ExclusiveCPUs")
	})
	msg := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionPinned).Message
	if !strings.Contains(msg, "pinned-a=2") || !strings.Contains(msg, "pinned-b=3") {
		t.Errorf("Pinned message %q should list each pod's CPUs", msg)
	}
	if !strings.HasPrefix(site.Status.ContentRevision, "example/pinned:v1@sha256:0123") {
		t.Errorf("revision %q should carry the digest the pods report", site.Status.ContentRevision)
	}
	waitEvent(t, ns, "pinned", "PinnedTrue")
	// pinned-b's CPU set was kept in the pass that wrote Pinned=True. Every pass reads one pod's content afresh
	// (pinned-a, first by name: status.content), so only pinned-b shows that a CPU set is read once.
	scraper.mu.Lock()
	callsB := scraper.calls[ns+"/pinned-b"]
	scraper.mu.Unlock()

	// A pod whose server reports shared CPUs (no static CPU manager) turns Pinned False.
	scraper.set(ns, "pinned-c", podmetrics.Sample{Workers: 2, CPUs: "0-3", Pinned: false})
	serverPod(t, d, "pinned-c", "10.0.0.3")
	waitSite(t, ns, "pinned", "shared", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionFalse, "SharedCPUs")
	})
	scraper.mu.Lock()
	after := scraper.calls[ns+"/pinned-b"]
	scraper.mu.Unlock()
	if after != callsB {
		t.Errorf("pod pinned-b scraped %d times after its CPU set was known (%d before); a pod's CPU set is read once", after-callsB, callsB)
	}
}

func TestSamplesAreValid(t *testing.T) {
	// Every sample in config/samples is accepted by the API server (dry run: validation and CEL rules apply).
	ns := namespace(t)
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "staticsite_*.yaml"))
	testenv.Must(t, err)
	if len(files) < 4 {
		t.Fatalf("want a sample per content source, found %v", files)
	}
	sites := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		testenv.Must(t, err)
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			u.SetNamespace(ns)
			if err := k8s.Create(context.Background(), u, client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s refused: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "StaticSite" {
				sites++
			}
		}
	}
	if sites != len(files) {
		t.Errorf("%d StaticSites in %d files", sites, len(files))
	}
}
