package autoscaling

import (
	"fmt"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// EventReasonTargetChanged (Normal): the per-pod target or its source changed, e.g. when a capacity measurement
// arrived or stopped being current. It lives here rather than beside the API's event reasons so the capacity work
// (issue 29) adds no API; docs/autoscaling.md lists it with the others.
const EventReasonTargetChanged = "TargetChanged"

// announcedTarget is the per-pod target, as status.autoscaling shows it, that the autoscaler last wrote.
type announcedTarget struct {
	rps    int64
	source v1alpha1.AutoscalingTargetSource
}

// announcedFrom is the target a status already shows (what an earlier process wrote), or nil when it shows none.
func announcedFrom(a *v1alpha1.AutoscalingStatus) *announcedTarget {
	if a == nil || a.TargetRPSPerPod <= 0 {
		return nil
	}
	return &announcedTarget{rps: a.TargetRPSPerPod, source: a.TargetSource}
}

// targetChangeMessage is the message of a TargetChanged event when next's target differs from prev in value or
// source, else "". There is none for the first target of a site (prev nil: status shows it), for a pass that
// resolved no target (an invalid spec), or when only the source's name appears (prev from an operator that did not
// write targetSource, with the same value).
func targetChangeMessage(prev *announcedTarget, next v1alpha1.AutoscalingStatus) string {
	if prev == nil || next.TargetRPSPerPod <= 0 {
		return ""
	}
	sourceChanged := prev.source != "" && prev.source != next.TargetSource
	if prev.rps == next.TargetRPSPerPod && !sourceChanged {
		return ""
	}
	was := fmt.Sprintf("%d", prev.rps)
	if prev.source != "" {
		was += fmt.Sprintf(" (%s)", prev.source)
	}
	return fmt.Sprintf("target %d req/s per pod (%s) was %s: %s", next.TargetRPSPerPod, next.TargetSource, was,
		next.TargetMessage)
}
