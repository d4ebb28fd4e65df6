package staticsite

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/certmanager"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// spec.tls.issuerRef against cert-manager's real Certificate CRD (internal/testenv, pinned release). No cert-manager
// controller runs: the tests play it by writing the Certificate's status and the Secret, as it does.

func getCertificate(ns, name string) (*unstructured.Unstructured, error) {
	c := &unstructured.Unstructured{}
	c.SetGroupVersionKind(certmanager.CertificateGVK)
	return c, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c)
}

// certManagerSays writes the Certificate's status as cert-manager would (its status subresource).
func certManagerSays(t *testing.T, ns, name string, status map[string]any) {
	t.Helper()
	testenv.Eventually(t, "Certificate status", func() error {
		c, err := getCertificate(ns, name)
		if err != nil {
			return err
		}
		c.Object["status"] = status
		return k8s.Status().Update(context.Background(), c)
	})
}

// hasSecretVolume: the pod's tls volume projects the Secret name.
func hasSecretVolume(volumes []corev1.Volume, name string) bool {
	for _, v := range volumes {
		if v.Name == "tls" && v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
	}
	return false
}

func cmCondition(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
}

// withCertManager installs the Certificate CRD for the test; removed after it, so every test starts without.
func withCertManager(t *testing.T) string {
	t.Helper()
	crd, err := testenv.CertificateCRD()
	testenv.Must(t, err)
	env.InstallCRD(t, crd)
	t.Cleanup(func() { env.UninstallCRD(t, crd) })
	return crd
}

// issuerSite creates a site that asks for a certificate and deletes it when the test ends: a site left asking for
// one is woken by every later install of cert-manager's CRD (optionalcrds.go), so under -count=20 each run's
// install would first queue the sites of every earlier run.
func issuerSite(t *testing.T, ns, name string, spec v1alpha1.StaticSiteSpec) *v1alpha1.StaticSite {
	t.Helper()
	site := createSite(t, ns, name, spec)
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), site); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete site %s: %v", name, err)
		}
	})
	return site
}

func certificateReady(status metav1.ConditionStatus, reason, substr string) func(*v1alpha1.StaticSite) error {
	return conditionWith(v1alpha1.ConditionCertificateReady, status, reason, substr)
}

// A site with an issuer reference: the operator owns a Certificate for its hostnames whose Secret the pods mount;
// cert-manager's conditions become CertificateReady (pending, issuing, issued, renewing, failing) and
// status.certificate, with events on the transitions; drift is corrected; the field removed, the Certificate goes.
func TestCertificateLifecycle(t *testing.T) {
	withCertManager(t)
	ctx := context.Background()
	ns := namespace(t)
	www, apex := "www."+ns+".example.com", ns+".example.com"
	site := issuerSite(t, ns, "shop", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/shop:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname(www), v1alpha1.Hostname(apex)},
		TLS:       &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: suiteClusterIssuer, Kind: v1alpha1.ClusterIssuerKind}}})
	waitSite(t, ns, "shop", "CertificateReady False CertificatePending", certificateReady(metav1.ConditionFalse,
		v1alpha1.ReasonCertificatePending, "cert-manager has not reported on Certificate shop yet"))

	cert, err := getCertificate(ns, "shop")
	testenv.Must(t, err)
	if !metav1.IsControlledBy(cert, site) || cert.GetLabels()[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
		t.Errorf("Certificate metadata: owners %v labels %v", cert.GetOwnerReferences(), cert.GetLabels())
	}
	spec, _, _ := unstructured.NestedMap(cert.Object, "spec")
	want := map[string]any{"secretName": "shop-tls", "dnsNames": []any{www, apex},
		"issuerRef": map[string]any{"name": suiteClusterIssuer, "kind": "ClusterIssuer", "group": "cert-manager.io"}}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("Certificate spec\n %v\nwant\n %v", spec, want)
	}
	// The pods mount the Secret the Certificate fills; TLSReady waits for it.
	d := getDeployment(t, ns, "shop")
	if v := d.Spec.Template.Spec.Volumes; !hasSecretVolume(v, "shop-tls") {
		t.Errorf("volumes %+v: no tls volume of Secret shop-tls", v)
	}
	s := waitSite(t, ns, "shop", "TLSReady False SecretNotFound", conditionWith(v1alpha1.ConditionTLSReady, metav1.ConditionFalse,
		v1alpha1.ReasonSecretNotFound, `Secret "shop-tls" not found in namespace `+ns+" (cert-manager fills it: see CertificateReady)"))
	if c := s.Status.Certificate; c == nil || c.Name != "shop" || c.SecretName != "shop-tls" || !reflect.DeepEqual(c.DNSNames, []string{www, apex}) || c.NotAfter != nil {
		t.Errorf("status.certificate %+v", c)
	}

	certManagerSays(t, ns, "shop", map[string]any{"conditions": []any{
		cmCondition("Ready", "False", "DoesNotExist", "Issuing certificate as Secret does not exist"),
		cmCondition("Issuing", "True", "DoesNotExist", "Issuing certificate as Secret does not exist")}})
	waitSite(t, ns, "shop", "CertificateReady False CertificateIssuing", certificateReady(metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuing,
		"cert-manager is issuing Certificate shop: Issuing=True DoesNotExist: Issuing certificate as Secret does not exist"))

	// Issued: the Secret and the status, as cert-manager writes them.
	notAfter := clockTime.Add(90 * 24 * time.Hour).Truncate(time.Second)
	crt, key := testCert(t, clockTime.Add(-time.Hour), notAfter, www, apex)
	testenv.Must(t, k8s.Create(ctx, tlsSecret(ns, "shop-tls", crt, key)))
	issued := func(notAfter time.Time, revision int64, conds ...any) map[string]any {
		return map[string]any{"conditions": conds, "notAfter": notAfter.Format(time.RFC3339),
			"renewalTime": notAfter.Add(-30 * 24 * time.Hour).Format(time.RFC3339), "revision": revision}
	}
	ready := cmCondition("Ready", "True", "Ready", "Certificate is up to date and has not expired")
	certManagerSays(t, ns, "shop", issued(notAfter, 1, ready))
	s = waitSite(t, ns, "shop", "CertificateReady True CertificateIssued", certificateReady(metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued,
		"Certificate shop is issued, valid until "+notAfter.Format(time.RFC3339)))
	if c := s.Status.Certificate; c == nil || c.NotAfter == nil || !c.NotAfter.Time.Equal(notAfter) || c.RenewalTime == nil || c.Revision == nil || *c.Revision != 1 {
		t.Errorf("status.certificate %+v", c)
	}
	waitSite(t, ns, "shop", "TLSReady True", conditionWith(v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid, `Secret "shop-tls"`))
	waitEvent(t, ns, "shop", "Normal CertificateIssued CertificateReady: Certificate shop is issued")

	// Renewing: the current certificate still serves (True); then renewed: a Normal event with the new expiry.
	certManagerSays(t, ns, "shop", issued(notAfter, 1, ready, cmCondition("Issuing", "True", "Renewing", "Renewing certificate as renewal was scheduled")))
	waitSite(t, ns, "shop", "CertificateReady True CertificateRenewing", certificateReady(metav1.ConditionTrue, v1alpha1.ReasonCertificateRenewing,
		"issuing its successor: Issuing=True Renewing: Renewing certificate as renewal was scheduled"))
	renewed := notAfter.Add(30 * 24 * time.Hour)
	certManagerSays(t, ns, "shop", issued(renewed, 2, ready))
	waitSite(t, ns, "shop", "renewed", func(s *v1alpha1.StaticSite) error {
		if c := s.Status.Certificate; c == nil || c.NotAfter == nil || !c.NotAfter.Time.Equal(renewed) || c.Revision == nil || *c.Revision != 2 {
			return fmt.Errorf("status.certificate %+v", c)
		}
		return condition(s, v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
	})
	waitEvent(t, ns, "shop", fmt.Sprintf("Normal CertificateRenewed Certificate shop renewed: valid until %s (was %s)",
		renewed.Format(time.RFC3339), notAfter.Format(time.RFC3339)))

	// A failing renewal: False (the current certificate expires if it goes on), a Warning with cert-manager's words.
	failed := issued(renewed, 2, ready, cmCondition("Issuing", "False", "Failed", "The certificate request has failed to complete and will be retried: the issuer refused"))
	failed["failedIssuanceAttempts"] = int64(2)
	certManagerSays(t, ns, "shop", failed)
	waitSite(t, ns, "shop", "CertificateReady False CertificateIssuanceFailed", certificateReady(metav1.ConditionFalse, v1alpha1.ReasonCertificateIssuanceFailed,
		"(2 failed attempts, retried with a backoff; Certificate shop is issued, valid until "+renewed.Format(time.RFC3339)))
	waitEvent(t, ns, "shop", "Warning CertificateIssuanceFailed CertificateReady False: cert-manager failed to issue Certificate shop")
	// Ready follows the pods only: CertificateReady is informational, like TLSReady.
	rollOutAndWaitReady(t, ns, "shop")

	// Waiting for issuance was no Warning.
	for _, e := range events(t, ns, "shop") {
		if strings.HasPrefix(e, "Warning CertificatePending") || strings.HasPrefix(e, "Warning CertificateIssuing") {
			t.Errorf("event %q: waiting for the first certificate is no warning", e)
		}
	}

	// Drift is corrected through the Certificate's watch.
	testenv.Eventually(t, "edit Certificate", func() error {
		c, err := getCertificate(ns, "shop")
		if err != nil {
			return err
		}
		testenv.Must(t, unstructured.SetNestedStringSlice(c.Object, []string{"stolen.example.org"}, "spec", "dnsNames"))
		return k8s.Update(ctx, c)
	})
	testenv.Eventually(t, "Certificate restored", func() error {
		c, err := getCertificate(ns, "shop")
		if err != nil {
			return err
		}
		if names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames"); !reflect.DeepEqual(names, []string{www, apex}) {
			return fmt.Errorf("dnsNames %v", names)
		}
		return nil
	})

	// A Secret filled by hand instead: the Certificate goes, with CertificateReady and status.certificate.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "own-tls"} })
	testenv.Eventually(t, "Certificate deleted", func() error {
		_, err := getCertificate(ns, "shop")
		return testenv.Gone(err)
	})
	waitSite(t, ns, "shop", "no CertificateReady", func(s *v1alpha1.StaticSite) error {
		if s.Status.Certificate != nil {
			return fmt.Errorf("status.certificate %+v", s.Status.Certificate)
		}
		return condition(s, v1alpha1.ConditionCertificateReady, "", "")
	})
	testenv.Eventually(t, "pods mount own-tls", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, d); err != nil {
			return err
		}
		if !hasSecretVolume(d.Spec.Template.Spec.Volumes, "own-tls") {
			return fmt.Errorf("volumes %+v", d.Spec.Template.Spec.Volumes)
		}
		return nil
	})
}

// Without cert-manager (no Certificate CRD): CertificateReady=False CertManagerNotInstalled, a Warning, and the rest
// of the site reconciles (Deployment, Service, Ready after the rollout). Installing cert-manager later is picked up
// without an edit: the CRD's watch wakes the site (TestCertificateCRDWatchQueuesTheSitesThatNeedIt sees the watch
// alone; here the site's periodic retries would also get there, only later on a busy queue).
func TestCertificateWithoutCertManager(t *testing.T) {
	crd, err := testenv.CertificateCRD()
	testenv.Must(t, err)
	env.UninstallCRD(t, crd)
	t.Cleanup(func() { env.UninstallCRD(t, crd) })

	ns := namespace(t)
	issuerSite(t, ns, "plain", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/plain:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname("plain." + ns + ".example.com")},
		TLS:       &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: "team-ca"}}})
	waitSite(t, ns, "plain", "CertificateReady False CertManagerNotInstalled", certificateReady(metav1.ConditionFalse,
		v1alpha1.ReasonCertManagerNotInstalled, "the cluster does not serve cert-manager.io/v1 Certificates"))
	waitEvent(t, ns, "plain", "Warning CertManagerNotInstalled CertificateReady False: the cluster does not serve cert-manager.io/v1 Certificates")
	if d := getDeployment(t, ns, "plain"); !hasSecretVolume(d.Spec.Template.Spec.Volumes, "plain-tls") {
		t.Errorf("volumes %+v", d.Spec.Template.Spec.Volumes)
	}
	rollOutAndWaitReady(t, ns, "plain")

	env.InstallCRD(t, crd)
	waitSite(t, ns, "plain", "CertificateReady False CertificatePending", certificateReady(metav1.ConditionFalse, v1alpha1.ReasonCertificatePending, ""))
	c, err := getCertificate(ns, "plain")
	testenv.Must(t, err)
	if ref, _, _ := unstructured.NestedStringMap(c.Object, "spec", "issuerRef"); !reflect.DeepEqual(ref, map[string]string{"name": "team-ca", "kind": "Issuer", "group": "cert-manager.io"}) {
		t.Errorf("issuerRef %v", ref)
	}
}

// The tenancy policy refuses a ClusterIssuer it does not list, naming the field: Stalled, no Certificate, no
// Deployment. The namespace's own Issuer is allowed.
func TestCertificatePolicy(t *testing.T) {
	withCertManager(t)
	ns := namespace(t)
	site := issuerSite(t, ns, "greedy", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/greedy:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname("greedy." + ns + ".example.com")},
		TLS:       &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: "letsencrypt-prod", Kind: v1alpha1.ClusterIssuerKind}}})
	waitSite(t, ns, "greedy", "Stalled by the policy", conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPolicyViolation,
		`spec.tls.issuerRef.name: ClusterIssuer "letsencrypt-prod" is not allowed (allowed: `+suiteClusterIssuer))
	if _, err := getCertificate(ns, "greedy"); testenv.Gone(err) != nil {
		t.Errorf("a Certificate for a refused issuer (or %v)", err)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "greedy"}, &appsv1.Deployment{}); testenv.Gone(err) != nil {
		t.Errorf("a Deployment for a refused site (or %v)", err)
	}

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.TLS.IssuerRef = &v1alpha1.IssuerReference{Name: "team-ca"} })
	waitSite(t, ns, "greedy", "CertificateReady with the namespace's Issuer", certificateReady(metav1.ConditionFalse, v1alpha1.ReasonCertificatePending, ""))
	waitSite(t, ns, "greedy", "not Stalled", func(s *v1alpha1.StaticSite) error { return condition(s, v1alpha1.ConditionStalled, "", "") })
}

// A certificate is a claim on its names: a hostname another site holds is left out of the Certificate (the
// condition names it and its holder), and with none held there is no Certificate at all. A site without a route
// reports the conflict in CertificateReady, not in RouteApplied.
func TestCertificateOnlyForHeldHostnames(t *testing.T) {
	withCertManager(t)
	ns := namespace(t)
	taken, free := "taken."+ns+".example.com", "free."+ns+".example.com"
	routedSite(t, ns, "holder", taken)
	waitSite(t, ns, "holder", "holds its hostname", func(s *v1alpha1.StaticSite) error {
		if !reflect.DeepEqual(s.Status.Hostnames, []string{taken}) {
			return fmt.Errorf("status.hostnames %v", s.Status.Hostnames)
		}
		return nil
	})

	late := issuerSite(t, ns, "late", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/late:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname(taken), v1alpha1.Hostname(free)},
		TLS:       &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: "team-ca"}}})
	s := waitSite(t, ns, "late", "CertificateReady names the holder", certificateReady(metav1.ConditionFalse, v1alpha1.ReasonCertificatePending,
		ns+"/holder"))
	if err := condition(s, v1alpha1.ConditionRouteApplied, "", ""); err != nil {
		t.Errorf("a site without a route: %v", err)
	}
	c, err := getCertificate(ns, "late")
	testenv.Must(t, err)
	if names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames"); !reflect.DeepEqual(names, []string{free}) {
		t.Errorf("dnsNames %v, want only %s", names, free)
	}

	updateSite(t, late, func(s *v1alpha1.StaticSite) { s.Spec.Hostnames = []v1alpha1.Hostname{v1alpha1.Hostname(taken)} })
	waitSite(t, ns, "late", "CertificateReady False NoHostnameHeld", certificateReady(metav1.ConditionFalse, v1alpha1.ReasonCertificateNoHostname,
		"no Certificate: the site holds none of its hostnames"))
	testenv.Eventually(t, "Certificate deleted", func() error {
		_, err := getCertificate(ns, "late")
		return testenv.Gone(err)
	})
}
