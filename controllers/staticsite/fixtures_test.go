// Fixtures the envtest tests share: sites created and changed as a user would, and the Deployment controller's
// part played by hand (envtest runs no controllers). The suite itself (TestMain, the manager) is in suite_test.go.

package staticsite

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func createSite(t *testing.T, ns, name string, spec v1alpha1.StaticSiteSpec) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	testenv.Must(t, k8s.Create(context.Background(), site))
	// Gone at the end of the test: a site left Stalled is retried every second (StalledRetry) for the rest of the
	// process, and under -count=20 those retries pile up until they keep the one worker busy and the later
	// iterations' low-priority passes (a pool's report, a pool pod ready) wait past their 20 s.
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), site.DeepCopy()) })
	return site
}

// updateSite changes a site's spec as a user would, retrying when the controller's status write came first.
func updateSite(t *testing.T, site *v1alpha1.StaticSite, mutate func(*v1alpha1.StaticSite)) {
	t.Helper()
	testenv.Eventually(t, "update site", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(site), site); err != nil {
			return err
		}
		mutate(site)
		return k8s.Update(context.Background(), site)
	})
}

// scaleTo writes the scale subresource, retrying on conflicts.
func scaleTo(t *testing.T, site *v1alpha1.StaticSite, n int32) {
	t.Helper()
	testenv.Eventually(t, "scale", func() error {
		scale := &autoscalingv1.Scale{}
		if err := k8s.SubResource("scale").Get(context.Background(), site, scale); err != nil {
			return err
		}
		scale.Spec.Replicas = n
		return k8s.SubResource("scale").Update(context.Background(), site, client.WithSubResourceBody(scale))
	})
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, "Deployment "+name, func() error { return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d) })
	return d
}

// completeRollout plays the Deployment controller and kubelet: every replica updated, ready and available.
func completeRollout(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, "Deployment status update", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
		return k8s.Status().Update(ctx, d)
	})
}

// rollOutAndWaitReady plays a completed rollout of the site's Deployment and waits for Ready=True Available.
func rollOutAndWaitReady(t *testing.T, ns, name string) *v1alpha1.StaticSite {
	t.Helper()
	completeRollout(t, getDeployment(t, ns, name))
	return waitSite(t, ns, name, "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
}
