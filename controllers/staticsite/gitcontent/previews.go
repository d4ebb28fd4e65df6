package gitcontent

import (
	"strconv"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// Previews of a Git site (spec.previews; docs/design/deploys.md, decision 4): the operator passes the settings to
// the fetcher, which follows the refs and publishes each preview's checked bundle in its /revision, and reads the
// previews back (internal/gitrevision checks every field) into status.previews (PreviewStatuses, pure). Not wired
// yet: the server pods do not serve them (the server's --sites mode and the puller's layout exist in
// content-agent; the operator does not run them), nor the tenancy policy's cap and the hostname policy's
// wildcard. So ready is false for every preview until the pods report serving it.

// PreviewsMaxOf is spec.previews.max, default 10, at most 50.
func PreviewsMaxOf(p *v1alpha1.PreviewsSpec) int {
	if p.Max != nil && *p.Max > 0 {
		return int(min(*p.Max, v1alpha1.MaxPreviewsMax))
	}
	return v1alpha1.DefaultPreviewsMax
}

// previewArgs are the fetcher's --previews-* flags (none without spec.previews).
func previewArgs(site *v1alpha1.StaticSite) []string {
	p := site.Spec.Previews
	if p == nil {
		return nil
	}
	var args []string
	if p.PullRequests {
		args = append(args, "--previews-pull-requests")
	}
	for _, b := range p.Branches {
		args = append(args, "--previews-branch", b)
	}
	if p.TTL != nil {
		args = append(args, "--previews-ttl", p.TTL.Duration.String())
	}
	return append(args, "--previews-max", strconv.Itoa(PreviewsMaxOf(p)))
}

// previewsWorkFactor × maxSize is what the previews add to the fetcher's emptyDir: a tree and a bundle each.
func previewsWorkFactor(site *v1alpha1.StaticSite) int64 {
	if site.Spec.Previews == nil {
		return 0
	}
	return 2 * int64(PreviewsMaxOf(site.Spec.Previews))
}

// PreviewHost is a preview's hostname: <name>--<site>.<domain>.
func PreviewHost(site *v1alpha1.StaticSite, name string) string {
	return name + "--" + site.Name + "." + site.Spec.Previews.Domain
}

// previewError is a preview failure as status.previews[].error says it: its reason and message.
func previewError(reason, message string) string {
	return podtext.Clean(reason+": "+message, podtext.MaxStatusText)
}
