package staticsite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The site value's delivery (docs/design/site-value.md, internal/sitevalue): two steps.
//
//   - reconcileSiteValue, before the Deployment: applies the ConfigMap <site>.site-value holding the rendered value,
//     so a new pod never starts without its rules. A ConfigMap of that name the site does not own is left alone
//     (NotOwned), and so is the Deployment: its pods would load someone else's rules.
//   - reconcileSiteValuePods, after the pods are listed and told the rendered revision (podannounce.go: the kubelet
//     then refreshes the mount at once instead of within its ~1 min sync period): reads which revision each ready
//     pod serves (hyperstatic_site_value_info) for status.siteValue and SiteValueApplied.
//
// A pod's reading that says it serves the rendered revision cannot change while the ConfigMap does not, nor one
// that says its server reports no site value at all (its binary does not change while it runs): both are kept per
// pod and server restart (siteValueSeen), so a site in steady state costs no scrape for this.

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=patch

// reconcileSiteValue applies the site value's ConfigMap.
func (r *Reconciler) reconcileSiteValue(ctx context.Context, st *observation) error {
	site := st.site
	st.siteValue = &siteValueState{rendered: sitevalue.Render(site)}
	if i := sitevalue.SiteRuleFlagIn(site.Spec.Server.ExtraArgs); i >= 0 {
		// Admitted before the CRD refused it (an operator upgrade): the server would refuse to start on it beside
		// --site, so the running Deployment is left as it is, serving with its flags, until the spec is fixed.
		st.siteValue.notApplied = &problem{Reason: v1alpha1.ReasonSiteRuleFlagInExtraArgs, Message: fmt.Sprintf(
			"spec.server.extraArgs[%d] %q sets a site-rule flag, which the server refuses beside the site value: set it in its spec field "+
				"(spec.server.*, spec.tls.*) instead; the Deployment is left as it is", i, site.Spec.Server.ExtraArgs[i])}
		st.reject(st.siteValue.notApplied)
		st.skipDeployment = true
		return nil
	}
	key := types.NamespacedName{Namespace: site.Namespace, Name: sitevalue.ConfigMapName(site.Name)}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "ConfigMap", &corev1.ConfigMap{},
		desired.SiteValueConfigMap(site, st.siteValue.rendered), key, extractConfigMap)
	if err != nil {
		var foreign *notOwnedError
		switch {
		case errors.As(err, &foreign):
			st.siteValue.notApplied = &problem{Reason: v1alpha1.ReasonSiteValueConfigMapNotOwned, Message: err.Error()}
			st.reject(&problem{Reason: v1alpha1.ReasonNotOwned, Message: err.Error()})
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			st.siteValue.notApplied = &problem{Reason: v1alpha1.ReasonSiteValueConfigMapRejected, Message: err.Error()}
			st.reject(st.siteValue.notApplied)
		default:
			return fmt.Errorf("apply ConfigMap: %w", err)
		}
		// Not applied: the Deployment stays as it is, pods that run keep the value they have.
		st.skipDeployment = true
		return nil
	}
	r.recordApplyOf(site, "ConfigMap", key.Name, res)
	return nil
}

func extractConfigMap(o client.Object) (any, error) {
	return corev1ac.ExtractConfigMap(o.(*corev1.ConfigMap), sitechild.FieldOwner)
}

// reconcileSiteValuePods annotates the pods that have not been told of the rendered revision and reads which
// revision the ready ones serve.
func (r *Reconciler) reconcileSiteValuePods(ctx context.Context, st *observation) error {
	sv := st.siteValue
	if sv == nil || sv.notApplied != nil {
		return nil
	}
	for i := range st.pods {
		p := &st.pods[i]
		if !mountsSiteValue(p, st.site) {
			continue // a pod of a template before the site value: the rollout replaces it
		}
		if podstate.Ready(p) {
			r.observeSiteValue(ctx, st, p)
		}
	}
	switch {
	case len(sv.pending) > 0:
		st.requeue(st.tun.siteValueRetry)
	case len(sv.unreadable) > 0:
		st.requeue(st.tun.scrapeRetry)
	case len(sv.refused) > 0:
		// The content may change under the pods and make the value acceptable (a claim's files are not watched).
		st.requeue(st.tun.contentRefresh)
	}
	return nil
}

// mountsSiteValue says whether a pod mounts the site's site value ConfigMap (pods of a template from before the site
// value do not, and never will).
func mountsSiteValue(p *corev1.Pod, site *v1alpha1.StaticSite) bool {
	name := sitevalue.ConfigMapName(site.Name)
	for _, v := range p.Spec.Volumes {
		if v.Name != desired.SiteValueVolumeName {
			continue
		}
		if v.ConfigMap != nil && v.ConfigMap.Name == name {
			return true
		}
		// With basic authentication: projected with the htpasswd Secret (desired/sitevalue.go).
		for _, s := range projectedSources(v) {
			if s.ConfigMap != nil && s.ConfigMap.Name == name {
				return true
			}
		}
	}
	return false
}

// observeSiteValue reads which site value a ready pod serves into st.siteValue, from the kept reading when there is
// one that still holds.
func (r *Reconciler) observeSiteValue(ctx context.Context, st *observation, p *corev1.Pod) {
	sv := st.siteValue
	sv.readyPods++
	revision, ok := r.keptSiteValue(p, sv.rendered.Revision)
	if !ok {
		s, err := r.scrapeInPass(ctx, st, p)
		if err != nil {
			sv.unreadable = append(sv.unreadable, fmt.Sprintf("%s: %v", p.Name, err))
			return
		}
		revision = s.SiteValueRevision
		if revision != sv.rendered.Revision && revision != "" && (s.SiteValueLoadFailures > 0 || s.LoadFailed) && s.LoadError != "" {
			sv.refused = append(sv.refused, fmt.Sprintf("pod %s serves %s: %s", p.Name, revision, strings.TrimSpace(s.LoadError)))
			return
		}
		r.keepSiteValue(st, p, revision)
	}
	switch revision {
	case sv.rendered.Revision:
		sv.servedBy++
	case "":
		sv.notReported = append(sv.notReported, p.Name)
	default:
		sv.pending = append(sv.pending, p.Name)
	}
}

// siteValueSeen is a kept reading: the site value revision a pod's server reported, while its restart count was
// restarts.
type siteValueSeen struct {
	site     types.NamespacedName
	revision string
	restarts int32
}

// keptSiteValue returns the revision a pod's server reported earlier when that reading still holds: it served the
// rendered revision, or reported none, and it has not restarted since.
func (r *Reconciler) keptSiteValue(p *corev1.Pod, rendered string) (string, bool) {
	r.samplesMu.Lock()
	seen, ok := r.siteValues[p.UID]
	r.samplesMu.Unlock()
	if !ok || seen.restarts != serverRestarts(p) || (seen.revision != rendered && seen.revision != "") {
		return "", false
	}
	return seen.revision, true
}

// keepSiteValue keeps a reading that can hold (see keptSiteValue); any other is read again in the next pass.
func (r *Reconciler) keepSiteValue(st *observation, p *corev1.Pod, revision string) {
	if revision != st.siteValue.rendered.Revision && revision != "" {
		return
	}
	r.samplesMu.Lock()
	defer r.samplesMu.Unlock()
	if r.siteValues == nil {
		r.siteValues = map[types.UID]siteValueSeen{}
	}
	r.siteValues[p.UID] = siteValueSeen{site: types.NamespacedName{Namespace: st.site.Namespace, Name: st.site.Name}, revision: revision,
		restarts: serverRestarts(p)}
}

func projectedSources(v corev1.Volume) []corev1.VolumeProjection {
	if v.Projected == nil {
		return nil
	}
	return v.Projected.Sources
}
