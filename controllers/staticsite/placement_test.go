package staticsite

import (
	"net"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The listeners bind the IPv6 wildcard (dual-stack), written so that every address parser reads it.
func TestListenAddressesWorkOnEveryFamily(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "cert"}
	args := append(ServerArgs(site), tlsArgs(site)...)
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

// By default the replicas spread over nodes and zones, as a preference only; the user's constraints replace it.
func TestDefaultSpreadIsNodesAndZonesScheduleAnyway(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	tsc := deploymentFor(t, site, ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec.TopologySpreadConstraints
	if len(tsc) != 2 {
		t.Fatalf("default spread: %+v", tsc)
	}
	for i, key := range []string{corev1.LabelHostname, corev1.LabelTopologyZone} {
		c := tsc[i]
		if c.TopologyKey != key || c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.ScheduleAnyway ||
			!reflect.DeepEqual(c.LabelSelector.MatchLabels, selectorLabels(site)) ||
			!reflect.DeepEqual(c.MatchLabelKeys, []string{"pod-template-hash"}) {
			t.Errorf("constraint %d: %+v", i, c)
		}
	}
	user := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule}}
	site.Spec.PodTemplate.TopologySpreadConstraints = user
	got := deploymentFor(t, site, ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec.TopologySpreadConstraints
	if !reflect.DeepEqual(got, user) {
		t.Errorf("user spread = %+v, want %+v", got, user)
	}
}

// Pods leave a lost node after NodeLossTolerationSeconds, not the admission default of 300 s; a user toleration
// for the same taint wins, and other user tolerations are kept in front.
func TestNodeLossTolerations(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	pod := func() []corev1.Toleration {
		return deploymentFor(t, site, ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec.Tolerations
	}
	nodeLoss := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(NodeLossTolerationSeconds)}
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

// The Service asks for both families unless the site says otherwise.
func TestServiceIPFamilyPolicy(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	if p := typed[corev1.Service](t, DesiredService(site)).Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicyPreferDualStack {
		t.Errorf("default ipFamilyPolicy = %v, want PreferDualStack", p)
	}
	site.Spec.Service.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	if p := typed[corev1.Service](t, DesiredService(site)).Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicySingleStack {
		t.Errorf("ipFamilyPolicy = %v, want SingleStack", p)
	}
}
