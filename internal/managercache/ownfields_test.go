package managercache

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const ourManager = "hyperstatic-operator"

// entry is a managed fields entry of manager over fields (FieldsV1 JSON).
func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: subresource}
}

// TestKeepOwnManagedFieldsKeepsWhatTheApplyGuardReads trims a Deployment as the Deployment controller and a user
// leave it: only the operator's entries stay, and what appsv1ac.ExtractDeployment (the apply guards) reads from the
// trimmed object is what it read from the whole one.
func TestKeepOwnManagedFieldsKeepsWhatTheApplyGuardReads(t *testing.T) {
	ours := entry(ourManager, metav1.ManagedFieldsOperationApply, "",
		`{"f:spec":{"f:replicas":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}}}}}`)
	ourStatus := entry(ourManager, metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:conditions":{}}}`)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{
			entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:replicas":{}}}`),
			ours,
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:annotations":{"f:note":{}}}}`),
			ourStatus,
		}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "site"}}}},
	}
	before, err := appsv1ac.ExtractDeployment(d, ourManager)
	if err != nil {
		t.Fatal(err)
	}
	out, err := KeepOwnManagedFields(ourManager, "another-of-ours")(d)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*appsv1.Deployment).ManagedFields
	if len(got) != 2 || got[0].Manager != ourManager || got[0].Subresource != "" || got[1].Subresource != "status" {
		t.Fatalf("kept %+v, want the operator's two entries in their order", got)
	}
	after, err := appsv1ac.ExtractDeployment(out.(*appsv1.Deployment), ourManager)
	if err != nil {
		t.Fatal(err)
	}
	if *after.Spec.Replicas != 2 || after.Spec.Template.Labels["app"] != "site" || *before.Spec.Replicas != *after.Spec.Replicas {
		t.Errorf("extracted after the transform %+v, before %+v", after.Spec, before.Spec)
	}
}

func TestKeepOwnManagedFieldsWithNoneOfOurs(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "", `{"f:spec":{}}`),
		entry("kwok", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{}}`),
	}}}
	out, err := KeepOwnManagedFields(ourManager)(p)
	if err != nil {
		t.Fatal(err)
	}
	// nil: an Update of the main resource that carries no managed fields leaves the live ones to the API server.
	if mf := out.(*corev1.Pod).ManagedFields; mf != nil {
		t.Errorf("kept %+v, want nil", mf)
	}
}

func TestKeepOwnManagedFieldsLeavesOthersAlone(t *testing.T) {
	only := []metav1.ManagedFieldsEntry{entry(ourManager, metav1.ManagedFieldsOperationApply, "", `{"f:data":{}}`)}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: only}}
	out, err := KeepOwnManagedFields(ourManager)(cm)
	if err != nil || &out.(*corev1.ConfigMap).ManagedFields[0] != &only[0] {
		t.Errorf("an object with only our entries: %v, %+v (want it unchanged, not copied)", err, out)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/name", Obj: cm}
	if out, err := KeepOwnManagedFields(ourManager)(tomb); err != nil || out != any(tomb) {
		t.Errorf("a tombstone: %v, %+v (want it as it was)", err, out)
	}
}
