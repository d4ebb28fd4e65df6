package benchmark

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// deriveTargetChange records the target StaticSite at the start of the run (the first pass that saw the Job) and
// sets TargetChanged by comparing it with what this pass saw. TargetChanged=True is sticky: the numbers already
// mix two configurations, even if the target went back. Part of deriveStatus, hence pure.
func deriveTargetChange(s *v1alpha1.BenchmarkStatus, o *observation, set func(t string, status metav1.ConditionStatus, reason, message string)) {
	if s.TargetAtStart == nil {
		if o.job == nil || o.site == nil {
			return // a URL target, no Job yet, or a StaticSite missing at the start: nothing to compare against
		}
		start := *o.site
		s.TargetAtStart = &start
	}
	if meta.IsStatusConditionTrue(s.Conditions, v1alpha1.BenchmarkTargetChanged) {
		return
	}
	if reason, message := targetChange(*s.TargetAtStart, o); reason != "" {
		set(v1alpha1.BenchmarkTargetChanged, metav1.ConditionTrue, reason,
			message+": the run measured more than one configuration of the target")
		return
	}
	set(v1alpha1.BenchmarkTargetChanged, metav1.ConditionFalse, v1alpha1.BenchmarkReasonTargetUnchanged,
		fmt.Sprintf("StaticSite %s is at generation %d with %d ready pod(s), as when the run started",
			s.TargetAtStart.StaticSite, s.TargetAtStart.Generation, s.TargetAtStart.ReadyReplicas))
}

// targetChange says how the target differs from what the run started against ("" when it does not, or when this
// pass did not look at it).
func targetChange(start v1alpha1.BenchmarkTargetState, o *observation) (reason, message string) {
	switch {
	case o.siteGone:
		return v1alpha1.BenchmarkReasonTargetDeleted, fmt.Sprintf("StaticSite %s was deleted", start.StaticSite)
	case o.site == nil:
		return "", ""
	case o.site.Generation != start.Generation:
		return v1alpha1.BenchmarkReasonTargetSpecChanged, fmt.Sprintf("StaticSite %s changed from generation %d (replicas %d) to %d (replicas %d)",
			start.StaticSite, start.Generation, start.Replicas, o.site.Generation, o.site.Replicas)
	case o.site.ReadyReplicas != start.ReadyReplicas:
		return v1alpha1.BenchmarkReasonTargetReadyPodsChanged, fmt.Sprintf("StaticSite %s went from %d to %d ready pod(s)",
			start.StaticSite, start.ReadyReplicas, o.site.ReadyReplicas)
	}
	return "", ""
}
