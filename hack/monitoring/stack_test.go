//go:build monitoring

package monitoring

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The live parts the queries run against, all real and all on loopback: a site's server (HTTPS on, so the
// certificate series exist), a pool's server with one site, the operator's manager binary against envtest's
// kube-apiserver, and objects for it to report on. Their series get the labels the chart's scrapes would give:
// a site's PodMonitor job <namespace>/<site>, the operator's PodMonitor job with honorLabels.

// The site the server plays: the StaticSite of the same name exists in envtest, so the joins of the server's
// series with the operator's per-site series (label_join of namespace and staticsite) meet.
const (
	siteNamespace = "team"
	siteName      = "site-a"
	siteJob       = siteNamespace + "/" + siteName
	poolSiteHost  = "pooled.example"
)

// startSiteServer runs the release server on a small tree with HTTPS on.
func startSiteServer(t *testing.T, bin, dir string) *serverbin.Process {
	t.Helper()
	root := filepath.Join(dir, "site")
	must(t, os.MkdirAll(root, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "index.html"), []byte("<h1>hello</h1>\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "app.js"), []byte(strings.Repeat("console.log('hyperstatic');\n", 200)), 0o644))
	cert, key := testcerts.SelfSigned(t, testcerts.Options{}, "site-a.example")
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	must(t, os.WriteFile(certFile, cert, 0o600))
	must(t, os.WriteFile(keyFile, key, 0o600))
	return serverbin.Start(t, bin, []string{"--root", root, "--listen", "", "--admin-listen", "",
		"--tls-listen", serverbin.FreeAddr(t), "--tls-cert", certFile, "--tls-key", keyFile})
}

// startPoolServer runs the release server as a pool (--sites) with one site in its index, laid out as the pool's
// fetcher writes it (docs/design/pools.md).
func startPoolServer(t *testing.T, bin, dir string) *serverbin.Process {
	t.Helper()
	pool := filepath.Join(dir, "pool")
	// A pool site's id is <namespace>.<name>.
	for _, d := range []string{"index", "content/.ready", "content/team.pooled/r1"} {
		must(t, os.MkdirAll(filepath.Join(pool, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(pool, "index", "shard-0.json"), []byte(`{"version": 1, "shard": 0, "sites": [`+
		`{"id": "team.pooled", "hosts": ["`+poolSiteHost+`"], "value": {"version": 1},`+
		` "limits": {"maxFiles": 100, "maxBytes": 1000000, "requestsPerSecond": 100000}}]}`), 0o644))
	must(t, os.WriteFile(filepath.Join(pool, "content/team.pooled/r1/index.html"), []byte("pooled\n"), 0o644))
	must(t, os.Symlink("r1", filepath.Join(pool, "content/team.pooled/current")))
	must(t, os.WriteFile(filepath.Join(pool, "content/.ready/team.pooled"), nil, 0o644))
	return serverbin.Start(t, bin, []string{"--sites", pool, "--listen", "", "--admin-listen", ""})
}

// driveTraffic sends requests until ctx ends: 200s, 404s and 501s (an unknown method: the server's own 5xx) to the
// site, and 200s to the pool's site, so every rate has something to count between two scrapes.
func driveTraffic(ctx context.Context, site, pool *serverbin.Process) {
	client := &http.Client{Timeout: 2 * time.Second}
	send := func(method, url, host string) {
		req, err := http.NewRequestWithContext(ctx, method, url, nil)
		if err != nil {
			return
		}
		if host != "" {
			req.Host = host
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		send(http.MethodGet, "http://"+site.HTTPAddr+"/", "")
		send(http.MethodGet, "http://"+site.HTTPAddr+"/app.js", "")
		send(http.MethodGet, "http://"+site.HTTPAddr+"/missing", "")
		send("BREW", "http://"+site.HTTPAddr+"/", "")
		send(http.MethodGet, "http://"+pool.HTTPAddr+"/", poolSiteHost)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// operator is the manager binary running against envtest.
type operator struct {
	metricsAddr string
	env         *testenv.Env
}

// startOperator starts envtest and the manager binary on it, and waits for its /readyz.
func startOperator(t *testing.T, managerBin, dir string) *operator {
	t.Helper()
	env, err := testenv.Start()
	must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(dir, "kubeconfig")
	must(t, writeKubeconfig(env.Config, kubeconfig))
	metrics, probe := serverbin.FreeAddr(t), serverbin.FreeAddr(t)
	cmd := exec.Command(managerBin, "--kubeconfig="+kubeconfig, "--metrics-bind-address="+metrics,
		"--health-probe-bind-address="+probe, "--leader-elect=false", "--operator-namespace="+namespace,
		"--server-image=hyperstatic/server:monitoring-test", "--zap-log-level=error")
	runUntilCleanup(t, "the manager", cmd, "http://"+probe+"/readyz", 60*time.Second)
	return &operator{metricsAddr: metrics, env: env}
}

// createObjects makes what the operator's series describe: the site the server plays (with its own latency
// objective), a Git site whose credentials Secret is missing (ContentAvailable False, GitSecretNotFound: a Git
// reason without a fetcher running), and a Benchmark the default tenancy policy refuses (target.url), which fails
// at once.
func (o *operator) createObjects(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	c := o.env.Client
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: siteNamespace}}))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: siteNamespace, Name: siteName},
		Data: map[string]string{"index.html": "hello"}}))
	must(t, c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: siteNamespace, Name: siteName},
		Spec: v1alpha1.StaticSiteSpec{
			Content:  v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: siteName}}},
			Capacity: &v1alpha1.CapacitySpec{LatencyObjective: &metav1.Duration{Duration: 50 * time.Millisecond}},
		}}))
	must(t, c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: siteNamespace, Name: "git-a"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{
			Git: &v1alpha1.GitContent{URL: "https://github.com/example/site.git", Ref: "main",
				SecretRef: &v1alpha1.LocalObjectReference{Name: "missing"}}}}}))
	must(t, c.Create(ctx, &v1alpha1.Benchmark{ObjectMeta: metav1.ObjectMeta{Namespace: siteNamespace, Name: "refused"},
		Spec: v1alpha1.BenchmarkSpec{
			Target:   v1alpha1.BenchmarkTarget{URL: "http://elsewhere.example:8080"},
			Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 1, Duration: metav1.Duration{Duration: 5 * time.Second}}},
		}}))
}

// writeKubeconfig writes cfg (envtest's admin: client certificate) as a kubeconfig file for the manager binary.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// prometheusConfig scrapes the three targets every second with the labels the chart's scrapes would give, and
// loads the rendered rules (evaluated every second).
func prometheusConfig(rulesFile string, site, pool *serverbin.Process, op *operator) string {
	return fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: site
    static_configs: [{targets: [%q], labels: {namespace: %q, pod: %q}}]
    relabel_configs: [{target_label: job, replacement: %q}]
  - job_name: pool
    static_configs: [{targets: [%q], labels: {namespace: pools, pod: pool-0}}]
    relabel_configs: [{target_label: job, replacement: pools/pool}]
  - job_name: operator
    honor_labels: true
    static_configs: [{targets: [%q]}]
    relabel_configs: [{target_label: job, replacement: %q}]
`, rulesFile, site.AdminAddr, siteNamespace, siteName+"-0", siteJob, pool.AdminAddr, op.metricsAddr, operatorJob)
}

// startPrometheus runs Debian's prometheus on loopback with config, and waits for /-/ready.
func startPrometheus(t *testing.T, bin, dir, config string) string {
	t.Helper()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	must(t, os.WriteFile(cfgFile, []byte(config), 0o600))
	addr := serverbin.FreeAddr(t)
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr, "--log.level=warn")
	runUntilCleanup(t, "prometheus", cmd, "http://"+addr+"/-/ready", 30*time.Second)
	return addr
}

// runUntilCleanup starts cmd, kills it when the test ends (printing its output if the test failed), and waits
// until readyURL answers 200; a process that exits first fails the test with its output.
func runUntilCleanup(t *testing.T, name string, cmd *exec.Cmd, readyURL string, within time.Duration) {
	t.Helper()
	logs := &serverbin.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s output:\n%s", name, logs.String())
		}
	})
	waitFor(t, name+" ready ("+readyURL+")", within, func() error {
		select {
		case <-exited:
			t.Fatalf("%s exited: %s\n%s", name, cmd.ProcessState, logs.String())
		default:
		}
		resp, err := http.Get(readyURL)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})
}

// waitFor polls check every 200 ms until it returns nil, and fails the test with its last error at the deadline.
func waitFor(t *testing.T, what string, within time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
