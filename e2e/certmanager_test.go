//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// cert-manager as a platform runs it, deployed by the certificate scenario (21) into the scenario's namespace: its
// own certificate and issuer controllers (e2e/kind/certmanager, built on the host from the Go module proxy like
// Traefik: make/certmanager.mk), the CRDs of the same release from its module, and the RBAC its chart gives those
// controllers. No webhook and no cainjector: a self-signed and a CA issuer need neither.
const (
	certManagerName = "cert-manager"
	// e2eClusterIssuer is the CA ClusterIssuer sites name. The chart's tenancy policy offers it (helmInstallArgs):
	// by default a site may only name Issuers of its own namespace.
	e2eClusterIssuer = "hyperstatic-e2e-ca"
	// e2eSelfSignedIssuer signs the CA's own certificate.
	e2eSelfSignedIssuer = "hyperstatic-e2e-selfsigned"
)

var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// certManagerCertificateLoad is tlsLoadScript (tls_test.go) for a site known by its hostname only: k6 resolves
// HOST to ADDR (the site Service's cluster IP) itself, so TLS checks the certificate against the hostname the
// Certificate names, with a new connection (a full handshake) per request.
const certManagerCertificateLoad = `import http from 'k6/http';

export const options = {
  noConnectionReuse: true,
  hosts: { [__ENV.HOST]: __ENV.ADDR },
  summaryTrendStats: ['avg', 'p(99)', 'max'],
  scenarios: {
    load: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION,
      preAllocatedVUs: 20, maxVUs: 20,
    },
  },
};

export default function () { http.get('https://' + __ENV.HOST + '/'); }

function count(m) { return m ? m.values.count : 0; }

export function handleSummary(data) {
  const m = data.metrics;
  const failed = m.http_req_failed ? m.http_req_failed.values.passes : -1;
  const out = { requests: count(m.http_reqs), failed: failed, dropped: count(m.dropped_iterations),
    p99ms: m.http_req_duration ? m.http_req_duration.values['p(99)'] : 0 };
  return { stdout: 'K6RESULT ' + JSON.stringify(out) + '\n' };
}
`

// testCertManagerRenewalUnderLoad: with cert-manager installed after the operator (its CRDs appear mid-run, as on
// a platform that adds it later), a site whose spec.tls names a CA ClusterIssuer gets a Certificate for its
// hostname; cert-manager issues it, the pods mount its Secret, and a client that trusts only that CA gets the page
// over HTTPS by the hostname. Then a renewal, forced as `cmctl renew` forces one, while k6 makes a new TLS
// connection for every request: the new certificate is served, not one request fails, no pod restarts or rolls,
// and the site's status counts the new revision.
func testCertManagerRenewalUnderLoad(t *testing.T) {
	if cfg.certManagerImage == "" {
		// CI must run every scenario: a skipped one there would pass a green run without testing certificates.
		if os.Getenv("CI") == "true" {
			t.Fatal("the certificate scenario needs cert-manager's image, and CI=true does not allow skipping: run `make e2e` (E2E_CERT_MANAGER defaults to 1)")
		}
		t.Skip("SKIPPED: the certificate scenario needs cert-manager's image: run `make e2e` without E2E_CERT_MANAGER=0 (make/certmanager.mk)")
	}
	requireOperator(t)
	ns := newNamespace(t, "certmgr", false)
	ctx := ctxFor(t, 12*time.Minute)
	installCertManagerCRDs(t)
	deployCertManager(t, ns)
	ca, caPEM := caClusterIssuer(t, ns)

	site := newLoadSite(ns, syntheticSite("issued", cfg.siteImage), "200m")
	host := "issued-" + ns + ".e2e.test"
	site.Spec.Hostnames = []v1alpha1.Hostname{v1alpha1.Hostname(host)}
	site.Spec.TLS = &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: e2eClusterIssuer, Kind: v1alpha1.ClusterIssuerKind}}
	created := time.Now()
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	waitSiteReady(t, ns, site.Name, 4*time.Minute)
	first := waitCertificateRevision(t, ns, site.Name, 1)
	t.Logf("MEASURED cert-manager: site created → certificate issued and the site Ready in %s", time.Since(created).Round(time.Second))
	leaf := secretLeaf(ctx, t, ns, first.SecretName)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca, DNSName: host}); err != nil {
		t.Fatalf("the issued certificate does not verify for %s against the CA alone: %v", host, err)
	}
	svc, err := cs.CoreV1().Services(ns).Get(ctx, site.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// By the hostname, dialled at the Service: the client trusts only the CA and checks the hostname.
	url, connect := "https://"+host+"/", fmt.Sprintf("%s.%s.svc:443", site.Name, ns)
	ok, res := fetch(t, ns, "fetch-issued", 2*time.Minute, "-ca-pem", caPEM, "-connect", connect, url)
	if !ok || len(res) != 2 || res[1].Status != 200 || res[1].CertSerial != leaf.SerialNumber.Text(16) {
		t.Fatalf("https GET of %s with the issued certificate: ok=%v %+v (serial want %s)", host, ok, res, leaf.SerialNumber.Text(16))
	}
	t.Logf("https by hostname %s: %s, issued certificate serial %s", host, res[1].TLSVersion, res[1].CertSerial)
	podsBefore := sitePods(ctx, t, ns, site.Name)
	generation := deploymentGeneration(ctx, t, ns, site.Name)

	runK6With(t, ns, "cm-load", map[string]string{"load.js": certManagerCertificateLoad, "ca.pem": caPEM}, []corev1.EnvVar{
		{Name: "HOST", Value: host}, {Name: "ADDR", Value: svc.Spec.ClusterIP},
		{Name: "RATE", Value: "40"}, {Name: "DURATION", Value: "150s"},
		{Name: "SSL_CERT_FILE", Value: "/scripts/ca.pem"},
	}, 150*time.Second)
	time.Sleep(15 * time.Second) // requests on the first certificate before the renewal

	renewAsked := time.Now()
	requestRenewal(t, ns, site.Name)
	second := waitCertificateRevision(t, ns, site.Name, 2)
	renewed := secretLeaf(ctx, t, ns, second.SecretName)
	if renewed.SerialNumber.Cmp(leaf.SerialNumber) == 0 {
		t.Fatalf("the Secret holds the same certificate (serial %s) after the renewal", leaf.SerialNumber.Text(16))
	}
	t.Logf("MEASURED cert-manager renewal: asked → revision 2 in the site's status in %s", time.Since(renewAsked).Round(time.Second))
	waitSiteEvent(t, ns, site.Name, "CertificateRenewed", renewAsked, time.Minute)
	// The kubelet refreshes Secret volumes on its sync period (about a minute), the server checks once a second.
	ok, res = fetch(t, ns, "fetch-renewed", 3*time.Minute, "-ca-pem", caPEM, "-connect", connect,
		"-want-serial", renewed.SerialNumber.Text(16), "-poll", "150s", url)
	if !ok || len(res) != 2 || res[1].CertSerial != renewed.SerialNumber.Text(16) {
		t.Fatalf("the renewed certificate was not served: ok=%v %+v", ok, res)
	}
	t.Logf("MEASURED cert-manager renewal: asked → renewed certificate served in %s", time.Since(renewAsked).Round(time.Second))

	r := loadResult(t, ns, "cm-load", 5*time.Minute)
	t.Logf("MEASURED cert-manager renewal under load: k6 (new TLS connection per request, by hostname): %d requests, %d failed, %d dropped, p99 %.1f ms",
		r.Requests, r.Failed, r.Dropped, r.P99ms)
	if r.Requests == 0 || r.Failed != 0 {
		t.Errorf("want zero failed requests out of many, got %d failed of %d", r.Failed, r.Requests)
	}
	podsAfter := sitePods(ctx, t, ns, site.Name)
	if len(podsAfter) != len(podsBefore) {
		t.Fatalf("pods before %d, after %d", len(podsBefore), len(podsAfter))
	}
	for i := range podsAfter {
		if podsAfter[i].UID != podsBefore[i].UID || restarts(&podsAfter[i]) != 0 {
			t.Errorf("pod %s replaced or restarted during the renewal (restarts %d)", podsAfter[i].Name, restarts(&podsAfter[i]))
		}
	}
	if g := deploymentGeneration(ctx, t, ns, site.Name); g != generation {
		t.Errorf("the renewal changed the Deployment (generation %d → %d): it must not roll the pods", generation, g)
	}
}

// installCertManagerCRDs installs cert-manager's CRDs of the release e2e/kind/certmanager builds and waits until
// they are served. They stay, like a cluster's cert-manager: the operator's watch of the Certificate CRD (by name)
// wakes the sites that wait for it.
func installCertManagerCRDs(t *testing.T) {
	t.Helper()
	dir, err := testenv.CertManagerCRDs()
	if err != nil {
		t.Fatalf("cert-manager CRDs: %v", err)
	}
	crds, err := envtest.InstallCRDs(rcfg, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true})
	if err != nil {
		t.Fatalf("install cert-manager's CRDs from %s: %v", dir, err)
	}
	t.Logf("cert-manager CRDs installed from %s: %d", dir, len(crds))
}

// deployCertManager runs cert-manager's controllers in ns (also its cluster resource namespace: where a
// ClusterIssuer's CA key pair lives) with the cluster-wide RBAC its chart gives them, and waits until the pod runs.
func deployCertManager(t *testing.T, ns string) {
	t.Helper()
	ctx := ctxFor(t, 3*time.Minute)
	clusterName := "e2e-cert-manager-" + ns
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: certManagerName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterName}, Rules: certManagerClusterRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: clusterName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: certManagerName}},
		},
		certManagerDeployment(ns),
	}
	for _, o := range objects {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
		if o.GetNamespace() == "" { // the namespace's deletion takes the others
			t.Cleanup(func() {
				if err := k8s.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %T %s: %v", o, o.GetName(), err)
				}
			})
		}
	}
	eventually(t, 2*time.Minute, "cert-manager running", func(ctx context.Context) (bool, string, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: certManagerName}, d); err != nil {
			return false, err.Error(), nil
		}
		return d.Status.AvailableReplicas == 1, fmt.Sprintf("available replicas %d", d.Status.AvailableReplicas), nil
	})
}

// certManagerClusterRules are the rules cert-manager's chart gives the controllers e2e/kind/certmanager runs
// (issuers, clusterissuers, certificates, approve:cert-manager-io), merged.
func certManagerClusterRules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"cert-manager.io"}, Resources: []string{"issuers", "clusterissuers", "certificates", "certificaterequests"},
			Verbs: append(read, "update", "patch")},
		{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificaterequests"}, Verbs: []string{"create", "delete"}},
		{APIGroups: []string{"cert-manager.io"}, Resources: []string{"issuers/status", "clusterissuers/status", "certificates/status", "certificaterequests/status"},
			Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates/finalizers", "certificaterequests/finalizers"}, Verbs: []string{"update"}},
		{APIGroups: []string{"cert-manager.io"}, Resources: []string{"signers"}, Verbs: []string{"approve"}},
		{APIGroups: []string{"acme.cert-manager.io"}, Resources: []string{"orders"}, Verbs: append(read, "create", "delete")},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: append(read, "create", "update", "patch", "delete")},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// certManagerDeployment: one pod of cert-manager's controllers under the restricted Pod Security Standard (it
// listens on nothing and writes no file).
func certManagerDeployment(ns string) *appsv1.Deployment {
	c := restrictedContainer(certManagerName, cfg.certManagerImage, "--cluster-resource-namespace="+ns)
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	c.Resources = corev1.ResourceRequirements{Requests: res, Limits: corev1.ResourceList{corev1.ResourceMemory: res[corev1.ResourceMemory]}}
	labels := map[string]string{"app": certManagerName}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: certManagerName},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{ServiceAccountName: certManagerName, Containers: []corev1.Container{c}},
			},
		},
	}
}

// caClusterIssuer makes the CA ClusterIssuer sites name, as a platform bootstraps a private CA with cert-manager: a
// self-signed ClusterIssuer signs the CA's certificate (a Certificate with isCA in cert-manager's cluster resource
// namespace ns), and the CA ClusterIssuer signs with that key pair. It returns the pool of that CA alone and its
// certificate (PEM) for the clients. Both ClusterIssuers are deleted at the end.
func caClusterIssuer(t *testing.T, ns string) (*x509.CertPool, string) {
	t.Helper()
	ctx := ctxFor(t, 3*time.Minute)
	create := func(obj map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: obj}
		if err := k8s.Create(ctx, u); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetNamespace() == "" {
			t.Cleanup(func() {
				if err := k8s.Delete(context.Background(), u); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %s %s: %v", u.GetKind(), u.GetName(), err)
				}
			})
		}
	}
	clusterIssuer := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	create(clusterIssuer(e2eSelfSignedIssuer, map[string]any{"selfSigned": map[string]any{}}))
	create(map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "e2e-ca", "namespace": ns},
		"spec": map[string]any{"isCA": true, "commonName": "hyperstatic e2e CA", "secretName": "e2e-ca",
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  map[string]any{"name": e2eSelfSignedIssuer, "kind": "ClusterIssuer", "group": "cert-manager.io"}}})
	var caSecret corev1.Secret
	eventually(t, 2*time.Minute, "the CA's Secret issued by the self-signed ClusterIssuer", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "e2e-ca"}, &caSecret)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(caSecret.Data[corev1.TLSCertKey]) > 0, "tls.crt empty", nil
	})
	create(clusterIssuer(e2eClusterIssuer, map[string]any{"ca": map[string]any{"secretName": "e2e-ca"}}))
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caSecret.Data[corev1.TLSCertKey]) {
		t.Fatal("the CA Secret's tls.crt holds no certificate")
	}
	return roots, string(caSecret.Data[corev1.TLSCertKey])
}

// waitCertificateRevision waits until the site reports revision rev of its certificate with CertificateReady True,
// and returns that status.
func waitCertificateRevision(t *testing.T, ns, name string, rev int) v1alpha1.CertificateStatus {
	t.Helper()
	var got v1alpha1.CertificateStatus
	eventually(t, 3*time.Minute, fmt.Sprintf("certificate revision %d of %s/%s", rev, ns, name), func(ctx context.Context) (bool, string, error) {
		s := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionCertificateReady)
		st := s.Status.Certificate
		if st == nil || st.Revision == nil || int(*st.Revision) != rev || c == nil || c.Status != metav1.ConditionTrue {
			return false, fmt.Sprintf("status.certificate %+v, %s", st, condString(c)), nil
		}
		got = *st
		return true, "", nil
	})
	return got
}

// secretLeaf is the first certificate of the Secret's tls.crt.
func secretLeaf(ctx context.Context, t *testing.T, ns, name string) *x509.Certificate {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if block == nil {
		t.Fatalf("Secret %s/%s: tls.crt holds no PEM block", ns, name)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// requestRenewal asks cert-manager for a new certificate now, as `cmctl renew` does: the Certificate's Issuing
// condition True with reason ManuallyTriggered, written to its status.
func requestRenewal(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, "Issuing=True ManuallyTriggered on Certificate "+ns+"/"+name, func(ctx context.Context) (bool, string, error) {
		c := &unstructured.Unstructured{}
		c.SetGroupVersionKind(certificateGVK)
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err.Error(), nil
		}
		var conds []any
		old, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
		for _, o := range old {
			if m, ok := o.(map[string]any); !ok || m["type"] != "Issuing" {
				conds = append(conds, o)
			}
		}
		conds = append(conds, map[string]any{"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
			"message": "Certificate re-issuance manually triggered", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
		if err := unstructured.SetNestedSlice(c.Object, conds, "status", "conditions"); err != nil {
			return false, "", err
		}
		if err := k8s.Status().Update(ctx, c); err != nil {
			return false, err.Error(), nil // a conflict with cert-manager's own write: read again
		}
		return true, "", nil
	})
}
