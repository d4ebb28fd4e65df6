//go:build e2e

// Package e2e holds Hyperstatic's end-to-end tests: the real operator (installed with the Helm chart), the real
// server and k6 images, on the local kind cluster. `make e2e` builds and loads every image and runs them; they are
// behind the build tag "e2e" so `go test ./...` never compiles them.
//
// Every test makes its own namespace and deletes it when done. Clients run inside the cluster (the fetch image for
// bytes, the k6 image for load); the test process itself talks only to the kind API server on loopback, and to
// loopback `kubectl port-forward`s through it (the Git scenario's pushes, webhooks and per-pod reads).
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// env is what `make e2e-test` passes in; see make/e2e.mk.
type env struct {
	helm, chart, version                   string
	fetchImage, siteImage, siteDir         string
	rolloutV1Image, rolloutV2Image         string
	capacityImagePrefix                    string // the capacity scenario's sites: <prefix>:v1-<version>, v2-, v3-
	pydocsImage, pydocsV2Image             string // the real site (Python docs) and its one-page update
	pydocsDir, pydocsV2Dir                 string // their trees: the whole v1, only v2's changed files
	serverImage, k6Image                   string
	traefikImage                           string // the ingress controller of the route scenario
	certManagerImage                       string // cert-manager's controllers, for the certificate scenario
	dexImage                               string // the identity provider of the signIn site (scenario 19)
	releaseName, releaseNamespace, kubeCfg string
}

var (
	cfg  env
	rcfg *rest.Config
	k8s  client.Client         // controller-runtime client with Hyperstatic's types
	cs   *kubernetes.Clientset // client-go, for logs, pod proxy and deletes with options
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.Exit(code)
}

func setup() error {
	get := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return def
	}
	root, _ := filepath.Abs("..")
	version := get("E2E_VERSION", "0.1.0")
	cfg = env{
		helm:                get("HELM", filepath.Join(root, "bin", "helm")),
		chart:               get("E2E_CHART", filepath.Join(root, "charts", "hyperstatic")),
		version:             version,
		fetchImage:          get("E2E_FETCH_IMAGE", "hyperstatic/e2e-fetch:"+version),
		siteImage:           get("E2E_SITE_IMAGE", "hyperstatic/example-site:"+version),
		siteDir:             get("E2E_SITE_DIR", filepath.Join(root, "images", "server", "example", "site")),
		rolloutV1Image:      get("E2E_ROLLOUT_V1_IMAGE", "hyperstatic/e2e-site-rollout:v1-"+version),
		rolloutV2Image:      get("E2E_ROLLOUT_V2_IMAGE", "hyperstatic/e2e-site-rollout:v2-"+version),
		capacityImagePrefix: get("E2E_CAPACITY_IMAGE_PREFIX", "hyperstatic/e2e-site-capacity"),
		pydocsImage:         get("E2E_PYDOCS_IMAGE", "hyperstatic/pydocs-site:"+version),
		pydocsV2Image:       get("E2E_PYDOCS_V2_IMAGE", "hyperstatic/pydocs-site:v2-"+version),
		pydocsDir:           get("E2E_PYDOCS_DIR", filepath.Join(root, "_out", "pydocs")),
		pydocsV2Dir:         get("E2E_PYDOCS_V2_DIR", filepath.Join(root, "_out", "pydocs-v2")),
		serverImage:         get("E2E_SERVER_IMAGE", "hyperstatic/server:"+version),
		k6Image:             get("E2E_K6_IMAGE", "hyperstatic/k6:"+version),
		traefikImage:        os.Getenv("E2E_TRAEFIK_IMAGE"),      // set by `make e2e` (E2E_ROUTES=1, the default)
		certManagerImage:    os.Getenv("E2E_CERT_MANAGER_IMAGE"), // set by `make e2e` (E2E_CERT_MANAGER=1, the default)
		dexImage:            get("E2E_DEX_IMAGE", "hyperstatic/e2e-dex:"+version),
		releaseName:         "hyperstatic",
		releaseNamespace:    "hyperstatic-system",
		kubeCfg:             os.Getenv("KUBECONFIG"),
	}
	if cfg.kubeCfg == "" {
		return fmt.Errorf("KUBECONFIG is not set: run the suite with `make e2e` (or `make e2e-test` once the cluster is up)")
	}
	var err error
	rcfg, err = clientcmd.BuildConfigFromFlags("", cfg.kubeCfg)
	if err != nil {
		return err
	}
	rcfg.QPS, rcfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	// The Gateway and HTTPRoute of the route scenario.
	if err := gatewayv1.Install(scheme); err != nil {
		return err
	}
	if k8s, err = client.New(rcfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if cs, err = kubernetes.NewForConfig(rcfg); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// kind returns before the cluster is fully usable: wait for the API and the default ServiceAccount.
	for {
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1GetOptions); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("cluster not ready: %w", err)
		}
		time.Sleep(time.Second)
	}
}

// TestE2E is the whole suite, on the cluster of `make kind-up` (dual-stack, a control plane and two workers in two
// zones, static CPU manager). The operator is installed first and uninstalled near the end; the scenarios between
// share the cluster and run side by side within the budgets of schedule_test.go, except those marked alone. Each
// scenario needs the operator and installs it itself when run alone (`make e2e-test E2E_RUN=TestE2E/3`).
//
// requests is each scenario's peak CPU request (its sites with their surge pods, k6 and other clients, probes) in
// millicores; load its share of the machine's real CPUs while it drives traffic. The performance gate compares
// two measured capacities and asks for all of it: only the scenarios that make no load run beside it. (With the
// Git scenario beside it as well, load 85, a clean-clone CI run on 2026-12-01 saw the gate's canary measurement
// fail, "no server sample fell inside the run"; with 100 the first run passed, its baseline and harmless revision
// 8 % apart against a limit of 35 %.) The order is the start order: the gate first with the load-free scenarios
// beside it, then the loaded scenarios, longest first, then those that need the cluster to themselves.
func TestE2E(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "1-helm-install", run: testHelmInstall, alone: true, required: true},

		{name: "13b-performance-gate", run: testPerformanceGate, requests: 600, load: 100},
		{name: "4-invalid-refused", run: testInvalidRefused},
		{name: "2-baked-site-pinned", run: testBakedSite, requests: 1000},
		{name: "3-configmap-live-reload", run: testConfigMapSite, requests: 250},
		{name: "19-site-rules-live", run: testSiteRulesLive, requests: 900, load: 15}, // 700 + the signIn site's 100m, its agent's 50m and Dex's 50m
		{name: "12-routes-through-traefik", run: testRoutesThroughTraefik, requests: 150},
		{name: "15-site-on-every-family", run: testSiteOnEveryFamilyOfCluster, requests: 200},
		{name: "16-spread-over-workers", run: testSpreadOverWorkers, requests: 450},

		// At its peak, 14g's previews rollout: the docs' 2 pods of 250m with their 100m pullers, the surge pod and its
		// puller (350m), the fetcher's 100m and the Git server's.
		{name: "14-content-from-git", run: testContentFromGit, requests: 1250, load: 15},
		// 200 pool sites created at once. It ran alone: beside the others, their passes and events held other
		// scenarios' (12's route change, 14's Warning event, 2026-12-02). Now the site queue serves namespaces in
		// turn (internal/fairqueue) and each namespace's events have their own lane (internal/eventlanes): in
		// envtest another namespace's status waits for ~10 pool sites' instead of all queued before it, its event
		// follows within 0.1 s (docs/bench/fairqueue-2026-12-03.md). Not run in kind beside the others yet.
		// Requests at its peak, the autoscaling step's eviction: three pool pods of 250m with a 100m puller each
		// (the evicted one serves until no slice lists it, beside its replacement and the other), the pool's
		// fetcher 100m, the Git server 50m and k6 400m (the auto-placement step: 1350). Load: the pool pods, capped
		// at 250m each, serve the clients' 15,135 requests; the ramp is 40 req/s. Declared 51, more than its
		// clients need, so that 13a (50) never runs beside it: its autoscaling step's pool pods each wake all 200
		// pool sites' passes in the operator, and 13a, beside it once, failed its capacity measurement
		// (e2e/poolscale_test.go).
		{name: "20-pool", run: testPool, requests: 1600, load: 51},
		{name: "10c-pydocs-rollout-under-load", run: testPydocsRolloutUnderLoad, requests: 1150, load: 25},
		{name: "10b-pydocs-autoscaling", run: testPydocsAutoscaling, requests: 900, load: 20},
		{name: "10a-pydocs-baked-start", run: testPydocsBakedStart, requests: 1000, load: 10},
		{name: "13a-capacity-autoscaling", run: testCapacityAutoscaling, requests: 1050, load: 50},
		{name: "5-rollout-under-load", run: testRolloutUnderLoad, requests: 800, load: 20},
		{name: "11-https-rotation-under-load", run: testHTTPSRotationUnderLoad, requests: 800, load: 20},
		{name: "21-cert-manager-renewal-under-load", run: testCertManagerRenewalUnderLoad, requests: 750, load: 20},
		{name: "6-autoscaling", run: testAutoscaling, requests: 700, load: 20},
		{name: "7-benchmark-sweep", run: testBenchmarkSweep, requests: 550, load: 30},
		{name: "9a-admin-slowloris", run: testAdminSlowloris, requests: 300, load: 5},

		// They change what every other scenario relies on: the operator's default server image (every site rolls),
		// a worker's pods (drained), the operator itself (killed, then uninstalled), a worker (killed: it stays
		// down until the cluster is deleted, so it goes last and installs the operator again for itself).
		{name: "9b-operator-upgrade-under-load", run: testOperatorUpgradeUnderLoad, alone: true},
		{name: "17-drain-worker-under-load", run: testDrainWorkerUnderLoad, alone: true},
		{name: "8-operator-restart-and-uninstall", run: testOperatorRestartAndUninstall, alone: true},
		{name: "18-worker-lost-under-load", run: testWorkerLostUnderLoad, alone: true},
	})
}
