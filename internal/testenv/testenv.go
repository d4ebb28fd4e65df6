// Package testenv starts a real kube-apiserver and etcd (controller-runtime's envtest) with the Hyperstatic CRDs
// installed, for the controller test suites. The binaries come from KUBEBUILDER_ASSETS, which `make go-test`
// sets (they are built from the Go module proxy: see make/cluster.mk). A suite run without them fails loudly:
// it never skips, so a green run always means the API server was real.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Env is a running API server with a client for it.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	env    *envtest.Environment
}

// Start starts the API server and installs the CRDs from config/crd/bases.
func Start() (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the suite with `make go-test`, which builds kube-apiserver and etcd")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// Kinds whose CRDs suites install and remove (crds.go): the operator's optional children and the CRDs themselves.
	if err := gatewayv1.Install(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	// envtest has no garbage collector or namespace controller: every Service a suite creates keeps its cluster IP
	// until the API server stops. The default range (a /24) runs out after ~250 Services, which a suite repeated
	// with -count=20 passes; a /16 holds 65k.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, env: env}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

// RepoRoot is the repository's top directory: the nearest directory above the test's working directory (go test
// runs a test in its package's directory) whose go.mod declares this module. It is not found from this source
// file's recorded path, since the Makefile builds with -trimpath (one set of build flags for every build, so Go's
// cache compiles the dependencies once), which records module paths, not directories.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("testenv: no working directory: %v", err))
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module "+modulePath+"\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			panic("testenv: no go.mod of module " + modulePath + " above the working directory")
		}
		dir = parent
	}
}

// modulePath is the repository's module, as its go.mod declares it.
const modulePath = "hyperstatic.dev/hyperstatic"

// NewManager returns a controller-runtime manager on this API server for a controller suite: nothing listens
// (metrics and probes off), and controller name validation is off so a package may set up a controller twice.
// opts adjust the options further (e.g. the production cache settings).
func (e *Env) NewManager(opts ...func(*ctrl.Options)) (ctrl.Manager, error) {
	o := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, opt := range opts {
		opt(&o)
	}
	return ctrl.NewManager(e.Config, o)
}
