package staticsite

import (
	"net"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// The listeners bind the IPv6 wildcard (dual-stack), written so that every address parser reads it.
func TestListenAddressesWorkOnEveryFamily(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "cert"}
	args := desired.ServerArgs(site)
	seen := map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--listen", "--admin-listen", "--tls-listen":
			seen[args[i]] = args[i+1]
		}
	}
	want := map[string]string{"--listen": "[::]:8080", "--admin-listen": "[::]:9090", "--tls-listen": "[::]:8443"}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("listen flags = %v, want %v", seen, want)
	}
	for flag, addr := range seen {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || net.ParseIP(host) == nil || net.ParseIP(host).To4() != nil {
			t.Errorf("%s %s: not an IPv6 wildcard host:port (%v)", flag, addr, err)
		}
	}
}

// By default the replicas spread over nodes (a ScheduleAnyway constraint) and zones (a preferred anti-affinity,
// which leaves nodes without a zone label to the other scores); the user's constraints replace both, the user's
// podAntiAffinity replaces the zone part, the user's node affinity is kept beside it.
func TestDefaultSpreadIsNodesAndZonesAndNeverBlocks(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	pod := func() corev1.PodSpec {
		return deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec
	}
	zoneTerm := []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
		TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: sitechild.SelectorLabels(site)}}}}

	p := pod()
	tsc := p.TopologySpreadConstraints
	if len(tsc) != 1 || tsc[0].TopologyKey != corev1.LabelHostname || tsc[0].MaxSkew != 1 || tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
		!reflect.DeepEqual(tsc[0].LabelSelector.MatchLabels, sitechild.SelectorLabels(site)) ||
		!reflect.DeepEqual(tsc[0].MatchLabelKeys, []string{"pod-template-hash"}) {
		t.Errorf("default spread over nodes: %+v", tsc)
	}
	if p.Affinity == nil || p.Affinity.PodAntiAffinity == nil || p.Affinity.NodeAffinity != nil ||
		!reflect.DeepEqual(p.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, zoneTerm) ||
		p.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("default spread over zones: %+v", p.Affinity)
	}

	nodeAffinity := &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"web"}}}}}}}
	site.Spec.PodTemplate.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
	if a := pod().Affinity; a == nil || !reflect.DeepEqual(a.NodeAffinity, nodeAffinity) || a.PodAntiAffinity == nil ||
		!reflect.DeepEqual(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, zoneTerm) {
		t.Errorf("user node affinity with the zone default: %+v", a)
	}

	own := &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 5,
		PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "rack"}}}}
	site.Spec.PodTemplate.Affinity = &corev1.Affinity{PodAntiAffinity: own}
	if a := pod().Affinity; a == nil || !reflect.DeepEqual(a.PodAntiAffinity, own) {
		t.Errorf("the user's podAntiAffinity must stand alone: %+v", a)
	}

	site.Spec.PodTemplate.Affinity = nil
	user := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule}}
	site.Spec.PodTemplate.TopologySpreadConstraints = user
	if p := pod(); !reflect.DeepEqual(p.TopologySpreadConstraints, user) || p.Affinity != nil {
		t.Errorf("user spread must replace the whole default: constraints %+v, affinity %+v", p.TopologySpreadConstraints, p.Affinity)
	}
}

// Pods leave a lost node after NodeLossTolerationSeconds, not the admission default of 300 s; a user toleration
// for the same taint wins, and other user tolerations are kept in front.
func TestNodeLossTolerations(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	pod := func() []corev1.Toleration {
		return deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec.Tolerations
	}
	nodeLoss := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(desired.NodeLossTolerationSeconds)}
	}
	if got, want := pod(), []corev1.Toleration{nodeLoss(corev1.TaintNodeNotReady), nodeLoss(corev1.TaintNodeUnreachable)}; !reflect.DeepEqual(got, want) {
		t.Errorf("default tolerations = %+v, want %+v", got, want)
	}
	own := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](600)}
	other := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}
	site.Spec.PodTemplate.Tolerations = []corev1.Toleration{other, own}
	if got, want := pod(), []corev1.Toleration{other, own, nodeLoss(corev1.TaintNodeNotReady)}; !reflect.DeepEqual(got, want) {
		t.Errorf("with user tolerations = %+v, want %+v", got, want)
	}
	site.Spec.PodTemplate.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} // tolerates everything
	if got := pod(); len(got) != 1 {
		t.Errorf("a tolerate-all user toleration must stand alone, got %+v", got)
	}
}

// The node-loss tolerations are the operator's, not the tenant's: the default multi-tenant policy, which allows a
// tenant no toleration at all, admits a site whose pods carry them.
func TestNodeLossTolerationsPassTheTenancyPolicy(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "hyperstatic/docs:v1"})
	p := tenancy.Default()
	p.Images = []string{"hyperstatic/docs"} // the default lists no site image: the platform names its own
	if vs := p.CheckSite(site); len(vs) != 0 {
		t.Fatalf("default policy refuses a plain site: %v", vs)
	}
	if n := len(deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "hyperstatic/docs:v1", "")).Spec.Template.Spec.Tolerations); n != 2 {
		t.Errorf("pod tolerations: %d, want the 2 node-loss ones", n)
	}
}

// The Service asks for both families unless the site says otherwise.
func TestServiceIPFamilyPolicy(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	if p := typed[corev1.Service](t, desired.Service(site)).Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicyPreferDualStack {
		t.Errorf("default ipFamilyPolicy = %v, want PreferDualStack", p)
	}
	site.Spec.Service.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	if p := typed[corev1.Service](t, desired.Service(site)).Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicySingleStack {
		t.Errorf("ipFamilyPolicy = %v, want SingleStack", p)
	}
}
