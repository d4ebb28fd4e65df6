package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Third-party CRDs the operator writes objects of when they are installed: the real files, from the projects' Go
// modules on the module proxy (`go mod download` into the module cache, like the Kubernetes sources the envtest
// binaries are built from), never hand-written copies.
//
// The Gateway API is a dependency of the operator (its Go types), so its version is go.mod's. The Prometheus
// Operator's module is only a source of CRD files here (the operator writes PodMonitors unstructured), pinned:
const PrometheusOperatorVersion = "v0.85.0"

// cert-manager's module is a source of CRD files (the operator writes Certificates unstructured) and of the
// controllers e2e/kind/certmanager runs; its go.mod is the one pin of the release, read here.
var certManagerRequire = regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/cert-manager/cert-manager (v\S+)`)

// CertManagerVersion is the cert-manager release e2e/kind/certmanager/go.mod requires.
func CertManagerVersion() (string, error) {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "e2e", "kind", "certmanager", "go.mod"))
	if err != nil {
		return "", err
	}
	m := certManagerRequire.FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("e2e/kind/certmanager/go.mod requires no github.com/cert-manager/cert-manager")
	}
	return string(m[1]), nil
}

// GatewayAPIStandardCRDs is the directory of the Gateway API's standard-channel CRDs (GatewayClass, Gateway,
// HTTPRoute, ...) of go.mod's version: what a cluster installs for an implementation of that version.
func GatewayAPIStandardCRDs() (string, error) {
	dir, err := moduleDir("sigs.k8s.io/gateway-api", "")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "crd", "standard"), nil
}

// HTTPRouteCRD is the path of the Gateway API's HTTPRoute CRD (standard channel) of go.mod's version.
func HTTPRouteCRD() (string, error) {
	dir, err := GatewayAPIStandardCRDs()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "gateway.networking.k8s.io_httproutes.yaml"), nil
}

// PodMonitorCRD is the path of the Prometheus Operator's PodMonitor CRD of PrometheusOperatorVersion.
func PodMonitorCRD() (string, error) {
	dir, err := moduleDir("github.com/prometheus-operator/prometheus-operator", PrometheusOperatorVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_podmonitors.yaml"), nil
}

// CertManagerCRDs is the directory of cert-manager's CRDs of CertManagerVersion (deploy/crds holds the CRDs its
// chart is rendered from, without the chart's templating): Certificate, CertificateRequest, Issuer,
// ClusterIssuer, and ACME's Order and Challenge.
func CertManagerCRDs() (string, error) {
	version, err := CertManagerVersion()
	if err != nil {
		return "", err
	}
	dir, err := moduleDir("github.com/cert-manager/cert-manager", version)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "deploy", "crds"), nil
}

// CertificateCRD is the path of cert-manager's Certificate CRD of CertManagerVersion.
func CertificateCRD() (string, error) {
	dir, err := CertManagerCRDs()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "cert-manager.io_certificates.yaml"), nil
}

// moduleDir downloads a module into the module cache (a no-op when it is there) and returns its directory. An
// empty version means the one go.mod requires.
func moduleDir(module, version string) (string, error) {
	ref := module
	if version != "" {
		ref += "@" + version
	}
	cmd := exec.Command("go", "mod", "download", "-json", ref)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("go mod download %s: %w (%s)", ref, err, strings.TrimSpace(string(out)))
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", ref, err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", ref, m.Error)
	}
	return m.Dir, nil
}

// InstallCRD installs the CRD file and waits until it is established.
func (e *Env) InstallCRD(t testing.TB, path string) {
	t.Helper()
	_, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true})
	Must(t, err)
}

// UninstallCRD removes the CRD of the file, if installed, and waits until the API server no longer has it (its
// objects are deleted with it).
func (e *Env) UninstallCRD(t testing.TB, path string) {
	t.Helper()
	opts := envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}
	Must(t, envtest.ReadCRDFiles(&opts))
	ctx := context.Background()
	for _, crd := range opts.CRDs {
		if err := e.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		Eventually(t, "CRD "+crd.Name+" gone", func() error {
			return Gone(e.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{}))
		})
	}
}
