//go:build e2e

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// TestAddressFamilies runs on the IPv6-only cluster (`make e2e-ipv6`; `make e2e` runs it beside TestE2E): a site
// becomes Ready (the kubelet's probes reach the admin port on the pod's address) and serves every file on every
// family of the cluster, the RPS autoscaler (which scrapes pod IPs) scales a site 1 -> 2, and a Benchmark (which
// lists the content at a pod IP and loads the Service) completes. On the dual-stack cluster the same scenarios are
// part of TestE2E (15, 6, 7, 8).
func TestAddressFamilies(t *testing.T) {
	t.Logf("cluster IP families: %v", requireFamilies(t))
	runScenarios(t, []scenario{
		{name: "1-helm-install", run: testHelmInstall, alone: true, required: true},
		{name: "2-site-on-every-family", run: testSiteOnEveryFamilyOfCluster, requests: 200},
		{name: "3-autoscaling", run: testAutoscaling, requests: 700, load: 20},
		{name: "4-benchmark-sweep", run: testBenchmarkSweep, requests: 550, load: 30},
		{name: "5-operator-restart-and-uninstall", run: testOperatorRestartAndUninstall, alone: true},
	})
}

// testSiteOnEveryFamilyOfCluster is testSiteOnEveryFamily with the families E2E_IP_FAMILIES says the cluster has
// (checked against it).
func testSiteOnEveryFamilyOfCluster(t *testing.T) {
	testSiteOnEveryFamily(t, requireFamilies(t))
}

// testSiteOnEveryFamily: the site's Service gets every family of the cluster (ipFamilyPolicy PreferDualStack), its
// pod an address of each, and a client pod gets every file's exact bytes through the Service's DNS name and
// through its ClusterIP of each family, over HTTP/1.1 and over HTTP/3 (spec.http3: UDP through kube-proxy,
// http3_test.go).
func testSiteOnEveryFamily(t *testing.T, families []corev1.IPFamily) {
	t.Helper()
	requireOperator(t)
	ns := newNamespace(t, "families", false)
	ctx := ctxFor(t, 10*time.Minute)
	site := newSite(ns, "fam", v1alpha1.ContentSource{Image: cfg.siteImage}, "200m")
	caPEM, host := withHTTP3(ctx, t, site)
	created := time.Now()
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	site = waitSiteReady(t, ns, "fam", 3*time.Minute)
	readyAfter := time.Since(created).Round(time.Second)

	svc, err := cs.CoreV1().Services(ns).Get(ctx, "fam", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := svc.Spec.IPFamilyPolicy; p == nil || *p != corev1.IPFamilyPolicyPreferDualStack {
		t.Errorf("Service ipFamilyPolicy = %v, want PreferDualStack", p)
	}
	if !slices.Equal(svc.Spec.IPFamilies, families) || len(svc.Spec.ClusterIPs) != len(families) {
		t.Errorf("Service families %v, ClusterIPs %v; want one ClusterIP per cluster family %v", svc.Spec.IPFamilies, svc.Spec.ClusterIPs, families)
	}
	pods := sitePods(ctx, t, ns, "fam")
	if len(pods) != 1 {
		t.Fatalf("%d server pods, want 1", len(pods))
	}
	var podFamilies []corev1.IPFamily
	for _, ip := range pods[0].Status.PodIPs {
		podFamilies = append(podFamilies, familyOf(ip.IP))
	}
	if !slices.Equal(podFamilies, families) {
		t.Errorf("pod IPs %v: families %v, want %v", pods[0].Status.PodIPs, podFamilies, families)
	}

	files := filesOf(t, cfg.siteDir)
	checkBytes(t, ns, "fetch-dns", site.Status.URL, files)
	for _, ip := range svc.Spec.ClusterIPs { // job fetch-v4, fetch-v6
		checkBytes(t, ns, "fetch-"+strings.ToLower(string(familyOf(ip))[2:]), httpBase(ip, svc.Spec.Ports[0].Port), files)
	}
	checkHTTP3ThroughService(t, site, svc, caPEM, host, files)
	t.Logf("MEASURED families %v: site Ready %s after create; %d files served with exact bytes via %s and ClusterIPs %v; pod IPs %v",
		families, readyAfter, len(files), site.Status.URL, svc.Spec.ClusterIPs, pods[0].Status.PodIPs)
}
