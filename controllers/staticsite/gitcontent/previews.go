package gitcontent

import (
	"slices"
	"strconv"
	"strings"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// Previews of a Git site (spec.previews; docs/design/deploys.md, decision 4): the operator passes the settings to
// the fetcher, which follows the refs and publishes each preview's checked bundle in its /revision, and reads the
// previews back (internal/gitrevision checks every field) into status.previews (PreviewStatuses, pure).
//
// The site's own pods serve them: the server runs in the pool server's many-sites mode (`--sites /site`, chosen by
// Host) and the puller lays out what that mode reads (`--sites-dir /site`, internal/contentagent/previewlayout.go).
// What a pod must not decide is a flag of the pod template, written here: production's hosts (SitesHosts), the
// site's name and the previews' domain, from which the puller builds each preview's one host. Production's shard is
// read first and the server refuses a host already taken, so no preview can take production's hosts.

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

// sitesPullArgs are the puller's flags of a site with previews (none without): lay out the server's --sites
// directory at /site, production answering SitesHosts, each preview <name>--<site>.<domain>, every entry with the
// site value the server would have read (the same rules for production and the previews) and production's limits.
// No --server-admin: in --sites mode the server reloads one entry per .ready signal, not the whole site, and
// counts no reload the puller could wait for.
func sitesPullArgs(site *v1alpha1.StaticSite, valueFile string) []string {
	p := site.Spec.Previews
	if p == nil {
		return nil
	}
	g := site.Spec.Content.Git
	maxSize := maxSizeOf(g)
	args := []string{"--sites-dir", v1alpha1.SiteRoot, "--site-name", site.Name, "--previews-domain", p.Domain,
		"--site-value", valueFile, "--entry-max-bytes", strconv.FormatInt(maxSize.Value(), 10)}
	if g.MaxEntries != nil {
		args = append(args, "--entry-max-files", strconv.Itoa(int(*g.MaxEntries)))
	}
	for _, h := range SitesHosts(site) {
		args = append(args, "--host", h)
	}
	return args
}

// SitesHosts are the hosts production answers in --sites mode, where a request names its site by Host: the
// site's hostnames (lower case, no trailing dot; the API refuses wildcards beside spec.previews, which the exact
// lookup would never match) and its Service's names, short and qualified (the cluster domain is cluster.local,
// as in status.url). Any other host, an address included, gets 404: a site with previews is reached by name.
// A change of spec.hostnames changes the puller's flags and so rolls the pods.
func SitesHosts(site *v1alpha1.StaticSite) []string {
	var hosts []string
	add := func(h string) {
		h = strings.TrimSuffix(strings.ToLower(h), ".")
		if h != "" && !strings.HasPrefix(h, "*") && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	for _, h := range site.Spec.Hostnames {
		add(string(h))
	}
	svc := site.Name + "." + site.Namespace
	for _, h := range []string{site.Name, svc, svc + ".svc", svc + ".svc.cluster.local"} {
		add(h)
	}
	return hosts
}

// previewsSiteFactor × maxSize is what the previews add to a server pod's site emptyDir: each preview's tree and
// the one replacing it during an update.
func previewsSiteFactor(site *v1alpha1.StaticSite) int64 { return previewsWorkFactor(site) }

// PreviewHost is a preview's hostname: <name>--<site>.<domain>.
func PreviewHost(site *v1alpha1.StaticSite, name string) string {
	return name + "--" + site.Name + "." + site.Spec.Previews.Domain
}

// previewError is a preview failure as status.previews[].error says it: its reason and message.
func previewError(reason, message string) string {
	return podtext.Clean(reason+": "+message, podtext.MaxStatusText)
}
