package staticsite

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// testCert makes a self-signed ECDSA P-256 certificate and its key, PEM-encoded, valid from notBefore to notAfter.
func testCert(t *testing.T, notBefore, notAfter time.Time, names ...string) (crt, key []byte) {
	t.Helper()
	return testcerts.SelfSigned(t, testcerts.Options{NotBefore: notBefore, NotAfter: notAfter}, names...)
}

func tlsSecret(ns, name string, crt, key []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
}

func TestCheckCertificate(t *testing.T) {
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	crt, key := testCert(t, now.Add(-time.Hour), now.Add(90*24*time.Hour), "www.example.com", "example.com")
	otherCrt, otherKey := testCert(t, now.Add(-time.Hour), now.Add(time.Hour), "other.example")
	oldCrt, oldKey := testCert(t, now.Add(-48*time.Hour), now.Add(-24*time.Hour), "old.example")
	futureCrt, futureKey := testCert(t, now.Add(24*time.Hour), now.Add(48*time.Hour), "future.example")
	for _, tc := range []struct {
		name     string
		crt, key []byte
		ok       bool
		reason   string
		message  string
	}{
		{"valid", crt, key, true, v1alpha1.ReasonCertificateValid, "certificate for www.example.com, example.com from Secret \"s\", valid until " + now.Add(90*24*time.Hour).Format(time.RFC3339)},
		{"no key", crt, nil, false, v1alpha1.ReasonSecretInvalid, "has no tls.key"},
		{"nothing", nil, nil, false, v1alpha1.ReasonSecretInvalid, "has no tls.crt and tls.key"},
		{"not PEM", []byte("hello"), key, false, v1alpha1.ReasonInvalidCertificate, "failed to find any PEM data in certificate input"},
		{"key of another certificate", crt, otherKey, false, v1alpha1.ReasonInvalidCertificate, "private key does not match public key"},
		{"expired", oldCrt, oldKey, false, v1alpha1.ReasonInvalidCertificate, "the certificate (old.example) expired at " + now.Add(-24*time.Hour).Format(time.RFC3339)},
		{"not yet valid", futureCrt, futureKey, false, v1alpha1.ReasonInvalidCertificate, "is not valid before " + now.Add(24*time.Hour).Format(time.RFC3339)},
		{"other pair is fine", otherCrt, otherKey, true, v1alpha1.ReasonCertificateValid, "other.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tlsSecret("ns", "s", tc.crt, tc.key)
			v := checkCertificate(s, now)
			if v.ok != tc.ok || v.reason != tc.reason || !strings.Contains(v.message, tc.message) {
				t.Errorf("got ok=%v %s %q, want ok=%v %s containing %q", v.ok, v.reason, v.message, tc.ok, tc.reason, tc.message)
			}
		})
	}
}

func TestTLSInThePodTemplateAndService(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "docs-tls", HTTPRedirect: true, HTTP2: ptr.To(false),
		HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 31536000, IncludeSubDomains: true, Preload: true}}
	want := []string{"--root", "/site", "--listen", "[::]:8080", "--admin-listen", "[::]:9090", "--drain-delay", "5s", "--shutdown-timeout", "10s",
		"--tls-listen", "[::]:8443", "--tls-cert", "/etc/hyperstatic/tls/tls.crt", "--tls-key", "/etc/hyperstatic/tls/tls.key",
		"--http2=false", "--site", "/etc/hyperstatic/site/site.json"} // the https redirect and HSTS are the site value's
	if got := desired.ServerArgs(site); !reflect.DeepEqual(got, want) {
		t.Errorf("args = %q\nwant %q", got, want)
	}
	site.Spec.Service.HTTPSPort = 8443

	pod := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec
	c := pod.Containers[0]
	if p := c.Ports[len(c.Ports)-1]; p.Name != "https" || p.ContainerPort != 8443 || p.Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v", c.Ports)
	}
	wantMount := corev1.VolumeMount{Name: "tls", MountPath: "/etc/hyperstatic/tls", ReadOnly: true}
	if m := c.VolumeMounts[len(c.VolumeMounts)-1]; m != wantMount {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	// The Secret by name only: its content (a rotation) never changes the template.
	// Only its two keys: never the rest of the Secret (issue 24).
	wantVolume := corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "docs-tls",
		Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}}}}
	if v := pod.Volumes[len(pod.Volumes)-1]; !equality.Semantic.DeepEqual(v, wantVolume) {
		t.Errorf("volumes %+v", pod.Volumes)
	}

	svc := typed[corev1.Service](t, desired.Service(site))
	wantPorts := []corev1.ServicePort{
		{Name: "http", Protocol: "TCP", AppProtocol: ptr.To("http"), Port: 80, TargetPort: intstr.FromString("http")},
		{Name: "https", Protocol: "TCP", AppProtocol: ptr.To("https"), Port: 8443, TargetPort: intstr.FromString("https")},
	}
	if !reflect.DeepEqual(svc.Spec.Ports, wantPorts) {
		t.Errorf("service ports %+v", svc.Spec.Ports)
	}
	if got := desired.HTTPSURL(site); got != "https://docs.web.svc.cluster.local:8443" {
		t.Errorf("https url %s", got)
	}
	site.Spec.Service.HTTPSPort = 0
	if got := desired.HTTPSURL(site); got != "https://docs.web.svc.cluster.local" {
		t.Errorf("https url %s", got)
	}

	// Without spec.tls: none of it.
	site.Spec.TLS = nil
	pod = deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template.Spec
	for _, v := range pod.Volumes {
		if v.Name == "tls" {
			t.Error("tls volume without spec.tls")
		}
	}
	if len(typed[corev1.Service](t, desired.Service(site)).Spec.Ports) != 1 || desired.HTTPSURL(site) != "" || strings.Contains(strings.Join(desired.ServerArgs(site), " "), "tls") {
		t.Error("TLS parts without spec.tls")
	}
}

// The site's certificate lifecycle against a real API server: missing, valid, rotated, broken, expired. TLSReady
// says each; Ready stays True throughout (the pods serve); the pod template never changes after the first apply.
func TestTLSSecretLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "secure", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/secure:v1"},
		TLS: &v1alpha1.TLSSpec{SecretName: "secure-tls", HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 300}}})
	tlsReady := func(status metav1.ConditionStatus, reason, substr string) func(*v1alpha1.StaticSite) error {
		return conditionWith(v1alpha1.ConditionTLSReady, status, reason, substr)
	}
	waitSite(t, ns, "secure", "TLSReady False SecretNotFound", tlsReady(metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound, `Secret "secure-tls" not found`))
	waitEvent(t, ns, "secure", "Warning SecretNotFound TLSReady False: Secret \"secure-tls\" not found")

	d := getDeployment(t, ns, "secure")
	args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--tls-listen [::]:8443 --tls-cert /etc/hyperstatic/tls/tls.crt --tls-key /etc/hyperstatic/tls/tls.key --site ") {
		t.Errorf("args %s", args)
	}
	// HSTS is the site value's.
	if got := siteValueOf(t, ns, "secure").Data[sitevalue.Key]; got != `{"version":1,"hsts":"max-age=300"}` {
		t.Errorf("site value %s", got)
	}
	svc := &corev1.Service{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secure"}, svc))
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[1].Port != 443 || svc.Spec.Ports[1].TargetPort.StrVal != "https" {
		t.Errorf("service ports %+v", svc.Spec.Ports)
	}
	// A missing certificate is not an outage of the pods that run: Ready follows the rollout only.
	if s := rollOutAndWaitReady(t, ns, "secure"); s.Status.HTTPSURL != "https://secure."+ns+".svc.cluster.local" {
		t.Errorf("httpsURL %q", s.Status.HTTPSURL)
	}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
	generation, template := d.Generation, d.Spec.Template.DeepCopy()

	notAfter := clockTime.Add(90 * 24 * time.Hour).Truncate(time.Second)
	crt, key := testCert(t, clockTime.Add(-time.Hour), notAfter, "secure.example.com")
	secret := tlsSecret(ns, "secure-tls", crt, key)
	testenv.Must(t, k8s.Create(ctx, secret))
	waitSite(t, ns, "secure", "TLSReady True", tlsReady(metav1.ConditionTrue, v1alpha1.ReasonCertificateValid,
		"certificate for secure.example.com from Secret \"secure-tls\", valid until "+notAfter.UTC().Format(time.RFC3339)))
	waitEvent(t, ns, "secure", "Normal CertificateValid TLSReady again")

	// cert-manager renews: new certificate and key in the same Secret.
	renewed := clockTime.Add(180 * 24 * time.Hour).Truncate(time.Second)
	crt2, key2 := testCert(t, clockTime.Add(-time.Minute), renewed, "secure.example.com", "www.secure.example.com")
	secret.Data = map[string][]byte{corev1.TLSCertKey: crt2, corev1.TLSPrivateKeyKey: key2}
	testenv.Must(t, k8s.Update(ctx, secret))
	waitSite(t, ns, "secure", "TLSReady names the renewed certificate", tlsReady(metav1.ConditionTrue, v1alpha1.ReasonCertificateValid,
		"secure.example.com, www.secure.example.com from Secret \"secure-tls\", valid until "+renewed.UTC().Format(time.RFC3339)))

	// A broken renewal (key of another certificate): said, Warning, still Ready.
	_, wrongKey := testCert(t, clockTime.Add(-time.Minute), renewed, "other.example")
	secret.Data[corev1.TLSPrivateKeyKey] = wrongKey
	testenv.Must(t, k8s.Update(ctx, secret))
	waitSite(t, ns, "secure", "TLSReady False InvalidCertificate", tlsReady(metav1.ConditionFalse, v1alpha1.ReasonInvalidCertificate, "private key does not match public key"))
	waitEvent(t, ns, "secure", "Warning InvalidCertificate TLSReady False: Secret \"secure-tls\": tls: private key does not match public key")

	// An expired one.
	oldCrt, oldKey := testCert(t, clockTime.Add(-48*time.Hour), clockTime.Add(-time.Hour), "secure.example.com")
	secret.Data = map[string][]byte{corev1.TLSCertKey: oldCrt, corev1.TLSPrivateKeyKey: oldKey}
	testenv.Must(t, k8s.Update(ctx, secret))
	s := waitSite(t, ns, "secure", "TLSReady False expired", tlsReady(metav1.ConditionFalse, v1alpha1.ReasonInvalidCertificate, "expired at"))
	if err := condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
		t.Errorf("a bad certificate changed Ready: %v", err)
	}

	// None of it touched the pod template: the kubelet updates the mounted files, the servers reload them.
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
	if d.Generation != generation || !equality.Semantic.DeepEqual(&d.Spec.Template, template) {
		t.Errorf("the Deployment changed with the Secret: generation %d -> %d", generation, d.Generation)
	}

	// spec.tls removed: condition, port, URL and arguments go.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.TLS = nil })
	waitSite(t, ns, "secure", "no TLSReady", func(s *v1alpha1.StaticSite) error {
		if s.Status.HTTPSURL != "" {
			return fmt.Errorf("httpsURL %q", s.Status.HTTPSURL)
		}
		return condition(s, v1alpha1.ConditionTLSReady, "", "")
	})
	testenv.Eventually(t, "Service without https", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc))
		if len(svc.Spec.Ports) != 1 {
			return fmt.Errorf("ports %+v", svc.Spec.Ports)
		}
		return nil
	})
}

func TestInvalidExposureIsRefused(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:v1"}
	nginx := ptr.To("nginx")
	hosts := []v1alpha1.Hostname{"www.example.com"}
	for _, tc := range []struct {
		name string
		spec v1alpha1.StaticSiteSpec
		want string
	}{
		{"no secret name", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{}}, "spec.tls must set exactly one of secretName"},
		{"secret name and issuer", v1alpha1.StaticSiteSpec{Content: img, Hostnames: hosts, TLS: &v1alpha1.TLSSpec{SecretName: "s",
			IssuerRef: &v1alpha1.IssuerReference{Name: "ca"}}}, "spec.tls must set exactly one of secretName"},
		{"issuer without hostnames", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: "ca"}}},
			"spec.tls.issuerRef needs spec.hostnames"},
		{"issuer without name", v1alpha1.StaticSiteSpec{Content: img, Hostnames: hosts, TLS: &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{}}},
			"spec.tls.issuerRef.name"},
		{"bad issuer kind", v1alpha1.StaticSiteSpec{Content: img, Hostnames: hosts, TLS: &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: "ca",
			Kind: "cluster issuer"}}}, "spec.tls.issuerRef.kind"},
		{"bad secret name", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{SecretName: "Bad_Name"}}, "spec.tls.secretName"},
		{"preload without subdomains", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{SecretName: "s", HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 31536000, Preload: true}}},
			"spec.tls.hsts.preload needs includeSubDomains"},
		{"negative max-age", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{SecretName: "s", HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: -1}}}, "spec.tls.hsts.maxAgeSeconds"},
		{"https port is the http port", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Port: 8000, HTTPSPort: 8000}}, "spec.service.httpsPort must differ from spec.service.port"},
		{"https port is the admin port", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{HTTPSPort: 9090}}, "spec.service.httpsPort must not be 9090"},
		{"bad hostname", v1alpha1.StaticSiteSpec{Content: img, Hostnames: []v1alpha1.Hostname{"Not A Host"}}, "spec.hostnames[0]"},
		{"route without hostnames", v1alpha1.StaticSiteSpec{Content: img, Route: &v1alpha1.RouteSpec{IngressClassName: nginx}}, "spec.route needs spec.hostnames"},
		{"route of both kinds", v1alpha1.StaticSiteSpec{Content: img, Hostnames: hosts, Route: &v1alpha1.RouteSpec{IngressClassName: nginx,
			ParentRefs: []v1alpha1.ParentReference{{Name: "gw"}}}}, "spec.route must set exactly one of ingressClassName, parentRefs"},
		{"route of no kind", v1alpha1.StaticSiteSpec{Content: img, Hostnames: hosts, Route: &v1alpha1.RouteSpec{}}, "spec.route must set exactly one of ingressClassName, parentRefs"},
		{"redirect behind a route", v1alpha1.StaticSiteSpec{Content: img, Hostnames: hosts, Route: &v1alpha1.RouteSpec{IngressClassName: nginx},
			TLS: &v1alpha1.TLSSpec{SecretName: "s", HTTPRedirect: true}}, "spec.tls.httpRedirect cannot be used with spec.route"},
		{"parent without name", v1alpha1.StaticSiteSpec{Content: img, Hostnames: hosts, Route: &v1alpha1.RouteSpec{ParentRefs: []v1alpha1.ParentReference{{}}}}, "spec.route.parentRefs[0].name"},
		{"bad scrape interval", v1alpha1.StaticSiteSpec{Content: img, Monitoring: &v1alpha1.MonitoringSpec{Interval: "soon"}}, "spec.monitoring.interval"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, ns, tc.spec, tc.want) })
	}
}
