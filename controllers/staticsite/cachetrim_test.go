package staticsite

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// TestApplyGuardThroughTheTrimmedCache: the manager's cache keeps only the operator's managed fields entries
// (managercache.KeepOwnManagedFields), and the apply guard, reading a Deployment from it after two other managers
// wrote to the object (its spec's annotations and its status), still finds the operator's fields equal to the
// desired ones and sends nothing.
func TestApplyGuardThroughTheTrimmedCache(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trimmed", UID: "0000-trimmed"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "a"}}},
			Replicas: ptr.To[int32](2)}}
	content := desired.ConfigMapsContent(site, []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}, Data: map[string]string{"x.html": "x"}}})
	want := func() *appsv1ac.DeploymentApplyConfiguration {
		return desired.Deployment(site, testServerImage, content, desired.MemoryFor(site, content))
	}
	key := types.NamespacedName{Namespace: ns, Name: "trimmed"}
	cached := suiteReconciler.Client

	res, err := applyChild(ctx, cached, k8s, site, "Deployment", &appsv1.Deployment{}, want(), key, extractDeployment)
	testenv.Must(t, err)
	if res != applyCreated {
		t.Fatalf("first apply: %v, want Created", res)
	}
	live := &appsv1.Deployment{}
	testenv.Must(t, k8s.Get(ctx, key, live))
	note := client.MergeFrom(live.DeepCopy())
	live.Annotations = map[string]string{"note": "someone else's"}
	testenv.Must(t, k8s.Patch(ctx, live, note, client.FieldOwner("kubectl-annotate")))
	status := client.MergeFrom(live.DeepCopy())
	live.Status.ObservedGeneration, live.Status.Replicas = live.Generation, 2
	testenv.Must(t, k8s.Status().Patch(ctx, live, status, client.FieldOwner("kube-controller-manager")))

	testenv.Must(t, k8s.Get(ctx, key, live))
	if n := len(live.ManagedFields); n != 3 {
		t.Fatalf("the API server holds %d managed fields entries, want 3: %+v", n, live.ManagedFields)
	}
	testenv.Eventually(t, "the cache holds the status write, with the operator's entry alone", func() error {
		d := &appsv1.Deployment{}
		if err := cached.Get(ctx, key, d); err != nil {
			return err
		}
		if d.Status.Replicas != 2 || d.Annotations["note"] == "" {
			return fmt.Errorf("not yet: status %+v, annotations %v", d.Status, d.Annotations)
		}
		managers := []string{}
		for _, e := range d.ManagedFields {
			managers = append(managers, e.Manager)
		}
		if !slices.Equal(managers, []string{sitechild.FieldOwner}) {
			return fmt.Errorf("cached managers %v, want the operator's alone", managers)
		}
		return nil
	})
	if res, err := applyChild(ctx, cached, k8s, site, "Deployment", &appsv1.Deployment{}, want(), key, extractDeployment); err != nil || res != applyUnchanged {
		t.Errorf("second apply through the cache: %v, %v; want Unchanged", res, err)
	}
}
