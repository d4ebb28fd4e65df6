// Package poolplacement decides, purely, whether a StaticSite may run in a StaticSitePool and what its entry in
// the pool's index is (docs/design/pools.md). The pool controller (which writes the index) and the site controller
// (which stops the site's own pods and reports where it runs) both call it, so they never disagree.
//
// A pool site keeps its Service, hostnames, route, rules and Git or ConfigMap content. It cannot have what would
// need a pod of its own or would put one tenant's material into pods every tenant shares: content from an image,
// an image volume or a PersistentVolumeClaim (a pool pod cannot mount another namespace's volumes or run a
// tenant's image), in-server TLS (every tenant's private key in shared pods: TLS ends at the gateway in front),
// server extraArgs and podTemplate (process settings of shared pods), capacity measurement and its own autoscaling
// (the pool scales as a whole), its own NetworkPolicy (the pool's pods are shared: a per-site servingFrom cannot be
// enforced on them), a Git repository with credentials (docs/design/pools.md, "Credentials").
package poolplacement

import (
	"fmt"
	"slices"
	"strings"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// Refusal reasons (condition reasons on the site; the pool counts them in status.refusedSites).
const (
	ReasonPoolNotFound         = "PoolNotFound"
	ReasonNamespaceNotAdmitted = "NamespaceNotAdmitted"
	ReasonFeatureNotPooled     = "FeatureNotPooled"
	ReasonGitCredentials       = "GitCredentialsNotPooled"
)

// Refusal says why a site cannot run in a pool, naming the field.
type Refusal struct {
	Reason  string
	Field   string
	Message string
}

func (r *Refusal) Error() string { return r.Field + ": " + r.Message }

// Wants is the pool whose index a site asks to be in, "" for a dedicated site: spec.placement.pool for mode Pool,
// and for mode Auto whether the site runs in the pool or on its own pods — a promoted site stays in its pool's
// index, so the pool keeps its tree and the site's demotion has no cold start (and it must be a site the pool
// admits, Check, to be placed automatically at all).
func Wants(site *v1alpha1.StaticSite) string {
	if p := site.Spec.Placement; p != nil && (p.Mode == v1alpha1.PlacementPool || p.Mode == v1alpha1.PlacementAuto) {
		return p.Pool
	}
	return ""
}

// Auto reports whether site's placement is automatic (spec.placement.mode Auto; internal/autoplacement decides).
func Auto(site *v1alpha1.StaticSite) bool {
	p := site.Spec.Placement
	return p != nil && p.Mode == v1alpha1.PlacementAuto && p.Pool != ""
}

// Admits reports whether pool admits sites of namespace ns.
func Admits(pool *v1alpha1.StaticSitePool, ns string) bool {
	return slices.Contains(pool.Spec.Namespaces, "*") || slices.Contains(pool.Spec.Namespaces, ns)
}

// Check returns nil when site may run in pool (nil pool: the pool it names does not exist).
func Check(pool *v1alpha1.StaticSitePool, site *v1alpha1.StaticSite) *Refusal {
	name := Wants(site)
	if pool == nil || pool.Name != name {
		return &Refusal{ReasonPoolNotFound, "spec.placement.pool", fmt.Sprintf("StaticSitePool %q does not exist", name)}
	}
	if !Admits(pool, site.Namespace) {
		return &Refusal{ReasonNamespaceNotAdmitted, "spec.placement.pool",
			fmt.Sprintf("StaticSitePool %q does not admit namespace %q (its spec.namespaces)", name, site.Namespace)}
	}
	s := site.Spec
	c := s.Content
	not := func(field, why string) *Refusal {
		return &Refusal{ReasonFeatureNotPooled, field, "a pool site cannot have it: " + why}
	}
	switch {
	case c.Git == nil && len(c.ConfigMaps) == 0:
		return not("spec.content", "only Git and ConfigMap content reach a pool (a pool pod cannot run a tenant's image or mount its volumes)")
	case c.Git != nil && c.Git.SecretRef != nil:
		return &Refusal{ReasonGitCredentials, "spec.content.git.secretRef",
			"a pool does not hold tenants' Git credentials (pool pods serve the internet); keep this site Dedicated"}
	case s.TLS != nil:
		return not("spec.tls", "in-server TLS would put the tenant's private key in pods every tenant shares; terminate TLS at the gateway (spec.route)")
	case len(s.Server.ExtraArgs) > 0:
		return not("spec.server.extraArgs", "server flags are process settings of pods the pool's sites share")
	case s.Server.Image != "":
		return not("spec.server.image", "the pool runs one server build")
	case s.Capacity != nil:
		return not("spec.capacity", "capacity is measured per pool, not per site")
	case s.Autoscaling != nil:
		return not("spec.autoscaling", "the pool scales as a whole")
	case s.NetworkPolicy != nil:
		return not("spec.networkPolicy", "its traffic reaches the pool's pods, which every pool site shares: a per-site servingFrom cannot be enforced there (the platform's NetworkPolicies of the pool's namespace apply)")
	case !podTemplateEmpty(s.PodTemplate):
		return not("spec.podTemplate", "the pool's pods are the platform's")
	case sitevalue.UsesHtpasswd(site):
		// The pool's server refuses an index shard whose entry names an htpasswd file (a pool's index carries
		// values, not files), and with it every other site of that shard: refused here, it never reaches the index.
		return not("spec.server.access.htpasswdSecret", "a pool's index carries values, not files: no htpasswd file can sit beside the site's value (address rules are fine)")
	case sitevalue.UsesSSO(site):
		return not("spec.server.access.sso", "a pool's index carries values, not files: no session keys file can sit beside the site's value, and the pool's pods run no login agent")
	}
	return nil
}

func podTemplateEmpty(p v1alpha1.PodTemplateOverrides) bool {
	return len(p.Labels) == 0 && len(p.Annotations) == 0 && len(p.NodeSelector) == 0 && len(p.Tolerations) == 0 &&
		p.Affinity == nil && len(p.TopologySpreadConstraints) == 0 && p.PriorityClassName == "" &&
		len(p.ImagePullSecrets) == 0 && p.ServiceAccountName == "" && p.AutomountServiceAccountToken == nil
}

// Entry is site's entry in pool's index; call it only for a site Check admits. clusterDomain is the cluster's
// DNS domain (cluster.local). hostnames are the spec.hostnames the site holds (status.hostnames: the operator's
// claims), so a pool never answers for a name another site holds.
func Entry(pool *v1alpha1.StaticSitePool, site *v1alpha1.StaticSite, clusterDomain string) poolindex.Site {
	id := poolindex.ID(site.Namespace, site.Name)
	hosts := make([]string, 0, len(site.Status.Hostnames)+3)
	for _, h := range site.Status.Hostnames {
		hosts = append(hosts, poolindex.NormalizeHost(h))
	}
	hosts = append(hosts, poolindex.ServiceHosts(site.Namespace, site.Name, clusterDomain)...)
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	e := poolindex.Site{
		ID:     id,
		Hosts:  hosts,
		Value:  sitevalue.Render(site).Bytes,
		Limits: LimitsOf(pool),
	}
	if g := site.Spec.Content.Git; g != nil {
		interval := v1alpha1.DefaultGitInterval
		if g.Interval != nil {
			interval = g.Interval.Duration.String()
		}
		e.Content.Git = &poolindex.GitContent{URL: g.URL, Ref: g.Ref, Path: strings.Trim(g.Path, "/"), Interval: interval}
	} else {
		for _, cm := range site.Spec.Content.ConfigMaps {
			e.Content.ConfigMaps = append(e.Content.ConfigMaps,
				poolindex.ConfigMapContent{Name: poolindex.MirrorName(pool.Name, id, cm.Name), PathPrefix: cm.PathPrefix})
		}
	}
	return e
}

// Defaults of the pool's spec.siteLimits (the CRD defaults them too; these cover objects stored before).
const (
	DefaultMaxFiles          = 20000
	DefaultMaxBytes          = 256 << 20
	DefaultRequestsPerSecond = 2000
)

// LimitsOf is the per-site limits of pool.
func LimitsOf(pool *v1alpha1.StaticSitePool) poolindex.Limits {
	l := poolindex.Limits{MaxFiles: DefaultMaxFiles, MaxBytes: DefaultMaxBytes, RequestsPerSecond: DefaultRequestsPerSecond}
	s := pool.Spec.SiteLimits
	if s.MaxFiles != nil {
		l.MaxFiles = *s.MaxFiles
	}
	if s.MaxBytes != nil {
		l.MaxBytes = s.MaxBytes.Value()
	}
	if s.RequestsPerSecond != nil {
		l.RequestsPerSecond = *s.RequestsPerSecond
	}
	return l
}

// Placed is the pool a site's status says it runs in, "" when it runs on its own pods.
func Placed(site *v1alpha1.StaticSite) string {
	if pl := site.Status.Placement; pl != nil && pl.Mode == v1alpha1.PlacementPool {
		return pl.Pool
	}
	return ""
}

// Pools are the pools a site concerns: the one it asks for and the one its status says it still runs in (while it
// moves out, the pool keeps serving it: docs/design/pools.md). Both controllers index StaticSites by it.
func Pools(site *v1alpha1.StaticSite) []string {
	var pools []string
	if p := Wants(site); p != "" {
		pools = append(pools, p)
	}
	if p := Placed(site); p != "" && (len(pools) == 0 || pools[0] != p) {
		pools = append(pools, p)
	}
	return pools
}

// Keeps reports whether pool keeps serving site: the site asks for it and is admitted, or the site moves out of
// it (its status still says it runs there) and would still be admitted there. The refusal is nil when it keeps it.
func Keeps(pool *v1alpha1.StaticSitePool, site *v1alpha1.StaticSite) *Refusal {
	if Wants(site) == pool.Name {
		return Check(pool, site)
	}
	if Placed(site) != pool.Name {
		return &Refusal{ReasonPoolNotFound, "spec.placement.pool", "the site neither asks for nor runs in this pool"}
	}
	leaving := site.DeepCopy()
	leaving.Spec.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: pool.Name}
	return Check(pool, leaving)
}
