package tenancy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

func site(spec v1alpha1.StaticSiteSpec) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "docs"}, Spec: spec}
}

func fields(vs Violations) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Field
	}
	return strings.Join(out, ",")
}

// The issue's reproduction: a site that reads its ServiceAccount's token out through the server (the root moved
// by extraArgs is refused by the CRD; the account and its token by the default policy), with a control-plane
// toleration, a node-critical priority and an ingress snippet.
func TestDefaultPolicyRefusesTheIssuesSite(t *testing.T) {
	s := site(v1alpha1.StaticSiteSpec{
		Content: v1alpha1.ContentSource{Image: "evil.example/steal:1"},
		Server: v1alpha1.ServerSpec{Image: "evil.example/server:1",
			ExtraArgs: []string{"--access-log", "--header", "X-A: b", "-x", "value-first"}},
		PodTemplate: v1alpha1.PodTemplateOverrides{
			PriorityClassName: "system-node-critical",
			Tolerations:       []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists}, {Operator: corev1.TolerationOpExists}},
			Annotations:       map[string]string{"sidecar.istio.io/inject": "false", "prometheus.io/scrape": "true"},
			PodIdentity:       v1alpha1.PodIdentity{ServiceAccountName: "ci-deployer", AutomountServiceAccountToken: ptr.To(true)},
		},
		Service: v1alpha1.ServiceSpec{Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "false"}},
		Route:   &v1alpha1.RouteSpec{Annotations: map[string]string{"nginx.ingress.kubernetes.io/server-snippet": "location /x {}"}},
	})
	got := fields(Default().CheckSite(s))
	want := "spec.content.image,spec.server.image,spec.server.extraArgs[1],spec.server.extraArgs[3],spec.podTemplate.serviceAccountName," +
		"spec.podTemplate.automountServiceAccountToken,spec.podTemplate.priorityClassName,spec.podTemplate.tolerations[0].key," +
		"spec.podTemplate.tolerations[1].key,spec.podTemplate.annotations,spec.service.annotations,spec.route.annotations"
	if got != want {
		t.Errorf("violations\n got %s\nwant %s", got, want)
	}
	if vs := Unrestricted().CheckSite(s); len(vs) != 0 {
		t.Errorf("the single-tenant policy refuses %v", vs)
	}
	if msg := Default().CheckSite(s).Error(); !strings.HasPrefix(msg, `the tenancy policy refuses spec.content.image: image "evil.example/steal:1"`) || !strings.HasSuffix(msg, "and 7 more") {
		t.Errorf("message %q", msg)
	}
}

func TestExtraArgsValues(t *testing.T) {
	p := Policy{ExtraArgs: []string{"access-log", "hsts"}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--access-log", "--hsts", "max-age=1"}, ""},
		{[]string{"--hsts=max-age=1"}, ""},
		{[]string{"--access-logs"}, "spec.server.extraArgs[0]"},
		{[]string{"--"}, "spec.server.extraArgs[0]"},
		{[]string{"--hsts", "--cors=*"}, "spec.server.extraArgs[1]"},
		{[]string{"stray"}, "spec.server.extraArgs[0]"},
	} {
		if got := fields(p.CheckSite(site(v1alpha1.StaticSiteSpec{Server: v1alpha1.ServerSpec{ExtraArgs: tc.args}}))); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestImageEntries(t *testing.T) {
	p := Policy{Images: []string{"registry.example/team-a/", "docker.io/library/nginx"}}
	for ref, ok := range map[string]bool{
		"registry.example/team-a/site:v1":         true,
		"registry.example/team-a/sub/site@sha256": true,
		"registry.example/team-ab/site:v1":        false,
		"registry.example/site:v1":                false,
		"docker.io/library/nginx:1.27":            true,
		"docker.io/library/nginx@sha256:abc":      true,
		"docker.io/library/nginx-evil:1":          false,
		"host:5000/x:1":                           false,
	} {
		if got := p.imageAllowed(ref); got != ok {
			t.Errorf("%s: allowed %v, want %v", ref, got, ok)
		}
	}
}

func TestBenchmarkLimits(t *testing.T) {
	p := Default()
	b := &v1alpha1.Benchmark{Spec: v1alpha1.BenchmarkSpec{
		Target:      v1alpha1.BenchmarkTarget{URL: "http://10.0.0.1/"},
		Image:       "evil.example/k6:1",
		Parallelism: 64,
		Workload:    v1alpha1.BenchmarkWorkload{ArrivalRate: &v1alpha1.ArrivalRateWorkload{Rate: 2000000000, Duration: metav1.Duration{Duration: 48 * time.Hour}}},
		PodIdentity: v1alpha1.PodIdentity{ServiceAccountName: "x"},
	}}
	want := "spec.target.url,spec.image,spec.serviceAccountName,spec.parallelism,spec.workload.arrivalRate.rate,spec.workload.arrivalRate.maxVUs,spec.workload"
	if got := fields(p.CheckBenchmark(b)); got != want {
		t.Errorf("violations\n got %s\nwant %s", got, want)
	}
	sweep := &v1alpha1.Benchmark{Spec: v1alpha1.BenchmarkSpec{Target: v1alpha1.BenchmarkTarget{StaticSite: "docs"},
		Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 1, To: 100000, Step: 1000}}}}
	if got := fields(p.CheckBenchmark(sweep)); got != "spec.workload.sweep.to,spec.workload" {
		t.Errorf("sweep violations %s", got)
	}
	if vs := Unrestricted().CheckBenchmark(b); len(vs) != 0 {
		t.Errorf("the single-tenant policy refuses %v", vs)
	}
}

func TestAllowingImagesAddsTheOperatorsOwn(t *testing.T) {
	p := Policy{Images: []string{"registry.example/"}}.AllowingImages("mirror.example/hyperstatic/server:1.2.0", "")
	if !p.imageAllowed("mirror.example/hyperstatic/server:1.1.0") || p.imageAllowed("mirror.example/hyperstatic/other:1") ||
		!p.imageAllowed("registry.example/x:1") {
		t.Errorf("images %v", p.Images)
	}
}

func TestParse(t *testing.T) {
	p, err := Parse(`{"extraArgs":["*"],"images":["*"],"serviceAccountName":true,"benchmark":{"maxVUs":5,"maxDuration":"1h"}}`)
	if err != nil || !listed(p.ExtraArgs, "anything") || p.Benchmark.MaxVUs != 5 || p.ServiceAccountToken {
		t.Errorf("parsed %+v, %v", p, err)
	}
	for _, bad := range []string{`{"extraArg":["*"]}`, `{"benchmark":{"maxDuration":"soon"}}`, `[`} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// siteImages are the project's own site images (content images built FROM the server image), which the default
// policy refuses like any tenant's: the demo's install (make/chart.mk HELM_LOCAL_VALUES) and the e2e suite's list
// them in tenancy.images, and the samples use the first.
var siteImages = []string{"hyperstatic/example-site", "hyperstatic/e2e-site-rollout", "hyperstatic/pydocs-site"}

// The chart's default values with the project's site images allowed are what the e2e suite, the demo and the
// samples must pass. The demo and the samples are read from the repository; the e2e suite's objects are rebuilt
// here as e2e/*.go creates them (images named by e2e/suite_test.go's defaults).
func TestDefaultPolicyAdmitsTheProjectsOwnObjects(t *testing.T) {
	root := filepath.Join("..", "..")
	demo, err := os.ReadFile(filepath.Join(root, "e2e", "testdata", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	demo = bytes.ReplaceAll(demo, []byte("@SITE_IMAGE@"), []byte("hyperstatic/example-site:0.1.0")) // make/server.mk SITE_IMAGE
	docs := [][]byte{demo}
	samples, _ := filepath.Glob(filepath.Join(root, "config", "samples", "staticsite_*.yaml"))
	if len(samples) == 0 {
		t.Fatal("no samples found")
	}
	for _, f := range samples {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	p := Default()
	p.Images = siteImages
	seen := 0
	for _, doc := range docs {
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
		for {
			var obj struct {
				Kind string `json:"kind"`
			}
			var raw map[string]any
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			js, err := json.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(js, &obj); err != nil {
				t.Fatal(err)
			}
			switch obj.Kind {
			case "StaticSite":
				var s v1alpha1.StaticSite
				if err := json.Unmarshal(js, &s); err != nil {
					t.Fatal(err)
				}
				if vs := p.CheckSite(&s); len(vs) != 0 {
					t.Errorf("StaticSite %s: %v", s.Name, vs)
				}
				seen++
			case "Benchmark":
				var b v1alpha1.Benchmark
				if err := json.Unmarshal(js, &b); err != nil {
					t.Fatal(err)
				}
				if vs := p.CheckBenchmark(&b); len(vs) != 0 {
					t.Errorf("Benchmark %s: %v", b.Name, vs)
				}
				seen++
			}
		}
	}
	if seen < 5 {
		t.Errorf("checked %d objects, want the demo's two and every sample", seen)
	}
	// e2e: sites of content images hyperstatic/example-site, hyperstatic/e2e-site-rollout, hyperstatic/pydocs-site
	// (newSite: content, replicas, cpu, memory; route_test adds hostnames and a route without annotations) and the
	// sweep of benchmark_test.go.
	for _, img := range []string{"hyperstatic/example-site:dev", "hyperstatic/e2e-site-rollout:v2-dev", "hyperstatic/pydocs-site:v2-dev"} {
		s := site(v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: img}, Hostnames: []v1alpha1.Hostname{"a.e2e.test"},
			Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("traefik")}})
		if vs := p.CheckSite(s); len(vs) != 0 {
			t.Errorf("e2e site of %s: %v", img, vs)
		}
	}
	sweep := &v1alpha1.Benchmark{Spec: v1alpha1.BenchmarkSpec{Target: v1alpha1.BenchmarkTarget{StaticSite: "target"},
		Paths:       &v1alpha1.BenchmarkPaths{AllFiles: true},
		Workload:    v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 1, To: 5, Step: 2, StepDuration: metav1.Duration{Duration: 5 * time.Second}}},
		Parallelism: 1}}
	if vs := p.CheckBenchmark(sweep); len(vs) != 0 {
		t.Errorf("e2e sweep: %v", vs)
	}
}

// The chart's default values.tenancy is Default(): what the docs say a default install allows is what the operator
// enforces when the flag is left out.
func TestChartDefaultsAreTheDefaultPolicy(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "hyperstatic", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Tenancy map[string]any `json:"tenancy"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(values.Tenancy)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(string(js))
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(p, want) {
		t.Errorf("chart values.tenancy\n %+v\nDefault()\n %+v", p, want)
	}
}

// target.pod is a pod of the Benchmark's own StaticSite in its own namespace (the controller refuses any other pod),
// not a URL: the default policy admits it, as it admits the Benchmark the operator makes to measure a site's
// capacity (a constant load of the capacity defaults, with browsers' Accept-Encoding).
func TestDefaultPolicyAdmitsAPodTarget(t *testing.T) {
	b := &v1alpha1.Benchmark{Spec: v1alpha1.BenchmarkSpec{
		Target:         v1alpha1.BenchmarkTarget{StaticSite: "docs", Pod: "docs-probe-1a2b3c"},
		AcceptEncoding: "br, gzip",
		Parallelism:    1,
		Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: v1alpha1.DefaultCapacityConcurrency,
			Duration: metav1.Duration{Duration: 10 * time.Second}}},
	}}
	if vs := Default().CheckBenchmark(b); len(vs) != 0 {
		t.Errorf("the default policy refuses a pod target: %v", vs)
	}
}

// Git URLs are prefixes that end in "/" or ":", so a forge's entry admits its repositories and no other host; the
// size cap applies to maxSize and, when it is unset, to its default.
func TestGitLimits(t *testing.T) {
	git := func(url string, maxSize string) *v1alpha1.StaticSite {
		g := &v1alpha1.GitContent{URL: url, Ref: "main"}
		if maxSize != "" {
			q := resource.MustParse(maxSize)
			g.MaxSize = &q
		}
		return site(v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: g}})
	}
	p := Default()
	for _, tc := range []struct {
		url, maxSize, want string
	}{
		{"https://github.com/org/site.git", "", ""},
		{"https://github.com/org/site", "1Gi", ""},
		{"git@github.com:org/site.git", "", ""},
		{"ssh://git@gitlab.com/group/site.git", "", ""},
		{"https://codeberg.org/org/site", "", ""},
		{"https://github.com.evil.example/org/site", "", "spec.content.git.url"},
		{"http://github.com/org/site", "", "spec.content.git.url"},
		{"ssh://git@github.com:2222/org/site", "", "spec.content.git.url"},
		{"https://git.internal.example/org/site", "", "spec.content.git.url"},
		{"https://github.com/org/site", "2Gi", "spec.content.git.maxSize"},
		{"https://evil.example/x", "4Gi", "spec.content.git.url,spec.content.git.maxSize"},
	} {
		if got := fields(p.CheckSite(git(tc.url, tc.maxSize))); got != tc.want {
			t.Errorf("%s (maxSize %q): violations %q, want %q", tc.url, tc.maxSize, got, tc.want)
		}
	}
	// The default maxSize (512Mi) is checked when the field is unset.
	low := Policy{Git: GitLimits{URLs: []string{"https://github.com/"}, MaxSize: "256Mi"}}
	vs := low.CheckSite(git("https://github.com/org/site", ""))
	if fields(vs) != "spec.content.git.maxSize" || !strings.Contains(vs.Error(), "default of 512Mi") {
		t.Errorf("default maxSize over the cap: %v", vs)
	}
	if vs := low.CheckSite(git("https://github.com/org/site", "200Mi")); len(vs) != 0 {
		t.Errorf("maxSize under the cap refused: %v", vs)
	}
	// No entry: no Git at all (a policy that leaves git out of its JSON).
	if got := fields((Policy{}).CheckSite(git("https://github.com/org/site", ""))); got != "spec.content.git.url" {
		t.Errorf("empty URL list admits %q", got)
	}
	if vs := Unrestricted().CheckSite(git("http://10.0.0.1:3000/any", "16Gi")); len(vs) != 0 {
		t.Errorf("the single-tenant policy refuses %v", vs)
	}
	// Parse refuses a prefix that would admit other hosts, and a cap that is not a positive quantity.
	for _, bad := range []string{`{"git":{"urls":["https://github.com"]}}`, `{"git":{"urls":["git@github.com"]}}`,
		`{"git":{"maxSize":"-1Gi"}}`, `{"git":{"maxSize":"big"}}`, `{"git":{"maxSize":"0"}}`} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if p, err := Parse(`{"git":{"urls":["*"],"maxSize":"2Gi"}}`); err != nil || !p.Git.gitURLAllowed("http://anything/") {
		t.Errorf("parsed %+v, %v", p.Git, err)
	}
}

// The default image list is exactly the images the chart installs for tenants' pods (the operator adds its own
// server and k6 repositories, as cmd/manager does): no prefix, so neither another image of the project's public
// namespace (the operator's own, whose binary holds no site) nor a look-alike repository is admitted.
func TestDefaultImagesAreExactlyTheChartsOwn(t *testing.T) {
	p := Default().AllowingImages("hyperstatic/server:0.1.0", "hyperstatic/k6:0.1.0")
	for ref, ok := range map[string]bool{
		"hyperstatic/server:0.1.0":           true,
		"hyperstatic/server@sha256:abc":      true,
		"hyperstatic/k6:0.2.0":               true,
		"hyperstatic/operator:0.1.0":         false,
		"hyperstatic/content-agent:0.1.0":    false,
		"hyperstatic/server-evil:0.1.0":      false,
		"hyperstatic/example-site:0.1.0":     false,
		"docker.io/hyperstatic/server:0.1.0": false,
	} {
		s := site(v1alpha1.StaticSiteSpec{Server: v1alpha1.ServerSpec{Image: ref}})
		if got := len(p.CheckSite(s)) == 0; got != ok {
			t.Errorf("spec.server.image %s: allowed %v, want %v (%v)", ref, got, ok, p.CheckSite(s))
		}
	}
	vs := p.CheckSite(site(v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "hyperstatic/operator:0.1.0"}}))
	if fields(vs) != "spec.content.image" || !strings.Contains(vs.Error(), `"hyperstatic/operator:0.1.0"`) {
		t.Errorf("the operator's image as content: %v", vs)
	}
}

// spec.service.type is in the policy: ClusterIP always (set or defaulted), NodePort and LoadBalancer only when
// listed, refused naming the field.
func TestServiceTypes(t *testing.T) {
	svc := func(typ corev1.ServiceType) *v1alpha1.StaticSite {
		return site(v1alpha1.StaticSiteSpec{Service: v1alpha1.ServiceSpec{Type: typ}})
	}
	for _, tc := range []struct {
		policy Policy
		typ    corev1.ServiceType
		want   string
	}{
		{Default(), "", ""},
		{Default(), corev1.ServiceTypeClusterIP, ""},
		{Default(), corev1.ServiceTypeNodePort, "spec.service.type"},
		{Default(), corev1.ServiceTypeLoadBalancer, "spec.service.type"},
		{Policy{}, corev1.ServiceTypeClusterIP, ""},
		{Policy{ServiceTypes: []string{"NodePort"}}, corev1.ServiceTypeNodePort, ""},
		{Policy{ServiceTypes: []string{"NodePort"}}, corev1.ServiceTypeLoadBalancer, "spec.service.type"},
		{Unrestricted(), corev1.ServiceTypeLoadBalancer, ""},
	} {
		vs := tc.policy.CheckSite(svc(tc.typ))
		if got := fields(vs); got != tc.want {
			t.Errorf("type %q under %v: violations %q, want %q", tc.typ, tc.policy.ServiceTypes, got, tc.want)
		}
		if tc.want != "" && !strings.Contains(vs.Error(), "Service type "+string(tc.typ)+" is not allowed") {
			t.Errorf("message %q", vs.Error())
		}
	}
}

// git.requireCredentialsLabel: left out of a policy it is required (the restrictive side), false lifts it.
func TestRequireCredentialsLabel(t *testing.T) {
	for js, want := range map[string]bool{`{}`: true, `{"git":{"requireCredentialsLabel":true}}`: true, `{"git":{"requireCredentialsLabel":false}}`: false} {
		p, err := Parse(js)
		if err != nil || p.Git.CredentialsLabelRequired() != want {
			t.Errorf("%s: required %v (%v), want %v", js, p.Git.CredentialsLabelRequired(), err, want)
		}
	}
	if !Default().Git.CredentialsLabelRequired() || Unrestricted().Git.CredentialsLabelRequired() {
		t.Error("the default must require the label, the single-tenant policy must not")
	}
}
