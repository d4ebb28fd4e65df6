package gitcontent

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// What a Git site's status says, from what the Git steps saw (State); pure, called by package staticsite's
// deriveStatus. The rules are the package's contract (doc.go).

// Verdict is the ContentAvailable condition of a Git site and what it does to the site's progress.
type Verdict struct {
	Status          metav1.ConditionStatus
	Reason, Message string
	// Stall: Stalled=True and Ready=False with this reason.
	Stall *reconcile.Problem
	// Wait: no pod can serve yet, for a reason that may pass by itself: Reconciling=True and Ready=False with it.
	Wait *reconcile.Problem
}

// Verdict: a missing Secret first (the fetcher cannot do its job as specified), then credentials the policy
// refuses (likewise), then a fetcher that is down,
// then the fetcher's last failure, then the published commit; nothing published and no failure: pending.
func (g *State) Verdict() Verdict {
	served, servedCommit := g.anyServed()
	keeps := "no commit is served yet"
	if served {
		keeps = fmt.Sprintf("commit %s keeps being served (%s)", short(servedCommit), g.servedText(servedCommit))
	}
	failed := func(reason, message string, passes bool) Verdict {
		p := &reconcile.Problem{Reason: reason, Message: message + "; " + keeps}
		v := Verdict{Status: metav1.ConditionFalse, Reason: p.Reason, Message: p.Message}
		switch {
		case served: // the last good commit serves: Ready is the pods' business
		case passes:
			v.Wait = p
		default:
			v.Stall = p
		}
		return v
	}
	switch {
	case len(g.missingSecrets) > 0:
		return failed(v1alpha1.ReasonGitSecretNotFound, fmt.Sprintf("Secret %s not found in the site's namespace: "+
			"the fetcher runs without it", strings.Join(g.missingSecrets, ", ")), false)
	case g.unlabelledCredentials != "":
		return failed(v1alpha1.ReasonGitSecretNotLabelled, fmt.Sprintf("Secret %q (spec.content.git.secretRef) is not labelled %s: \"true\", "+
			"which the tenancy policy requires of Git credentials: the fetcher runs without it", g.unlabelledCredentials, v1alpha1.LabelGitCredentials), false)
	case g.fetcherDown != "":
		return failed(v1alpha1.ReasonGitFetcherUnavailable, g.fetcherDown, true)
	case g.fetcher != nil && g.fetcher.Failure != nil:
		f := g.fetcher.Failure
		return failed(f.Reason, fmt.Sprintf("the last fetch of %s failed: %s", g.ref, f.Message), f.Reason == v1alpha1.ReasonGitUnreachable)
	case g.published():
		rev := g.fetcher
		msg := "commit " + short(rev.Commit)
		if rev.Ref != "" {
			msg += " of " + rev.Ref
		}
		if !rev.CommitTime.IsZero() {
			msg += " (committed " + rev.CommitTime.UTC().Format(time.RFC3339) + ")"
		}
		return Verdict{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonGitRevisionFetched,
			Message: msg + " is published; " + g.servedText(rev.Commit)}
	}
	why := g.fetcherWaiting
	if why == "" {
		why = fmt.Sprintf("the fetcher's first fetch of %s is under way", g.ref)
	}
	v := Verdict{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonGitFetchPending, Message: why + "; " + keeps}
	if !served {
		v.Wait = &reconcile.Problem{Reason: v.Reason, Message: v.Message}
	}
	return v
}

// anyServed says whether a commit is there for the pods: the fetcher published one, or a ready pod serves one
// (a fetcher restarted on an empty volume has not published again yet). The commit is the fetcher's, else the one
// most ready pods serve.
func (g *State) anyServed() (bool, string) {
	if g.published() {
		return true, g.fetcher.Commit
	}
	c := g.mostServed()
	return c != "", c
}

// mostServed is the commit most ready pods serve (the first in pod name order among equals), "" when none.
func (g *State) mostServed() string {
	counts := map[string]int{}
	best := ""
	for _, p := range g.pods {
		if p.rev == nil || !p.rev.Published() {
			continue
		}
		counts[p.rev.Commit]++
		if best == "" || counts[p.rev.Commit] > counts[best] {
			best = p.rev.Commit
		}
	}
	return best
}

// servedText is "served by N of M ready pods" (with the first pod that does not, and why, when one does not).
func (g *State) servedText(commit string) string {
	if !g.podsRead {
		return "the pods were not read"
	}
	n, m := g.servedBy(commit), len(g.pods)
	s := fmt.Sprintf("served by %d of %d ready pods", n, m)
	for _, p := range g.pods {
		switch {
		case p.rev == nil:
			return s + fmt.Sprintf(" (pod %s: %s)", p.name, p.err)
		case p.rev.Commit != commit && p.rev.Failure != nil:
			return s + fmt.Sprintf(" (pod %s serves %s: %s)", p.name, shortOrNone(p.rev.Commit), p.rev.Failure.Message)
		}
	}
	return s
}

// ContentRevision is status.contentRevision of a Git site: the fetcher's commit in Flux's form; while it cannot
// be read, what most ready pods serve; else last, what the last pass said.
func (g *State) ContentRevision(site *v1alpha1.StaticSite) string {
	if g.published() {
		return RevisionString(g.fetcher)
	}
	if c := g.mostServed(); c != "" {
		for _, p := range g.pods {
			if p.rev != nil && p.rev.Commit == c {
				return RevisionString(p.rev)
			}
		}
	}
	if site.Status.ContentSource == v1alpha1.ContentSourceGit {
		return site.Status.ContentRevision
	}
	return ""
}

// ServedRevision is status.content.revision: the fetcher's commit and how many ready pods serve it; nil while
// nothing is published or the pullers were not read.
func (g *State) ServedRevision() *v1alpha1.ContentRevision {
	if g == nil || !g.published() || !g.podsRead {
		return nil
	}
	rev := g.fetcher
	n, m := g.servedBy(rev.Commit), int32(len(g.pods))
	out := &v1alpha1.ContentRevision{Commit: rev.Commit, ShortCommit: short(rev.Commit), Ref: rev.Ref,
		ServedBy: n, ReadyPods: m, Served: fmt.Sprintf("%d/%d", n, m), Deploy: deployColumn(rev)}
	if !rev.CommitTime.IsZero() {
		t := metav1.NewTime(rev.CommitTime.UTC().Truncate(time.Second))
		out.CommitTime = &t
	}
	return out
}

// short is a commit's first 12 hex digits (status.content.revision.shortCommit, messages).
func short(commit string) string { return commit[:min(12, len(commit))] }

func shortOrNone(commit string) string {
	if commit == "" {
		return "nothing"
	}
	return short(commit)
}

// AllServe says every ready pod (at least one) serves commit: the moment of GitRevisionServed.
func AllServe(r *v1alpha1.ContentRevision) bool {
	return r != nil && r.ReadyPods > 0 && r.ServedBy == r.ReadyPods
}

// RevisionString is status.contentRevision for a published revision, in Flux's form: <branch or tag>@sha1:<commit>,
// or sha1:<commit> for a pinned commit.
func RevisionString(rev *gitrevision.Revision) string {
	name := strings.TrimPrefix(strings.TrimPrefix(rev.Ref, "refs/heads/"), "refs/tags/")
	if name == "" {
		return "sha1:" + rev.Commit
	}
	return name + "@sha1:" + rev.Commit
}
