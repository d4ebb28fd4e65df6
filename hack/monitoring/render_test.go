//go:build monitoring

package monitoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The chart as `helm template` renders it with monitoring on: the PrometheusRule's groups, the dashboard's JSON
// and the operator's PodMonitor, read from the rendered objects (what a cluster would get), never from the chart's
// source files.

// Release and namespace the chart is rendered with: the operator's job label follows from them
// (<namespace>/<release>-operator), and the test's Prometheus gives the operator's series that label.
const (
	release     = "hyperstatic"
	namespace   = "hyperstatic-system"
	operatorJob = namespace + "/" + release + "-operator"
)

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type dashboardTarget struct {
	Expr   string `json:"expr"`
	RefID  string `json:"refId"`
	Format string `json:"format"`
}

type dashboardPanel struct {
	Type    string            `json:"type"`
	Title   string            `json:"title"`
	Targets []dashboardTarget `json:"targets"`
}

type dashboard struct {
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// rendered is what the chart makes with monitoring on.
type rendered struct {
	groups     []ruleGroup
	rulesFile  string // the groups as a Prometheus rule file, for promtool and the test's Prometheus
	dashboard  dashboard
	podMonitor map[string]any
}

// renderChart runs helm template with every monitoring object on and picks them out of its output.
func renderChart(t *testing.T, helm, dir string) rendered {
	t.Helper()
	chart := filepath.Join(repoRoot(t), "charts", "hyperstatic")
	// --kube-version as chart-check passes it: a helm built by `go install` (make/tools.mk) assumes Kubernetes
	// 1.20, below the chart's kubeVersion.
	cmd := exec.Command(helm, "template", release, chart, "--namespace", namespace, "--kube-version", "1.34.10",
		"--set", "monitoring.rules.enabled=true", "--set", "monitoring.dashboard.enabled=true",
		"--set", "monitoring.podMonitor.enabled=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	var r rendered
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		switch obj["kind"] {
		case "PrometheusRule":
			raw, _ := json.Marshal(obj["spec"])
			var spec struct {
				Groups []ruleGroup `json:"groups"`
			}
			must(t, json.Unmarshal(raw, &spec))
			r.groups = spec.Groups
			file, err := yaml.Marshal(map[string]any{"groups": obj["spec"].(map[string]any)["groups"]})
			must(t, err)
			r.rulesFile = filepath.Join(dir, "rules.yaml")
			must(t, os.WriteFile(r.rulesFile, file, 0o600))
		case "ConfigMap":
			md := obj["metadata"].(map[string]any)
			labels, _ := md["labels"].(map[string]any)
			if labels["grafana_dashboard"] != "1" {
				continue
			}
			data := obj["data"].(map[string]any)
			if len(data) != 1 {
				t.Fatalf("the dashboard ConfigMap holds %d keys, want one dashboard", len(data))
			}
			for _, js := range data {
				if strings.Contains(js.(string), "HYPERSTATIC_OPERATOR_JOB") {
					t.Fatal("the dashboard still holds its operator job placeholder")
				}
				must(t, json.Unmarshal([]byte(js.(string)), &r.dashboard))
			}
		case "PodMonitor":
			r.podMonitor = obj
		}
	}
	if r.rulesFile == "" || len(r.dashboard.Panels) == 0 || r.podMonitor == nil {
		t.Fatalf("helm template made no PrometheusRule, dashboard ConfigMap or PodMonitor with monitoring on:\n%s", out)
	}
	return r
}

// checkRunbooks: every alert links to its own section of docs/alerts.md, which exists.
func checkRunbooks(t *testing.T, groups []ruleGroup) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "alerts.md"))
	must(t, err)
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			want := "#" + strings.ToLower(r.Alert)
			if url := r.Annotations["runbook_url"]; !strings.HasSuffix(url, want) {
				t.Errorf("%s: runbook_url %q does not end in %s", r.Alert, url, want)
			}
			if !regexp.MustCompile(`(?m)^## ` + regexp.QuoteMeta(r.Alert) + `$`).Match(doc) {
				t.Errorf("%s: docs/alerts.md has no section \"## %s\"", r.Alert, r.Alert)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: needs a severity label and a summary", r.Alert)
			}
		}
	}
}

// checkPodMonitor: the operator's PodMonitor scrapes the Deployment's metrics port keeping the objects' namespace,
// and its name gives the job label the rules select (Prometheus Operator: <namespace>/<name>).
func checkPodMonitor(t *testing.T, pm map[string]any) {
	t.Helper()
	md := pm["metadata"].(map[string]any)
	if job := fmt.Sprintf("%s/%s", md["namespace"], md["name"]); job != operatorJob {
		t.Errorf("the PodMonitor's job would be %s, the rules select %s", job, operatorJob)
	}
	ep := pm["spec"].(map[string]any)["podMetricsEndpoints"].([]any)[0].(map[string]any)
	if ep["port"] != "metrics" || ep["honorLabels"] != true {
		t.Errorf("the PodMonitor's endpoint is %v, want port metrics with honorLabels", ep)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	must(t, err)
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
