package autoscaling

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The suite runs against a real kube-apiserver (envtest). There is no kubelet and no server: the tests play both
// (fakeKubelet, loadModel). Two ways to run the autoscaler, for two kinds of assertion:
//
//   - stepper (stepper_test.go): the test calls Reconcile itself, one pass at a time, in fake time only the test
//     moves. Everything about *when* (latency, stabilization windows, no overshoot) is asserted there, exactly.
//   - a real manager (controller_test.go): watches, RequeueAfter, the cache, the event broadcaster. Only outcomes
//     that no timing can change are asserted there.
var env *testenv.Env

func TestMain(m *testing.M) {
	logs := io.Discard // AUTOSCALER_TEST_DEBUG=1 shows the controller's logs
	if os.Getenv("AUTOSCALER_TEST_DEBUG") != "" {
		logs = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logs)))
	testenv.Main(m, &env, nil) // each test runs its autoscaler itself, or in a manager of its own
}

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func newSite(ns, name string, replicas int32, as *v1alpha1.AutoscalingSpec) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.StaticSiteSpec{
			Content:     v1alpha1.ContentSource{Image: "example.test/site:1"},
			Replicas:    ptr.To(replicas),
			CPU:         ptr.To(resource.MustParse("250m")),
			Autoscaling: as,
		},
	}
}

// createSite creates the site and deletes it when the test ends, so no later test's autoscaler (a manager's
// watches every namespace) finds it. envtest has no namespace controller: namespaces and pods stay.
func createSite(t *testing.T, site *v1alpha1.StaticSite) {
	t.Helper()
	if err := env.Client.Create(context.Background(), site); err != nil {
		t.Fatalf("create site %s: %v", site.Name, err)
	}
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), site); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete site %s: %v", site.Name, err)
		}
	})
}

func getSite(t *testing.T, ns, name string) *v1alpha1.StaticSite {
	t.Helper()
	s := &v1alpha1.StaticSite{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("get site: %v", err)
	}
	return s
}

func replicasOf(s *v1alpha1.StaticSite) int32 {
	if s.Spec.Replicas == nil {
		return -1
	}
	return *s.Spec.Replicas
}

// conditionError says how the site's condition differs from status/reason (reason "" accepts any), or "".
func conditionError(s *v1alpha1.StaticSite, condType string, status metav1.ConditionStatus, reason string) string {
	c := meta.FindStatusCondition(s.Status.Conditions, condType)
	if c == nil {
		return fmt.Sprintf("condition %s missing (conditions %+v)", condType, s.Status.Conditions)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Sprintf("condition %s = %s/%s (%s), want %s/%s", condType, c.Status, c.Reason, c.Message, status, reason)
	}
	return ""
}

func assertCondition(t *testing.T, s *v1alpha1.StaticSite, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	if msg := conditionError(s, condType, status, reason); msg != "" {
		t.Fatal(msg)
	}
}

func statusString(a *v1alpha1.AutoscalingStatus) string {
	if a == nil {
		return "<nil>"
	}
	return "rps " + itoa64(a.CurrentRPS) + " avg " + itoa64(a.CurrentAverageRPS) + " measured " + itoa(a.MeasuredPods) +
		" current " + itoa(a.CurrentReplicas) + " desired " + itoa(a.DesiredReplicas) + " target " + itoa64(a.TargetRPSPerPod) +
		" (" + string(a.TargetSource) + ": " + a.TargetMessage + ")"
}

func itoa(n int32) string   { return itoa64(int64(n)) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// perPod100 is the target of the sites with targetRPSPerPod 100, as status.autoscaling reports it.
var perPod100 = perPodTarget{rps: 100, source: v1alpha1.TargetFromTargetRPSPerPod, message: "targetRPSPerPod 100"}
