package poolplacement

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

func poolSite(mutate func(*v1alpha1.StaticSite)) *v1alpha1.StaticSite {
	s := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "docs"}}
	s.Spec.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: "shared"}
	s.Spec.Content.ConfigMaps = []v1alpha1.ConfigMapContent{{Name: "pages"}, {Name: "css", PathPrefix: "assets/css"}}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func sharedPool(namespaces ...string) *v1alpha1.StaticSitePool {
	p := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}
	p.Spec.Namespace = "pools"
	p.Spec.Namespaces = namespaces
	return p
}

func TestCheckRefusesNamingTheField(t *testing.T) {
	for name, tc := range map[string]struct {
		pool   *v1alpha1.StaticSitePool
		mutate func(*v1alpha1.StaticSite)
		reason string
		field  string
	}{
		"no pool":       {nil, nil, ReasonPoolNotFound, "spec.placement.pool"},
		"other pool":    {&v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, nil, ReasonPoolNotFound, "spec.placement.pool"},
		"not admitted":  {sharedPool("team-b"), nil, ReasonNamespaceNotAdmitted, "spec.placement.pool"},
		"image content": {sharedPool("*"), func(s *v1alpha1.StaticSite) { s.Spec.Content = v1alpha1.ContentSource{Image: "x"} }, ReasonFeatureNotPooled, "spec.content"},
		"git with creds": {sharedPool("*"), func(s *v1alpha1.StaticSite) {
			s.Spec.Content = v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "u", Ref: "main", SecretRef: &v1alpha1.LocalObjectReference{Name: "k"}}}
		}, ReasonGitCredentials, "spec.content.git.secretRef"},
		"tls":            {sharedPool("*"), func(s *v1alpha1.StaticSite) { s.Spec.TLS = &v1alpha1.TLSSpec{} }, ReasonFeatureNotPooled, "spec.tls"},
		"extra args":     {sharedPool("*"), func(s *v1alpha1.StaticSite) { s.Spec.Server.ExtraArgs = []string{"--x"} }, ReasonFeatureNotPooled, "spec.server.extraArgs"},
		"autoscaling":    {sharedPool("*"), func(s *v1alpha1.StaticSite) { s.Spec.Autoscaling = &v1alpha1.AutoscalingSpec{} }, ReasonFeatureNotPooled, "spec.autoscaling"},
		"network policy": {sharedPool("*"), func(s *v1alpha1.StaticSite) { s.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{} }, ReasonFeatureNotPooled, "spec.networkPolicy"},
		"pod template":   {sharedPool("*"), func(s *v1alpha1.StaticSite) { s.Spec.PodTemplate.NodeSelector = map[string]string{"a": "b"} }, ReasonFeatureNotPooled, "spec.podTemplate"},
		"basic auth": {sharedPool("*"), func(s *v1alpha1.StaticSite) {
			s.Spec.Server.Access = &v1alpha1.AccessSpec{HtpasswdSecret: &v1alpha1.SecretKeyRef{Name: "u"},
				Rules: []v1alpha1.AccessRule{{PathPrefix: "/team/", BasicAuth: &v1alpha1.BasicAuth{}}}}
		}, ReasonFeatureNotPooled, "spec.server.access.htpasswdSecret"},
		"single sign-on": {sharedPool("*"), func(s *v1alpha1.StaticSite) {
			s.Spec.Hostnames = []v1alpha1.Hostname{"docs.example.com"}
			s.Spec.Server.Access = &v1alpha1.AccessSpec{SSO: &v1alpha1.SSOSpec{IssuerURL: "https://idp", ClientID: "c", SecretName: "s"},
				Rules: []v1alpha1.AccessRule{{PathPrefix: "/team/", SignIn: &v1alpha1.SignIn{}}}}
		}, ReasonFeatureNotPooled, "spec.server.access.sso"},
	} {
		t.Run(name, func(t *testing.T) {
			r := Check(tc.pool, poolSite(tc.mutate))
			if r == nil || r.Reason != tc.reason || r.Field != tc.field {
				t.Fatalf("Check = %+v, want %s on %s", r, tc.reason, tc.field)
			}
		})
	}
	if r := Check(sharedPool("team-a"), poolSite(nil)); r != nil {
		t.Fatalf("an admitted ConfigMap site refused: %v", r)
	}
	if r := Check(sharedPool("*"), poolSite(func(s *v1alpha1.StaticSite) {
		s.Spec.Server.Access = &v1alpha1.AccessSpec{TrustedProxies: []string{"10.0.0.0/8"},
			Rules: []v1alpha1.AccessRule{{PathPrefix: "/office/", Allow: []string{"192.0.2.0/24"}}}}
	})); r != nil {
		t.Fatalf("a site with address rules refused: %v", r)
	}
	if r := Check(sharedPool("*"), poolSite(func(s *v1alpha1.StaticSite) {
		s.Spec.Content = v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "https://git.example/x.git", Ref: "main"}}
	})); r != nil {
		t.Fatalf("a public Git site refused: %v", r)
	}
}

// Every entry Entry makes is one the index accepts, the example's shape: hosts held and Service names, mirrors
// named from the pool and the site.
func TestEntryIsAValidIndexSite(t *testing.T) {
	site := poolSite(func(s *v1alpha1.StaticSite) { s.Status.Hostnames = []string{"Docs.Example.com."} })
	e := Entry(sharedPool("*"), site, "cluster.local")
	want := []string{"docs.example.com", "docs.team-a", "docs.team-a.svc", "docs.team-a.svc.cluster.local"}
	if strings.Join(e.Hosts, ",") != strings.Join(want, ",") {
		t.Fatalf("hosts %v, want %v", e.Hosts, want)
	}
	if e.Content.ConfigMaps[1].Name != poolindex.MirrorName("shared", "team-a.docs", "css") || e.Content.ConfigMaps[1].PathPrefix != "assets/css" {
		t.Fatalf("content %+v", e.Content)
	}
	doc, err := poolindex.Render(0, []poolindex.Site{e})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poolindex.Parse(doc); err != nil {
		t.Fatalf("the index refuses Entry's site: %v\n%s", err, doc)
	}
}

// An Auto site is in its pool's index wherever it runs (the pool keeps its tree while it runs on its own pods), and
// must be one the pool admits.
func TestAutoSiteStaysInThePoolsIndex(t *testing.T) {
	auto := func(mutate func(*v1alpha1.StaticSite)) *v1alpha1.StaticSite {
		return poolSite(func(s *v1alpha1.StaticSite) {
			s.Spec.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: "shared"}
			if mutate != nil {
				mutate(s)
			}
		})
	}
	running := []struct {
		name   string
		status *v1alpha1.PlacementStatus
	}{
		{"new", nil},
		{"in the pool", &v1alpha1.PlacementStatus{Mode: v1alpha1.PlacementPool, Pool: "shared"}},
		{"promoted", &v1alpha1.PlacementStatus{Mode: v1alpha1.PlacementDedicated, Reason: v1alpha1.PlacementReasonPromoted}},
	}
	for _, r := range running {
		site := auto(func(s *v1alpha1.StaticSite) { s.Status.Placement = r.status })
		if Wants(site) != "shared" || !Auto(site) {
			t.Errorf("%s: Wants %q Auto %v", r.name, Wants(site), Auto(site))
		}
		if ref := Keeps(sharedPool("team-a"), site); ref != nil {
			t.Errorf("%s: the pool does not keep it: %v", r.name, ref)
		}
		if p := Pools(site); len(p) != 1 || p[0] != "shared" {
			t.Errorf("%s: Pools %v", r.name, p)
		}
	}
	if ref := Keeps(sharedPool("team-a"), auto(func(s *v1alpha1.StaticSite) { s.Spec.TLS = &v1alpha1.TLSSpec{} })); ref == nil || ref.Field != "spec.tls" {
		t.Errorf("an Auto site with in-server TLS: %v, want refused on spec.tls", ref)
	}
	if Auto(poolSite(nil)) {
		t.Error("a Pool site is Auto")
	}
}
