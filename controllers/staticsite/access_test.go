package staticsite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"golang.org/x/crypto/bcrypt"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The API server refuses bad access settings, naming the field; good ones (v4 and v6 blocks, bare addresses)
// are admitted, so the CEL rules compile and accept what the server loads.
func TestAccessValidation(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:v1"}
	spec := func(a v1alpha1.AccessSpec) v1alpha1.StaticSiteSpec {
		return v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Access: &a}}
	}
	rule := func(r v1alpha1.AccessRule) v1alpha1.AccessSpec {
		return v1alpha1.AccessSpec{Rules: []v1alpha1.AccessRule{r}}
	}
	secret := &v1alpha1.SecretKeyRef{Name: "users"}
	for _, tc := range []struct {
		name string
		a    v1alpha1.AccessSpec
		want string
	}{
		{"host bits", rule(v1alpha1.AccessRule{PathPrefix: "/a", Allow: []string{"10.0.0.1/8"}}), "spec.server.access.rules[].allow[] must be IP addresses or CIDR blocks without host bits"},
		{"not an address", rule(v1alpha1.AccessRule{PathPrefix: "/a", Deny: []string{"example.com"}}), "spec.server.access.rules[].deny[] must be IP addresses or CIDR blocks"},
		{"v6 host bits", v1alpha1.AccessSpec{TrustedProxies: []string{"2001:db8::1/32"}}, "spec.server.access.trustedProxies[] must be IP addresses or CIDR blocks"},
		{"relative prefix", rule(v1alpha1.AccessRule{PathPrefix: "docs"}), "spec.server.access.rules[0].pathPrefix"},
		{"dot-dot prefix", rule(v1alpha1.AccessRule{PathPrefix: "/a/../b"}), "spec.server.access.rules[].pathPrefix must be a site path"},
		{"empty segment", rule(v1alpha1.AccessRule{PathPrefix: "/a//b"}), "spec.server.access.rules[].pathPrefix must be a site path"},
		{"basic auth without a Secret", rule(v1alpha1.AccessRule{PathPrefix: "/a", BasicAuth: &v1alpha1.BasicAuth{}}), "spec.server.access.htpasswdSecret is required when a rule sets basicAuth"},
		{"quote in realm", v1alpha1.AccessSpec{HtpasswdSecret: secret, Rules: []v1alpha1.AccessRule{{PathPrefix: "/a", BasicAuth: &v1alpha1.BasicAuth{Realm: `a"b`}}}}, "spec.server.access.rules[0].basicAuth.realm"},
		{"same prefix twice", v1alpha1.AccessSpec{Rules: []v1alpha1.AccessRule{{PathPrefix: "/a"}, {PathPrefix: "/a"}}}, "spec.server.access.rules[].pathPrefix must be unique"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, ns, spec(tc.a), tc.want) })
	}
	good := v1alpha1.AccessSpec{
		TrustedProxies: []string{"10.0.0.0/8", "fd00::/8", "192.0.2.7"},
		HtpasswdSecret: secret,
		Rules: []v1alpha1.AccessRule{
			{PathPrefix: "/docs/", Allow: []string{"198.51.100.0/24", "2001:db8::/32", "::1"}, Deny: []string{"198.51.100.9"}},
			{PathPrefix: "/team", BasicAuth: &v1alpha1.BasicAuth{Realm: "Team"}},
		},
	}
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "good"}, Spec: spec(good)}
	testenv.Must(t, k8s.Create(context.Background(), site))
}

func htpasswdSecret(ns, name, text string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"htpasswd": []byte(text)}}
}

// The htpasswd Secret reaches the pods in the site value's projected volume, beside site.json, and the value names
// it; a missing or bad Secret is said in AccessApplied (with an event) and leaves the Deployment as it was.
func TestAccessHtpasswdSecretWiring(t *testing.T) {
	ns := namespace(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	testenv.Must(t, err)
	spec := v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"}, Server: v1alpha1.ServerSpec{Access: &v1alpha1.AccessSpec{
		HtpasswdSecret: &v1alpha1.SecretKeyRef{Name: "users"},
		Rules:          []v1alpha1.AccessRule{{PathPrefix: "/team/", BasicAuth: &v1alpha1.BasicAuth{Realm: "Team"}}},
	}}}
	site := createSite(t, ns, "private", spec)
	waitSite(t, ns, "private", "the missing Secret said", conditionWith(v1alpha1.ConditionAccessApplied, metav1.ConditionFalse,
		v1alpha1.ReasonHtpasswdSecretNotFound, `Secret "users" not found`))
	waitEvent(t, ns, "private", "AccessApplied False")
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "private"}, &appsv1.Deployment{}); err == nil {
		t.Fatal("a Deployment without its users' Secret: its pods would start with no users")
	}

	// An MD5 line: refused by line number, without showing the file.
	testenv.Must(t, k8s.Create(context.Background(), htpasswdSecret(ns, "users", "alice:$apr1$x$y\n")))
	waitSite(t, ns, "private", "the MD5 line refused", conditionWith(v1alpha1.ConditionAccessApplied, metav1.ConditionFalse,
		v1alpha1.ReasonHtpasswdInvalid, "line 1: not a bcrypt hash"))

	fixed := htpasswdSecret(ns, "users", "alice:"+string(hash)+"\n")
	testenv.Eventually(t, "fix the Secret", func() error { return k8s.Update(context.Background(), fixed) })
	waitSite(t, ns, "private", "the users accepted", conditionWith(v1alpha1.ConditionAccessApplied, metav1.ConditionTrue,
		v1alpha1.ReasonHtpasswdAccepted, "1 users"))
	waitEvent(t, ns, "private", "AccessApplied again")

	d := getDeployment(t, ns, "private")
	var vol *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == desired.SiteValueVolumeName {
			vol = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Projected == nil || len(vol.Projected.Sources) != 2 {
		t.Fatalf("site value volume %+v: want projected from the ConfigMap and the Secret", vol)
	}
	cm, sec := vol.Projected.Sources[0].ConfigMap, vol.Projected.Sources[1].Secret
	if cm == nil || cm.Name != sitevalue.ConfigMapName("private") || sec == nil || sec.Name != "users" ||
		len(sec.Items) != 1 || sec.Items[0] != (corev1.KeyToPath{Key: "htpasswd", Path: sitevalue.HtpasswdFile}) {
		t.Errorf("sources: %+v, %+v", cm, sec)
	}
	value := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: sitevalue.ConfigMapName("private")}, value))
	var v sitevalue.Value
	testenv.Must(t, json.Unmarshal([]byte(value.Data[sitevalue.Key]), &v))
	if v.Access == nil || v.Access.HtpasswdFile != sitevalue.HtpasswdFile || len(v.Access.Rules) != 1 || v.Access.Rules[0].BasicAuth == nil {
		t.Errorf("site value access: %+v", v.Access)
	}
	if strings.Contains(value.Data[sitevalue.Key], "$2a$") {
		t.Error("a hash is in the ConfigMap")
	}

	// Without basic authentication the plain ConfigMap volume comes back and the condition goes.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Server.Access.Rules[0].BasicAuth = nil })
	waitSite(t, ns, "private", "AccessApplied removed", func(s *v1alpha1.StaticSite) error {
		for _, c := range s.Status.Conditions {
			if c.Type == v1alpha1.ConditionAccessApplied {
				return fmt.Errorf("still %s", c.Reason)
			}
		}
		return nil
	})
	testenv.Eventually(t, "the plain ConfigMap volume", func() error {
		d := getDeployment(t, ns, "private")
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == desired.SiteValueVolumeName && v.ConfigMap != nil {
				return nil
			}
		}
		return fmt.Errorf("volumes %+v", d.Spec.Template.Spec.Volumes)
	})
}

// Single sign-on's fields are refused when they cannot work, naming the field; a good one is admitted.
func TestAccessSSOValidation(t *testing.T) {
	ns := namespace(t)
	sso := &v1alpha1.SSOSpec{IssuerURL: "https://dex.example.com", ClientID: "docs", SecretName: "docs-sso"}
	spec := func(a v1alpha1.AccessSpec, hostnames ...v1alpha1.Hostname) v1alpha1.StaticSiteSpec {
		return v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"}, Hostnames: hostnames,
			Server: v1alpha1.ServerSpec{Access: &a}}
	}
	signIn := []v1alpha1.AccessRule{{PathPrefix: "/team/", SignIn: &v1alpha1.SignIn{Groups: []string{"eng"}}}}
	for _, tc := range []struct {
		name string
		spec v1alpha1.StaticSiteSpec
		want string
	}{
		{"signIn without sso", spec(v1alpha1.AccessSpec{Rules: signIn}, "docs.example.com"), "spec.server.access.sso is required when a rule sets signIn"},
		{"basicAuth and signIn", spec(v1alpha1.AccessSpec{SSO: sso, HtpasswdSecret: &v1alpha1.SecretKeyRef{Name: "u"},
			Rules: []v1alpha1.AccessRule{{PathPrefix: "/a", BasicAuth: &v1alpha1.BasicAuth{}, SignIn: &v1alpha1.SignIn{}}}}, "docs.example.com"),
			"spec.server.access.rules[] asks for basicAuth or signIn, not both"},
		{"no hostname", spec(v1alpha1.AccessSpec{SSO: sso, Rules: signIn}), "spec.server.access.sso needs spec.hostnames"},
		{"wildcard first", spec(v1alpha1.AccessSpec{SSO: sso, Rules: signIn}, "*.example.com"), "spec.server.access.sso needs spec.hostnames, the first one not a wildcard"},
		{"issuer not a URL", spec(v1alpha1.AccessSpec{SSO: &v1alpha1.SSOSpec{IssuerURL: "dex", ClientID: "c", SecretName: "s"}, Rules: signIn}, "docs.example.com"),
			"spec.server.access.sso.issuerURL"},
		{"session too long", spec(v1alpha1.AccessSpec{SSO: &v1alpha1.SSOSpec{IssuerURL: "https://dex", ClientID: "c", SecretName: "s",
			SessionTTL: &metav1.Duration{Duration: 30 * 24 * time.Hour}}, Rules: signIn}, "docs.example.com"), "spec.server.access.sso.sessionTTL must be between 5m and 168h"},
		{"e-mail domain with @", spec(v1alpha1.AccessSpec{SSO: sso, Rules: []v1alpha1.AccessRule{{PathPrefix: "/a",
			SignIn: &v1alpha1.SignIn{EmailDomains: []string{"@example.com"}}}}}, "docs.example.com"), "spec.server.access.rules[0].signIn.emailDomains[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, ns, tc.spec, tc.want) })
	}
	good := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "good"},
		Spec: spec(v1alpha1.AccessSpec{SSO: sso, Rules: append(signIn, v1alpha1.AccessRule{PathPrefix: "/corp/",
			SignIn: &v1alpha1.SignIn{EmailDomains: []string{"example.com"}}})}, "docs.example.com")}
	testenv.Must(t, k8s.Create(context.Background(), good))
}

func ssoSecret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// The sso Secret is judged before pods mount it (AccessApplied, with the login URL once good), the Deployment
// waits for a good one, and then the pod gets the login agent (its Secret mounted), the server the session keys
// beside its value, the Service the sso port and the route the agent's prefix; the value names the login URL.
func TestAccessSSOWiring(t *testing.T) {
	ns := namespace(t)
	class := "nginx"
	spec := v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"},
		Hostnames: []v1alpha1.Hostname{"docs.example.com"},
		Route:     &v1alpha1.RouteSpec{IngressClassName: &class},
		Server: v1alpha1.ServerSpec{Access: &v1alpha1.AccessSpec{
			SSO:   &v1alpha1.SSOSpec{IssuerURL: "https://dex.example.com", ClientID: "docs", SecretName: "docs-sso"},
			Rules: []v1alpha1.AccessRule{{PathPrefix: "/team/", SignIn: &v1alpha1.SignIn{Groups: []string{"eng"}}}},
		}}}
	createSite(t, ns, "private", spec)
	waitSite(t, ns, "private", "the missing Secret said", conditionWith(v1alpha1.ConditionAccessApplied, metav1.ConditionFalse,
		v1alpha1.ReasonSSOSecretNotFound, `Secret "docs-sso" not found`))
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "private"}, &appsv1.Deployment{}); err == nil {
		t.Fatal("a Deployment without its sso Secret: its agent would not start")
	}

	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	secret := ssoSecret(ns, "docs-sso", map[string]string{"client-secret": "s3cret", "session-keys": "c2hvcnQ=\n"})
	testenv.Must(t, k8s.Create(context.Background(), secret))
	waitSite(t, ns, "private", "the short key refused", conditionWith(v1alpha1.ConditionAccessApplied, metav1.ConditionFalse,
		v1alpha1.ReasonSSOSecretInvalid, "line 1: a key is 32 to 64 bytes, this one 5"))
	secret.Data["session-keys"] = []byte(key + "\n")
	testenv.Eventually(t, "fix the Secret", func() error { return k8s.Update(context.Background(), secret) })
	waitSite(t, ns, "private", "the Secret accepted", conditionWith(v1alpha1.ConditionAccessApplied, metav1.ConditionTrue,
		v1alpha1.ReasonSSOAccepted, "1 session key(s) of 32 bytes; users sign in at /.hyperstatic/sso/login"))
	for _, c := range []string{"s3cret", key} {
		s := &v1alpha1.StaticSite{}
		testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "private"}, s))
		if b, _ := json.Marshal(s.Status); strings.Contains(string(b), c) {
			t.Errorf("the status shows a secret: %s", b)
		}
	}

	var d *appsv1.Deployment
	testenv.Eventually(t, "the Deployment with the agent", func() error {
		d = &appsv1.Deployment{}
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "private"}, d)
	})
	var agent *corev1.Container
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "sso" {
			agent = &d.Spec.Template.Spec.Containers[i]
		}
	}
	if agent == nil || agent.Image != testAgentImage || !slices.Contains(agent.Args, "--issuer=https://dex.example.com") ||
		!slices.Contains(agent.Args, "--site-url=http://docs.example.com") {
		t.Fatalf("agent container %+v", agent)
	}
	value := siteValueOf(t, ns, "private").Data[sitevalue.Key] // applied before the Deployment
	if !strings.Contains(value, `"sso":{"loginURL":"/.hyperstatic/sso/login","keysFile":"session-keys"}`) ||
		!strings.Contains(value, `"signIn":{"groups":["eng"]}`) || strings.Contains(value, key) {
		t.Errorf("site value %s", value)
	}
	svc := &corev1.Service{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "private"}, svc))
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "sso" && p.Port == 8444 }) {
		t.Errorf("Service ports %+v: no sso port", svc.Spec.Ports)
	}
	ing := &networkingv1.Ingress{}
	testenv.Eventually(t, "the Ingress", func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "private"}, ing)
	})
	if paths := ing.Spec.Rules[0].HTTP.Paths; len(paths) != 2 || paths[1].Path != "/.hyperstatic/sso" || paths[1].Backend.Service.Port.Name != "sso" {
		t.Errorf("Ingress paths %+v", paths)
	}
}

// An issuer the tenancy policy does not list is refused naming spec.server.access.sso.issuerURL: the site gets no
// pod, so no login agent ever asks that address (an internal service, the cloud's metadata endpoint) anything.
func TestSSOIssuerPolicy(t *testing.T) {
	ns := namespace(t)
	createSite(t, ns, "internal", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"},
		Hostnames: []v1alpha1.Hostname{"internal.example.com"},
		Server: v1alpha1.ServerSpec{Access: &v1alpha1.AccessSpec{
			SSO: &v1alpha1.SSOSpec{IssuerURL: "http://169.254.169.254/latest", ClientID: "docs", SecretName: "docs-sso"}}}})
	refusedNaming(t, ns, "internal", `spec.server.access.sso.issuerURL: identity provider "http://169.254.169.254/latest" is not an allowed issuer`)
}
