//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

const operatorSelector = "app.kubernetes.io/name=hyperstatic,app.kubernetes.io/component=operator"

// testHelmInstall: `helm install` the chart; the operator Deployment becomes available, its pod is Ready, runs
// with the restricted security context and Guaranteed QoS, and the CRDs are established.
func testHelmInstall(t *testing.T) {
	// The operator's namespace enforces the restricted Pod Security Standard: the ReplicaSet could not create
	// an operator pod that breaks it, and helm --wait would fail.
	restrictReleaseNamespace(t)
	start := time.Now()
	if _, err := helm(t, helmInstallArgs()...); err != nil {
		dumpOperator(t)
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install --wait took %s", time.Since(start).Round(time.Second))

	ctx := ctxFor(t, 2*time.Minute)
	for _, crd := range []string{"staticsites.hyperstatic.dev", "benchmarks.hyperstatic.dev"} {
		obj := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: crd}, obj); err != nil {
			t.Fatalf("CRD %s: %v", crd, err)
		}
		established := false
		for _, c := range obj.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		if !established {
			t.Errorf("CRD %s is not Established", crd)
		}
	}
	pod := operatorPod(t)
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("operator pod QoS = %s, want Guaranteed", pod.Status.QOSClass)
	}
	sc := pod.Spec.Containers[0].SecurityContext
	if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) {
		t.Errorf("operator container security context is not restricted: %+v", sc)
	}
	t.Logf("operator pod %s Ready; images: %s", pod.Name, pod.Spec.Containers[0].Image)
}

// restrictReleaseNamespace creates the release namespace, or labels an existing one, to enforce the restricted
// Pod Security Standard.
func restrictReleaseNamespace(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	labels := map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}
	ns := &corev1.Namespace{}
	err := k8s.Get(ctx, client.ObjectKey{Name: cfg.releaseNamespace}, ns)
	switch {
	case apierrors.IsNotFound(err):
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cfg.releaseNamespace, Labels: labels}}
		err = k8s.Create(ctx, ns)
	case err == nil:
		patch := client.MergeFrom(ns.DeepCopy())
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		for k, v := range labels {
			ns.Labels[k] = v
		}
		err = k8s.Patch(ctx, ns, patch)
	}
	if err != nil {
		t.Fatalf("release namespace %s: %v", cfg.releaseNamespace, err)
	}
}

// operatorPod returns the one Ready, non-terminating operator pod (failing the test if there is none).
func operatorPod(t *testing.T) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	eventually(t, 3*time.Minute, "a Ready operator pod", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(cfg.releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
		if err != nil {
			return false, err.Error(), nil
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && podstate.Ready(p) {
				found = p
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d pods, none Ready", len(pods.Items)), nil
	})
	return found
}

// dumpOperator logs the operator pods' state and their last log lines, for a failed install.
func dumpOperator(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	pods, err := cs.CoreV1().Pods(cfg.releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil {
		t.Logf("list operator pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			t.Logf("operator pod %s: ready=%v restarts=%d state=%+v last=%+v", p.Name, c.Ready, c.RestartCount, c.State, c.LastTerminationState)
		}
		for _, previous := range []bool{false, true} {
			raw, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous, TailLines: ptr.To[int64](30)}).DoRaw(ctx)
			if err == nil && len(raw) > 0 {
				t.Logf("operator pod %s log (previous=%v):\n%s", p.Name, previous, raw)
			}
		}
	}
}

// testOperatorRestartAndUninstall: the operator pod is killed right after a StaticSite is created and while its
// spec changes; the new operator pod converges the site (current generation, both replicas ready). Then
// `helm uninstall` removes everything the chart installed; the CRDs stay: their templates carry
// helm.sh/resource-policy: keep.
func testOperatorRestartAndUninstall(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "restart", false)
	ctx := ctxFor(t, 10*time.Minute)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "content"},
		Data: map[string]string{"index.html": "<p>restart</p>\n"}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	site := newSite(ns, "restart", v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "content"}}}, "100m")
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	// Kill the operator mid-reconcile: right after the create, with no grace period.
	old := operatorPod(t)
	if err := cs.CoreV1().Pods(cfg.releaseNamespace).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("kill operator pod: %v", err)
	}
	t.Logf("killed operator pod %s", old.Name)
	// While no operator runs, change the spec: the new one must pick up the latest generation.
	patch := []byte(`{"spec":{"replicas":2}}`)
	if err := k8s.Patch(ctx, site, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	restarted := operatorPod(t)
	if restarted.UID == old.UID {
		t.Fatalf("operator pod was not replaced")
	}
	t.Logf("new operator pod %s", restarted.Name)
	waitSiteReady(t, ns, "restart", 4*time.Minute)

	// The site's namespace goes before the operator, so nothing is left for an absent operator to finalize.
	deleteNamespace(t, ns)

	if _, err := helm(t, "uninstall", cfg.releaseName, "--namespace", cfg.releaseNamespace, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	name := cfg.releaseName // the chart's full name when the release name contains "hyperstatic"
	gone := []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&appsv1.Deployment{}, client.ObjectKey{Namespace: cfg.releaseNamespace, Name: name}},
		{&corev1.ServiceAccount{}, client.ObjectKey{Namespace: cfg.releaseNamespace, Name: name}},
		{&rbacv1.ClusterRole{}, client.ObjectKey{Name: name + "-manager"}},
		{&rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: name + "-manager"}},
		{&rbacv1.Role{}, client.ObjectKey{Namespace: cfg.releaseNamespace, Name: name + "-leader-election"}},
		{&rbacv1.RoleBinding{}, client.ObjectKey{Namespace: cfg.releaseNamespace, Name: name + "-leader-election"}},
	}
	for _, g := range gone {
		eventually(t, time.Minute, fmt.Sprintf("%T %s removed", g.obj, g.key), func(ctx context.Context) (bool, string, error) {
			err := k8s.Get(ctx, g.key, g.obj)
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
	}
	eventually(t, 2*time.Minute, "operator pods gone", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(cfg.releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items)), nil
	})
	// The test made the release namespace (helm does not delete namespaces): remove it too.
	deleteNamespace(t, cfg.releaseNamespace)

	// The chart's CRD templates carry helm.sh/resource-policy: keep, so uninstall leaves them (and users'
	// StaticSites): check that the documented behaviour holds rather than pretend otherwise.
	if err := k8s.Get(ctx, client.ObjectKey{Name: "staticsites.hyperstatic.dev"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("CRD staticsites.hyperstatic.dev should be kept by helm uninstall: %v", err)
	}
}
