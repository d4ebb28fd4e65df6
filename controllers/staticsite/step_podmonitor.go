package staticsite

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors,verbs=get;list;watch;create;patch;delete

// reconcilePodMonitor applies the PodMonitor of spec.monitoring, or deletes the one the site made. When the
// cluster has no PodMonitor CRD, PodMonitorApplied says so and nothing else is affected; installing the Prometheus
// Operator later is picked up without an edit (the CRD's watch wakes the site, optionalcrds.go; the pass also
// retries periodically).
func (r *Reconciler) reconcilePodMonitor(ctx context.Context, st *observation) error {
	site := st.site
	want := desired.PodMonitor(site)
	if want == nil {
		// Not in the manager's cache: look only when the last pass reported one.
		if meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionPodMonitorApplied) == nil {
			return nil
		}
		live := &metav1.PartialObjectMetadata{}
		live.SetGroupVersionKind(desired.PodMonitorGVK)
		return r.deleteOwned(ctx, r.directReader(), site, "PodMonitor", live, "spec.monitoring is unset")
	}
	res, _, err := r.applyUnstructured(ctx, site, want)
	cond := metav1.Condition{Type: v1alpha1.ConditionPodMonitorApplied}
	var notOwned *notOwnedError
	switch {
	case err == nil:
		if err := r.optional.ensure(desired.PodMonitorGVK); err != nil {
			return err
		}
		r.recordApply(site, "PodMonitor", res)
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonPodMonitorCreated
		cond.Message = fmt.Sprintf("PodMonitor %s scrapes the pods' %s port at /metrics", site.Name, v1alpha1.AdminPortName)
	case kindNotServed(err):
		if err := r.optional.forget(ctx, desired.PodMonitorGVK); err != nil {
			return err
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonPodMonitorCRDMissing
		cond.Message = "the cluster does not serve monitoring.coreos.com/v1 PodMonitors: install the Prometheus Operator's CRDs; the pods' /metrics on the admin port can still be scraped by pod discovery"
		st.requeue(st.tun.stalledRetry)
	case errors.As(err, &notOwned) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonPodMonitorRejected, err.Error()
		st.requeue(st.tun.stalledRetry)
	default:
		return fmt.Errorf("apply PodMonitor: %w", err)
	}
	st.podMonitor = &cond
	return nil
}
