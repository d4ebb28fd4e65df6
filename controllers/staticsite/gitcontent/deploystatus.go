package gitcontent

// What a Git site's status says about its deploys (docs/design/deploys.md); pure, called by package staticsite's
// deriveStatus: status.deploys, the DeployPinned condition, the Deploy column.

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// Deploys is status.deploys: the fetcher's history as read in this pass, at most spec.content.git.history, newest
// fetched first; when the fetcher could not be read, what the status said before (a history does not vanish
// because one read failed); nil for a site that is not a Git site.
func (g *State) Deploys(site *v1alpha1.StaticSite) []v1alpha1.Deploy {
	if g == nil || site.Spec.Content.Git == nil {
		return nil
	}
	if g.fetcher == nil {
		return site.Status.Deploys
	}
	n := HistoryOf(site.Spec.Content.Git)
	var out []v1alpha1.Deploy
	for _, d := range g.fetcher.Deploys {
		if len(out) == n && d.Commit != g.fetcher.Commit {
			continue // the published one is always listed: a pinned deploy past the newest n
		}
		out = append(out, v1alpha1.Deploy{Commit: d.Commit, Bundle: d.Bundle, Committed: timeOf(d.Committed),
			FirstServed: timeOf(d.FirstServed), LastServed: timeOf(d.LastServed)})
	}
	return out
}

// timeOf is t in the status's form (seconds, UTC); nil for zero.
func timeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &m
}

// PinCondition is the DeployPinned condition; nil (removed) when the site asks for no pin.
func (g *State) PinCondition() *metav1.Condition {
	if g == nil || !g.pin.asked {
		return nil
	}
	c := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionDeployPinned, Status: status, Reason: reason, Message: msg}
	}
	want := g.pin.want
	switch {
	case g.pin.invalid != "":
		return c(metav1.ConditionFalse, v1alpha1.ReasonPinInvalid, fmt.Sprintf("annotation %s=%q is not a full commit "+
			"hash (40 lower-case hex digits); nothing is pinned", v1alpha1.AnnotationPin, clip(g.pin.invalid)))
	case g.fetcher == nil:
		return c(metav1.ConditionUnknown, v1alpha1.ReasonPinNotDelivered, "the fetcher could not be read; the pin "+
			"of "+short(want)+" is sent once it can")
	case g.pin.refused:
		return c(metav1.ConditionFalse, v1alpha1.ReasonPinNotInHistory, fmt.Sprintf("commit %s is not in the "+
			"history of deploys (status.deploys: %s); production is unchanged: %s is served", short(want),
			historyText(g.fetcher), shortOrNone(g.fetcher.Commit)))
	case g.pin.undelivered != "" || g.fetcher.Pin != want:
		why := g.pin.undelivered
		if why == "" {
			why = "the fetcher publishes " + shortOrNone(g.fetcher.Commit)
		}
		return c(metav1.ConditionUnknown, v1alpha1.ReasonPinNotDelivered, "the pin of "+short(want)+
			" is not taken yet ("+why+"); it is sent again on every pass")
	}
	n, m := g.servedBy(want), len(g.pods)
	if g.podsRead && m > 0 && int(n) == m {
		return c(metav1.ConditionTrue, v1alpha1.ReasonPinServed, fmt.Sprintf("every ready pod (%d) serves the "+
			"pinned commit %s; the fetcher keeps fetching %s meanwhile", m, short(want), g.ref))
	}
	return c(metav1.ConditionFalse, v1alpha1.ReasonPinRollingOut, fmt.Sprintf("%d/%d ready pods serve the pinned "+
		"commit %s", n, m, short(want)))
}

// historyText lists the history's commits, short, newest first.
func historyText(rev *gitrevision.Revision) string {
	if len(rev.Deploys) == 0 {
		return "none"
	}
	s := ""
	for i, d := range rev.Deploys {
		if i > 0 {
			s += ", "
		}
		s += short(d.Commit)
	}
	return s
}

// clip bounds a user's annotation value in a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// deployColumn is status.content.revision.deploy: the commit published, short, marked when it is a pin.
func deployColumn(rev *gitrevision.Revision) string {
	if rev.Pin != "" && rev.Pin == rev.Commit {
		return short(rev.Commit) + " (pinned)"
	}
	return short(rev.Commit)
}
