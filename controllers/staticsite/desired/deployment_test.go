package desired

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// A single-attach claim must not surge a second pod during a rollout; every other source surges.
func TestRolloutStrategy(t *testing.T) {
	if s := rolloutStrategy(Content{SingleAttach: true}); *s.Type != appsv1.RecreateDeploymentStrategyType || s.RollingUpdate != nil {
		t.Errorf("single-attach claim: %+v", s)
	}
	s := rolloutStrategy(Content{})
	if *s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate.MaxSurge.IntValue() != 1 || s.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Errorf("default: %+v", s)
	}
	// The Deployment carries it.
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "web"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{PersistentVolumeClaim: &v1alpha1.PersistentVolumeClaimContent{ClaimName: "data"}}}}
	d := Deployment(site, "server:1", Content{Source: v1alpha1.ContentSourcePersistentVolumeClaim, SingleAttach: true}, resource.MustParse("64Mi"))
	if *d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("Deployment of a single-attach claim site: strategy %+v", d.Spec.Strategy)
	}
}
