package gitcontent

// What a Git site's status says about its previews (docs/design/deploys.md, decision 4); pure, called by package
// staticsite's deriveStatus: status.previews, and the events of their changes (PreviewEvents).

import (
	"slices"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// Previews is status.previews: the fetcher's previews as read in this pass (internal/gitrevision checked every
// field), each with its URL (built here from the checked name, the site's name and spec.previews.domain, never
// taken from a pod), ready when at least one pod was read and every ready pod's puller serves its commit, and its
// error; when the fetcher could not be read, what the status said before; nil without spec.previews.
func (g *State) Previews(site *v1alpha1.StaticSite) []v1alpha1.PreviewStatus {
	if g == nil || site.Spec.Content.Git == nil || site.Spec.Previews == nil {
		return nil
	}
	if g.fetcher == nil {
		return site.Status.Previews
	}
	var out []v1alpha1.PreviewStatus
	for _, p := range g.fetcher.Previews {
		if len(out) == PreviewsMaxOf(site.Spec.Previews) {
			break
		}
		ps := v1alpha1.PreviewStatus{Name: p.Name, URL: "http://" + PreviewHost(site, p.Name) + "/", Ref: p.Ref,
			Commit: p.Commit, Since: timeOf(p.Since), Ready: p.Commit != "" && g.podsServePreview(p.Name, p.Commit)}
		if p.Failure != nil {
			ps.Error = previewError(p.Failure.Reason, p.Failure.Message)
		}
		out = append(out, ps)
	}
	return out
}

// podsServePreview: at least one ready pod, and every ready pod's puller serves the preview at commit.
func (g *State) podsServePreview(name, commit string) bool {
	if len(g.pods) == 0 {
		return false
	}
	for _, pod := range g.pods {
		if pod.rev == nil || !slices.ContainsFunc(pod.rev.Previews, func(p gitrevision.Preview) bool {
			return p.Name == name && p.Commit == commit
		}) {
			return false
		}
	}
	return true
}

// PreviewEvent is one event of a change of status.previews.
type PreviewEvent struct {
	Warning         bool
	Reason, Message string
}

// PreviewEvents are the events of the change from before to after (status.previews): PreviewPublished for a
// preview with a new commit, PreviewFailed (Warning) for a new error, PreviewRemoved for a preview gone.
func PreviewEvents(before, after []v1alpha1.PreviewStatus) []PreviewEvent {
	var out []PreviewEvent
	old := map[string]v1alpha1.PreviewStatus{}
	for _, p := range before {
		old[p.Name] = p
	}
	for _, p := range after {
		o, had := old[p.Name]
		delete(old, p.Name)
		if p.Commit != "" && (!had || o.Commit != p.Commit) {
			out = append(out, PreviewEvent{Reason: v1alpha1.EventPreviewPublished,
				Message: "preview " + p.Name + " (" + p.Ref + ") publishes " + short(p.Commit) + " at " + p.URL})
		}
		if p.Error != "" && (!had || o.Error != p.Error) {
			out = append(out, PreviewEvent{Warning: true, Reason: v1alpha1.EventPreviewFailed,
				Message: "preview " + p.Name + " (" + p.Ref + "): " + p.Error})
		}
	}
	for _, p := range before {
		if _, gone := old[p.Name]; gone {
			out = append(out, PreviewEvent{Reason: v1alpha1.EventPreviewRemoved,
				Message: "preview " + p.Name + " (" + p.Ref + ") removed: its ref went, its request closed, or its ttl passed"})
		}
	}
	return out
}
