package benchmark

import (
	"context"
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// resolveTarget learns the run's plan. Once the script ConfigMap exists the plan is read back from it: the run is
// described by one object that never changes, and the target is resolved only once. Before that, the target is
// resolved now and the script's files are rendered for ensureScript; a target that is not there yet is a wait
// (o.targetWait), not an error.
//
// Observes: the script ConfigMap; before it exists, the StaticSite's Service and serving pods, or target.pod (or the
// URL).
func (r *Reconciler) resolveTarget(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	script := &corev1.ConfigMap{}
	err := r.getFresh(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ScriptConfigMapName(b)}, script)
	switch {
	case err == nil:
		return readScript(b, script, o)
	case !apierrors.IsNotFound(err):
		return err
	}

	t, err := r.findTarget(ctx, b)
	if wait := (*problem)(nil); errors.As(err, &wait) {
		o.targetWait = wait
		return nil
	}
	if err != nil {
		return err
	}
	// The API server checked the spec against the CRD schema; what only planning finds wrong fails the run here,
	// before any load is sent.
	if _, err := thresholdsOf(b); err != nil {
		o.failure = failWith(v1alpha1.BenchmarkReasonInvalidSpec, "%v", err)
		return nil
	}
	plan, err := k6script.NewPlan(b.Spec, t.baseURL)
	if err != nil {
		o.failure = failWith(v1alpha1.BenchmarkReasonInvalidSpec, "%v", err)
		return nil
	}
	if t.pod != nil {
		plan.TargetPod, plan.TargetPodLabels, plan.ServerCPULimit = t.pod.Name, t.pod.Labels, serverCPULimit(t.pod)
	}
	files, err := k6script.Files(plan, t.paths)
	if err != nil {
		o.failure = failWith(v1alpha1.BenchmarkReasonInvalidSpec, "%v", err)
		return nil
	}
	o.plan, o.files = &plan, files
	return nil
}

// readScript takes the plan from an existing script ConfigMap, which must be this Benchmark's.
func readScript(b *v1alpha1.Benchmark, script *corev1.ConfigMap, o *observation) error {
	if !metav1.IsControlledBy(script, b) {
		o.failure = notOwned("ConfigMap", script.Name)
		return nil
	}
	var plan k6script.Plan
	if err := json.Unmarshal([]byte(script.Data[k6script.PlanFile]), &plan); err != nil {
		o.failure = failWith(v1alpha1.BenchmarkReasonInvalidScript, "ConfigMap %s: plan: %v", script.Name, err)
		return nil
	}
	o.script, o.plan = script, &plan
	return nil
}

// notOwned is the failure of a Benchmark whose child's name is taken by an object it does not control.
func notOwned(kind, name string) *problem {
	return failWith(v1alpha1.BenchmarkReasonChildNotOwned,
		"%s %s exists and is not controlled by this Benchmark; it is left untouched (delete it or rename the Benchmark)", kind, name)
}
