package staticsite

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// contentVerdict is the ContentAvailable condition and what it does to the site's progress.
type contentVerdict struct {
	status          metav1.ConditionStatus
	reason, message string
	// stall: Stalled=True and Ready=False with this reason.
	stall *problem
	// wait: no pod can serve yet, for a reason that may pass by itself: Reconciling=True and Ready=False with it.
	wait *problem
}

// contentVerdictOf is ContentAvailable for any source: a problem a step found (Stalled), a Git site's own
// verdict (gitcontent), or the source's True reason.
func contentVerdictOf(o *observation) contentVerdict {
	switch {
	case o.contentProblem != nil:
		return contentVerdict{status: metav1.ConditionFalse, reason: o.contentProblem.Reason, message: o.contentProblem.Message, stall: o.contentProblem}
	case o.git != nil:
		v := o.git.Verdict()
		return contentVerdict{status: v.Status, reason: v.Reason, message: v.Message, stall: v.Stall, wait: v.Wait}
	}
	return contentVerdict{status: metav1.ConditionTrue, reason: o.contentReason, message: o.contentMessage}
}
