package staticsite

import (
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/managercache"
)

// How a site learns that the CRD of an optional child (cert-manager's Certificate, the Prometheus Operator's
// PodMonitor, the Gateway API's HTTPRoute) was installed or removed after the operator started.
//
// A pass finds the kind missing when its apply answers "no such kind" (no REST mapping, or a 404 from a mapping
// learned earlier): the site then reports it (CertManagerNotInstalled, PodMonitorCRDMissing, HTTPRouteCRDMissing).
// controller-runtime's RESTMapper remembers no negative answer for a kind asked with its version (it asks
// discovery again on every miss), so the next pass after the CRD is served succeeds. What was missing is a reason
// for that pass: the site was only requeued after StalledRetry (a minute by default), and a requeued pass waits
// in the priority queue behind every request queued by an event and every retry that fell due before it. On a
// busy operator, or a test suite under -race with hundreds of sites retrying every second, that was more than 20
// s after the CRD appeared (issue 43; docs/staticsite.md).
//
// So each of those CRDs is watched, by name and as metadata only (managercache.NewCRDMetadata: RBAC grants list
// and watch on these names only), and its events queue, at once and at the priority of a change, the sites whose
// spec needs it (the field index indexOptionalCRD). An install brings an event when the CRD is created and one
// each time the API server accepts its names and establishes it; the API server serves the kind from the first of
// those. A removal brings the delete event (the updates while the CRD terminates wake nobody: a pass then would be
// refused "while terminating", not told the kind is gone). The periodic retry stays as a backstop. A CRD watch
// is no fan-out in the sense of lowpriority.go: it wakes only the sites waiting for that kind, and CRDs change
// when a platform team installs or upgrades a component, not with traffic.

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=list;watch,resourceNames=certificates.cert-manager.io;podmonitors.monitoring.coreos.com;httproutes.gateway.networking.k8s.io

// indexOptionalCRD indexes StaticSites by the names of the optional children's CRDs their spec needs.
const indexOptionalCRD = "optionalCRDs"

// optionalCRD is the CRD of a child kind that may be missing, and which sites need it.
type optionalCRD struct {
	name  string                               // <plural>.<group>, the CRD's name
	needs func(site *v1alpha1.StaticSite) bool // the site's spec asks for a child of this kind
}

// The CRDs' names, as the RBAC marker above grants them.
const (
	certificateCRD = "certificates.cert-manager.io"
	podMonitorCRD  = "podmonitors.monitoring.coreos.com"
	httpRouteCRD   = "httproutes.gateway.networking.k8s.io"
)

var optionalCRDs = []optionalCRD{
	{name: certificateCRD, needs: desired.WantsCertificate},
	{name: podMonitorCRD, needs: func(s *v1alpha1.StaticSite) bool { return s.Spec.Monitoring != nil }},
	{name: httpRouteCRD, needs: func(s *v1alpha1.StaticSite) bool {
		return s.Spec.Route != nil && len(s.Spec.Route.ParentRefs) > 0
	}},
}

// siteOptionalCRDs is the index function of indexOptionalCRD.
func siteOptionalCRDs(o client.Object) []string {
	site := o.(*v1alpha1.StaticSite)
	var names []string
	for _, c := range optionalCRDs {
		if c.needs(site) {
			names = append(names, c.name)
		}
	}
	return names
}

// optionalCRDWatches adds to mgr a cache of each optional child's CRD (kept in crdCaches) and returns their watches.
func (r *Reconciler) optionalCRDWatches(mgr manager.Manager) ([]source.Source, error) {
	r.crdCaches = map[string]cache.Cache{}
	var sources []source.Source
	for _, c := range optionalCRDs {
		crds, err := managercache.NewCRDMetadata(mgr, c.name)
		if err != nil {
			return nil, err
		}
		r.crdCaches[c.name] = crds
		sources = append(sources, r.crdWatch(crds))
	}
	return sources, nil
}

// crdWatch is the watch of the CRD crds holds: its events queue the sites whose spec needs it. A CRD is
// cluster-scoped, so sitesUsing lists the sites of every namespace.
func (r *Reconciler) crdWatch(crds cache.Cache) source.Source {
	return source.Kind(crds, managercache.CRDMetadata(), handler.EnqueueRequestsFromMapFunc(r.sitesUsing(indexOptionalCRD)), crdNotTerminating)
}

// crdNotTerminating drops the updates of a CRD being deleted (see above); creations, other updates and the
// deletion pass.
var crdNotTerminating = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectNew != nil && e.ObjectNew.GetDeletionTimestamp() == nil
}}
