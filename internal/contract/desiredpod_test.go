package contract

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// desiredPodSpec is the pod the operator asks for servedSpec with image content and 64Mi, decoded from the apply
// configuration as the API server would store it: the container tests read its arguments, variables and fields.
func desiredPodSpec(t *testing.T) corev1.PodSpec {
	t.Helper()
	content := desired.ImageContent(v1alpha1.ContentSourceImage, "example/contract:v1", "")
	d := &appsv1.Deployment{}
	b, err := json.Marshal(desired.Deployment(site(servedSpec), "hyperstatic/server:test", content, resource.MustParse("64Mi")))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec
}
