package desired

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// Where a site's pods run and how they leave a failing node: the default spread, the default tolerations, the
// listen addresses and the Service's IP families. Pure functions of the site; the builders call them.

// NodeLossTolerationSeconds is how long a site's pod stays bound to a node that is NotReady or unreachable
// before it is evicted and replaced elsewhere. Kubernetes' default (the DefaultTolerationSeconds admission
// plugin) is 300 s; the node controller only taints a node after its grace period (node-monitor-grace-period,
// 50 s by default), so 30 s more rides out a kubelet restart or a brief network blip and still puts a
// replacement on another node within about 80 s of the node going silent instead of about 6 minutes. A static
// server has no state to lose, so an early replacement costs only a pod start.
const NodeLossTolerationSeconds int64 = 30

// nodeLossTaints are the NoExecute taints the node lifecycle controller puts on a node it lost contact with.
var nodeLossTaints = []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}

// defaultSpread spreads a site's replicas across nodes: maxSkew 1, ScheduleAnyway, a preference and never a reason
// to leave a pod Pending. With DoNotSchedule a drain (the cordoned node still counts as a domain) or the autoscaler
// asking for more replicas than fit where the skew allows would block scheduling; on a single node every replica
// lands on it. matchLabelKeys limits the count to one ReplicaSet, so a rollout's new pods spread among themselves.
//
// Zones are not a second constraint here, on purpose: when a pod has constraints, the scheduler's topology-spread
// score ignores every node that lacks one of their keys, so a zone constraint on a cluster whose nodes carry no
// topology.kubernetes.io/zone label would switch off the spread across nodes too. Zones come from defaultZoneSpread.
func defaultSpread(site *v1alpha1.StaticSite) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
	return []*corev1ac.TopologySpreadConstraintApplyConfiguration{corev1ac.TopologySpreadConstraint().
		WithMaxSkew(1).
		WithTopologyKey(corev1.LabelHostname).
		WithWhenUnsatisfiable(corev1.ScheduleAnyway).
		WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(sitechild.SelectorLabels(site))).
		WithMatchLabelKeys(appsv1.DefaultDeploymentUniqueLabelKey)}
}

// zoneSpreadWeight is the weight of the zone preference (the most a preferred term can have).
const zoneSpreadWeight = 100

// defaultZoneSpread spreads a site's replicas across zones where nodes carry topology.kubernetes.io/zone: a
// preferred pod anti-affinity, which scores a zone down by each of the site's pods already in it (so the zone
// with fewest is preferred) and, unlike a spread constraint, leaves nodes without the label to the other scores.
func defaultZoneSpread(site *v1alpha1.StaticSite) *corev1ac.PodAntiAffinityApplyConfiguration {
	return corev1ac.PodAntiAffinity().WithPreferredDuringSchedulingIgnoredDuringExecution(
		corev1ac.WeightedPodAffinityTerm().WithWeight(zoneSpreadWeight).WithPodAffinityTerm(
			corev1ac.PodAffinityTerm().
				WithTopologyKey(corev1.LabelTopologyZone).
				WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(sitechild.SelectorLabels(site)))))
}

// affinityOf is spec.podTemplate.affinity with defaultZoneSpread added as its podAntiAffinity, unless the user set
// a podAntiAffinity (theirs stands) or topologySpreadConstraints (they replace the whole default spread).
func affinityOf(site *v1alpha1.StaticSite) *corev1ac.AffinityApplyConfiguration {
	o := site.Spec.PodTemplate
	var a *corev1ac.AffinityApplyConfiguration
	if o.Affinity != nil {
		a = affinityApplyConfiguration(o.Affinity)
	}
	if len(o.TopologySpreadConstraints) > 0 || (o.Affinity != nil && o.Affinity.PodAntiAffinity != nil) {
		return a
	}
	if a == nil {
		a = corev1ac.Affinity()
	}
	return a.WithPodAntiAffinity(defaultZoneSpread(site))
}

// spreadOf is spec.podTemplate.topologySpreadConstraints when set (they replace the default spread, zones included),
// else defaultSpread.
func spreadOf(site *v1alpha1.StaticSite) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
	user := site.Spec.PodTemplate.TopologySpreadConstraints
	if len(user) == 0 {
		return defaultSpread(site)
	}
	out := make([]*corev1ac.TopologySpreadConstraintApplyConfiguration, 0, len(user))
	for i := range user {
		out = append(out, topologySpreadApplyConfiguration(&user[i]))
	}
	return out
}

// Tolerations are spec.podTemplate.tolerations followed by the node-loss tolerations (NodeLossTolerationSeconds)
// for each node-loss taint the user did not tolerate with a NoExecute (or any-effect) toleration of their own: the
// user's choice for that taint wins. The tenancy policy restricts the user's tolerations (spec), not these.
func Tolerations(site *v1alpha1.StaticSite) []*corev1ac.TolerationApplyConfiguration {
	user := site.Spec.PodTemplate.Tolerations
	out := make([]*corev1ac.TolerationApplyConfiguration, 0, len(user)+len(nodeLossTaints))
	for i := range user {
		out = append(out, viaJSON[corev1ac.TolerationApplyConfiguration](&user[i]))
	}
	for _, key := range nodeLossTaints {
		if userTolerates(user, key) {
			continue
		}
		out = append(out, corev1ac.Toleration().
			WithKey(key).
			WithOperator(corev1.TolerationOpExists).
			WithEffect(corev1.TaintEffectNoExecute).
			WithTolerationSeconds(NodeLossTolerationSeconds))
	}
	return out
}

// userTolerates says whether one of the user's tolerations already covers the NoExecute taint key.
func userTolerates(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if (t.Key == key || (t.Key == "" && t.Operator == corev1.TolerationOpExists)) &&
			(t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
			return true
		}
	}
	return false
}

// ipFamilyPolicyOf is spec.service.ipFamilyPolicy, PreferDualStack when unset: a dual-stack cluster gives the
// Service both families, a single-stack one its only family.
func ipFamilyPolicyOf(site *v1alpha1.StaticSite) corev1.IPFamilyPolicy {
	if p := site.Spec.Service.IPFamilyPolicy; p != nil {
		return *p
	}
	return corev1.IPFamilyPolicyPreferDualStack
}
