package staticsite

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/hostclaim"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// Who holds a hostname (internal/hostclaim has the rules). The manager's cache indexes every StaticSite, cluster
// wide, by the normalised hostnames it claims (spec.hostnames) or holds (status.hostnames), so a pass finds the
// sites that share its hostnames, and a site's change finds the sites waiting for its hostnames, by lookup: the
// cost follows the number of sites sharing a hostname, not the number of sites.

// indexHostname is the field index of StaticSites by normalised hostname (spec and status).
const indexHostname = "hostnames"

// siteHostnames is a site's index values: its claimed and held hostnames, normalised, each once.
func siteHostnames(o client.Object) []string {
	s := o.(*v1alpha1.StaticSite)
	out := append(specHostnames(s), s.Status.Hostnames...)
	slices.Sort(out)
	return slices.Compact(out)
}

// specHostnames are the hostnames a site's spec names, normalised: spec.hostnames and, with spec.previews, the
// previews' wildcard "*.<domain>" its route carries (one site's previews per domain: another site with the same
// domain would otherwise route, and serve, the same preview hosts).
func specHostnames(s *v1alpha1.StaticSite) []string {
	out := make([]string, 0, len(s.Spec.Hostnames)+1)
	for _, h := range s.Spec.Hostnames {
		out = append(out, hostclaim.Normalize(string(h)))
	}
	if s.Spec.Previews != nil {
		out = append(out, hostclaim.Normalize(string(desired.PreviewsWildcard(s))))
	}
	return out
}

// claimantOf is a site as hostclaim sees it. A site claims its hostnames only with a spec.route that the policy
// admits (another site then waits for it only while its own claim can succeed); a site being deleted claims and
// holds nothing (its route goes with it).
func (r *Reconciler) claimantOf(s *v1alpha1.StaticSite) hostclaim.Claimant {
	c := hostclaim.Claimant{Site: s.Namespace + "/" + s.Name, Created: s.CreationTimestamp.Time}
	if !s.DeletionTimestamp.IsZero() {
		return c
	}
	c.Holds = s.Status.Hostnames
	// A site claims its hostnames when something answers for them or a certificate is issued for them
	// (spec.tls.issuerRef: a certificate for a name another site holds would let the later site serve it).
	if (answersForHostnames(s) || desired.WantsCertificate(s)) && len(r.policy().CheckSite(s)) == 0 {
		c.Claims = specHostnames(s)
	}
	return c
}

// answersForHostnames says something answers for the site's hostnames: its route, or its pool (which chooses the site by
// Host, so a name the site does not hold must never reach it there).
func answersForHostnames(s *v1alpha1.StaticSite) bool {
	return s.Spec.Route != nil || poolplacement.Wants(s) != ""
}

// sitesSharing lists the sites other than self that claim or hold any of hostnames.
func (r *Reconciler) sitesSharing(ctx context.Context, self types.NamespacedName, hostnames []string) ([]v1alpha1.StaticSite, error) {
	var out []v1alpha1.StaticSite
	seen := map[types.NamespacedName]bool{self: true}
	for _, h := range hostnames {
		list := &v1alpha1.StaticSiteList{}
		if err := r.List(ctx, list, client.MatchingFields{indexHostname: h}); err != nil {
			return nil, err
		}
		for _, s := range list.Items {
			if k := (types.NamespacedName{Namespace: s.Namespace, Name: s.Name}); !seen[k] {
				seen[k] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// sitesWaitingFor maps a site that changed (created, deleted, its hostnames or its spec changed, its status
// recorded other hostnames) to the other sites that share a hostname with it: one of them may now get a hostname
// it waits for, or must give one up. For an update it runs on the old object and on the new one.
func (r *Reconciler) sitesWaitingFor(ctx context.Context, o client.Object) []reconcile.Request {
	self := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	sites, err := r.sitesSharing(ctx, self, siteHostnames(o))
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(sites))
	for _, s := range sites {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return reqs
}

// hostnameClaimsChanged passes the site events that may change another site's claims: a site with hostnames
// created or deleted, and an update of one with hostnames (before or after) that changes its spec (hostnames,
// route, or whether the policy admits it), status.hostnames or its deletion.
var hostnameClaimsChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return len(siteHostnames(e.Object)) > 0 },
	DeleteFunc:  func(e event.DeleteEvent) bool { return len(siteHostnames(e.Object)) > 0 },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*v1alpha1.StaticSite)
		now, ok2 := e.ObjectNew.(*v1alpha1.StaticSite)
		if !ok1 || !ok2 || len(siteHostnames(old))+len(siteHostnames(now)) == 0 {
			return false
		}
		return old.Generation != now.Generation || !equality.Semantic.DeepEqual(old.Status.Hostnames, now.Status.Hostnames) ||
			old.DeletionTimestamp.IsZero() != now.DeletionTimestamp.IsZero()
	},
}
