//go:build certmanager

package staticsite

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The real cert-manager (its own controllers of testenv.CertManagerVersion(), wired by e2e/kind/certmanager and
// built from the Go module proxy: make cert-manager-build) against the suite's API server, with a self-signed CA
// ClusterIssuer: it issues the site's certificate into the Secret the pods mount, and the site says so. Built only
// with the tag certmanager (make go-test-cert-manager), which hands the binary over in HYPERSTATIC_CERT_MANAGER_BIN;
// under the tag a missing binary fails the test.
func TestRealCertManagerIssues(t *testing.T) {
	bin := os.Getenv("HYPERSTATIC_CERT_MANAGER_BIN")
	if bin == "" {
		t.Fatal("HYPERSTATIC_CERT_MANAGER_BIN is not set: build e2e/kind/certmanager (make cert-manager-build)")
	}
	crds, err := testenv.CertManagerCRDs()
	testenv.Must(t, err)
	env.InstallCRD(t, crds)
	t.Cleanup(func() { env.UninstallCRD(t, crds) })
	ctx := context.Background()

	// cert-manager's namespace: where a ClusterIssuer's CA key pair lives.
	cmNamespace := namespace(t)
	startCertManager(t, bin, cmNamespace)

	// A self-signed ClusterIssuer signs a CA certificate; the CA ClusterIssuer signs with it.
	create := func(obj map[string]any) {
		t.Helper()
		testenv.Must(t, k8s.Create(ctx, &unstructured.Unstructured{Object: obj}))
	}
	issuerRef := func(name string) map[string]any {
		return map[string]any{"name": name, "kind": "ClusterIssuer", "group": "cert-manager.io"}
	}
	create(map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": map[string]any{"name": "hyperstatic-selfsigned"},
		"spec": map[string]any{"selfSigned": map[string]any{}}})
	create(map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "test-ca", "namespace": cmNamespace},
		"spec": map[string]any{"isCA": true, "commonName": "hyperstatic test CA", "secretName": "test-ca",
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)}, "issuerRef": issuerRef("hyperstatic-selfsigned")}})
	caSecret := &corev1.Secret{}
	testenv.Eventually(t, "the CA's Secret", func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: cmNamespace, Name: "test-ca"}, caSecret)
	})
	create(map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": map[string]any{"name": suiteClusterIssuer},
		"spec": map[string]any{"ca": map[string]any{"secretName": "test-ca"}}})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caSecret.Data[corev1.TLSCertKey]) {
		t.Fatalf("the CA Secret's tls.crt holds no certificate")
	}

	ns := namespace(t)
	host := "www." + ns + ".example.com"
	createSite(t, ns, "issued", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/issued:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname(host)},
		TLS:       &v1alpha1.TLSSpec{IssuerRef: &v1alpha1.IssuerReference{Name: suiteClusterIssuer, Kind: v1alpha1.ClusterIssuerKind}}})
	waitSite(t, ns, "issued", "CertificateReady True", certificateReady(metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued, ""))
	leaf := issuedLeaf(t, ns, "issued-tls")
	// cert-manager signs at the wall clock, the suite's operator runs on its fake one (clockTime): TLSReady judges
	// the certificate's validity at the operator's clock, so it is set within the certificate's validity.
	suiteClock.SetTime(leaf.NotBefore.Add(time.Minute))
	t.Cleanup(func() { suiteClock.SetTime(clockTime) })
	waitSite(t, ns, "issued", "TLSReady True", conditionWith(v1alpha1.ConditionTLSReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateValid,
		`Secret "issued-tls"`))
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
		t.Errorf("the issued certificate does not verify for %s against the CA alone: %v", host, err)
	}
	if !reflect.DeepEqual(leaf.DNSNames, []string{host}) {
		t.Errorf("DNS names %v, want [%s]", leaf.DNSNames, host)
	}
	// cert-manager records the revision just after Ready (internal/certmanager): waited for, not read once.
	waitSite(t, ns, "issued", "status.certificate of the issued certificate", func(s *v1alpha1.StaticSite) error {
		if c := s.Status.Certificate; c == nil || c.NotAfter == nil || !c.NotAfter.Time.Equal(leaf.NotAfter) || c.Revision == nil || *c.Revision != 1 {
			return fmt.Errorf("status.certificate %+v, the certificate's notAfter %s", c, leaf.NotAfter)
		}
		return nil
	})
	waitEvent(t, ns, "issued", "Normal CertificateIssued CertificateReady: Certificate issued is issued")

	// A forced renewal, as `cmctl renew` asks for one: a new certificate in the same Secret, revision 2.
	certManagerSaysIssuing(t, ns, "issued")
	waitSite(t, ns, "issued", "revision 2", func(s *v1alpha1.StaticSite) error {
		if c := s.Status.Certificate; c == nil || c.Revision == nil || *c.Revision != 2 {
			return fmt.Errorf("status.certificate %+v", c)
		}
		return condition(s, v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
	})
	if renewed := issuedLeaf(t, ns, "issued-tls"); renewed.SerialNumber.Cmp(leaf.SerialNumber) == 0 {
		t.Errorf("the Secret holds the same certificate (serial %s) after the renewal", leaf.SerialNumber)
	}
}

// startCertManager runs the controller binary against the suite's API server until the test ends; its log goes to
// the test's output when the test fails.
func startCertManager(t *testing.T, bin, clusterResourceNamespace string) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	testenv.Must(t, clientcmd.WriteToFile(*kc, kubeconfig))
	logPath := filepath.Join(dir, "cert-manager.log")
	logFile, err := os.Create(logPath)
	testenv.Must(t, err)
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--cluster-resource-namespace", clusterResourceNamespace)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	testenv.Must(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				const tail = 8 << 10
				if len(b) > tail {
					b = b[len(b)-tail:]
				}
				t.Logf("cert-manager's log (last %d bytes):\n%s", len(b), b)
			}
		}
	})
}

// issuedLeaf is the first certificate of the Secret's tls.crt.
func issuedLeaf(t *testing.T, ns, name string) *x509.Certificate {
	t.Helper()
	s := &corev1.Secret{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s))
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if block == nil {
		t.Fatalf("Secret %s/%s: tls.crt holds no PEM block", ns, name)
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	testenv.Must(t, err)
	return leaf
}

// certManagerSaysIssuing sets the Certificate's Issuing condition as `cmctl renew` does (reason ManuallyTriggered):
// cert-manager issues a new certificate at once.
func certManagerSaysIssuing(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, "Issuing=True ManuallyTriggered", func() error {
		c, err := getCertificate(ns, name)
		if err != nil {
			return err
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
			return err
		}
		return k8s.Status().Update(context.Background(), c)
	})
}
