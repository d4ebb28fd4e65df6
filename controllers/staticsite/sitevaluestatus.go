package staticsite

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// siteValueState is what the site value steps saw (step_sitevalue.go); deriveStatus turns it into status.siteValue
// and SiteValueApplied (siteValueVerdictOf).
type siteValueState struct {
	rendered sitevalue.Rendered
	// notApplied: the ConfigMap could not be applied (a foreign object of its name, or the API server refused it).
	notApplied *problem
	// unannounced: pods the operator may not annotate (RBAC without pods/patch): they refresh at the kubelet's pace.
	unannounced []string
	// Over the ready pods that mount the site value: how many, how many serve the rendered revision, and what the
	// others say (pod names, or "pod: reason").
	readyPods, servedBy                       int32
	refused, pending, unreadable, notReported []string
}

// siteValueVerdict is SiteValueApplied, and what it means for Stalled (stall) and Reconciling (pending).
type siteValueVerdict struct {
	condition metav1.Condition
	stall     *problem
	pending   string
}

// siteValueVerdictOf decides SiteValueApplied from what the steps saw. It is pure. The first that applies wins: the
// ConfigMap not applied, a pod that refused the value, pods still catching up, pods that cannot be read or do not
// report a value, no ready pod, every ready pod served.
func siteValueVerdictOf(sv *siteValueState) siteValueVerdict {
	c := metav1.Condition{Type: v1alpha1.ConditionSiteValueApplied}
	var v siteValueVerdict
	rev := sv.rendered.Revision
	switch {
	case sv.notApplied != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, sv.notApplied.Reason, sv.notApplied.Message
	case len(sv.refused) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonSiteValueRefused
		c.Message = fmt.Sprintf("site value %s refused, the previous one keeps serving: %s", rev, strings.Join(sv.refused, "; "))
		v.stall = &problem{Reason: v1alpha1.ReasonSiteValueRefused, Message: c.Message}
	case len(sv.pending) > 0:
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonSiteValuePending
		c.Message = fmt.Sprintf("%d of %d ready pods serve site value %s; waiting for %s", sv.servedBy, sv.readyPods, rev, strings.Join(sv.pending, ", "))
		v.pending = c.Message
	case len(sv.unreadable) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonMetricsUnavailable, strings.Join(sv.unreadable, "; ")
	case len(sv.notReported) > 0:
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonSiteValueNotReported
		c.Message = fmt.Sprintf("the server of %s does not report hyperstatic_site_value_info (an image older than the site value?)", strings.Join(sv.notReported, ", "))
	case sv.readyPods == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonNoReadyPods, "no ready pod mounts site value "+rev+" yet"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonSiteValueServed
		c.Message = fmt.Sprintf("all %d ready pods serve site value %s", sv.readyPods, rev)
	}
	if len(sv.unannounced) > 0 && c.Status != metav1.ConditionTrue {
		c.Message += " (pods not annotated, they refresh at the kubelet's pace: " + strings.Join(sv.unannounced, "; ") + ")"
	}
	v.condition = c
	return v
}

// siteValueStatus is status.siteValue.
func siteValueStatus(sv *siteValueState) *v1alpha1.SiteValueStatus {
	return &v1alpha1.SiteValueStatus{Revision: sv.rendered.Revision, ServedBy: sv.servedBy, ReadyPods: sv.readyPods}
}
