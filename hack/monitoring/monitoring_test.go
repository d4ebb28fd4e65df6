//go:build monitoring

// Package monitoring tests the chart's alerts and Grafana dashboard (charts/hyperstatic, monitoring.*) for real;
// `make monitoring-test` runs it (part of `make test`), with the build tag monitoring so that plain `go test
// ./...` leaves it out: it needs helm, promtool, prometheus, the release server and manager binaries and envtest,
// which the make target provides.
//
// The contract it holds:
//   - The rules `helm template` renders pass `promtool check rules`, and `promtool test rules` with
//     testdata/alerts.test.yaml, where every alert has a case that fires and a case that must stay quiet (an alert
//     without both fails the test).
//   - Every alert links (runbook_url) to its own section of docs/alerts.md, which exists.
//   - A real Prometheus (Debian's), loading the same rules, scrapes a real server (a site with HTTPS, and a pool),
//     and the real manager binary against envtest's kube-apiserver with a StaticSite, a Git site and a refused
//     Benchmark; requests (200, 404, 501) flow meanwhile. Then every dashboard query returns data, every vector
//     selector of every rule returns data, and every rule evaluates without error. So no panel is empty and no
//     rule names a metric that does not exist.
//   - The exceptions, named in unreachable below with their reasons: series that exist only in a state the test
//     cannot reach cheaply. Their names are still checked against the code that exports them.
//
// Nothing waits on a clock: each step polls its condition (a target scraped, a query non-empty, a rule
// evaluated) to a bound, and fails naming what never came.
package monitoring

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"hyperstatic.dev/hyperstatic/internal/statemetrics"
)

// unreachable are the metrics whose series exist only in a state this test does not reach, with the reason.
var unreachable = map[string]string{
	// The operator exports it only while status.capacity is current, which takes a capacity measurement: a k6
	// Benchmark run against the site's pod (k6, a kubelet). internal/statemetrics' unit test covers the series.
	"hyperstatic_staticsite_capacity_rps_per_pod": "needs a current capacity measurement (a k6 run against a real pod)",
	// Exported for a Git site once its fetcher published a commit and pods report what they serve: a fetcher pod
	// and server pods running (a kubelet), which envtest has not.
	"hyperstatic_staticsite_git_pods_behind": "needs a Git site's fetcher and server pods running",
}

// Grafana's variables as the dashboard's "All" selection makes them.
var dashboardVariables = strings.NewReplacer("$__rate_interval", "30s", "$namespace", ".*", "$site", ".*")

// queryDeadline bounds the wait for every query to return data: a few scrapes and rule evaluations (1 s each),
// and the operator's first reconciles of the objects, on a loaded machine.
const queryDeadline = 120 * time.Second

func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run this test with `make monitoring-test`, which builds or installs it", name)
	}
	return v
}

func TestRulesAndDashboard(t *testing.T) {
	helm, promtool, prometheus := env(t, "HELM"), env(t, "PROMTOOL"), env(t, "PROMETHEUS")
	serverBin, managerBin := env(t, "HYPERSTATIC_SERVER_BIN"), env(t, "HYPERSTATIC_MANAGER_BIN")
	dir := t.TempDir()

	r := renderChart(t, helm, dir)
	checkRunbooks(t, r.groups)
	checkPodMonitor(t, r.podMonitor)
	runPromtool(t, promtool, dir, "check", "rules", r.rulesFile)
	checkUnitTestCoverage(t, r.groups)
	test, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), test, 0o600))
	runPromtool(t, promtool, dir, "test", "rules", "alerts.test.yaml")
	if t.Failed() {
		return // the live part would only repeat what is wrong
	}

	site := startSiteServer(t, serverBin, dir)
	pool := startPoolServer(t, serverBin, dir)
	op := startOperator(t, managerBin, dir)
	op.createObjects(t)
	ctx, stop := context.WithCancel(context.Background())
	traffic := make(chan struct{})
	go func() { driveTraffic(ctx, site, pool); close(traffic) }()
	t.Cleanup(func() { stop(); <-traffic })
	prom := &promAPI{base: "http://" + startPrometheus(t, prometheus, dir, prometheusConfig(r.rulesFile, site, pool, op))}

	waitFor(t, "every target scraped and up", 60*time.Second, prom.targetsUp)
	checkQueriesReturnData(t, prom, liveChecks(t, r))
	waitFor(t, "every rule evaluated without error", 60*time.Second, prom.rulesHealthy)
}

// runPromtool runs promtool in dir and fails the test with its output when it fails.
func runPromtool(t *testing.T, promtool, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool, args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		return
	}
	t.Logf("promtool %s: passed in %s", strings.Join(args[:2], " "), time.Since(start).Round(time.Millisecond))
}

// checkUnitTestCoverage: every alert of the rules fires in some case of testdata/alerts.test.yaml and is expected
// quiet in another.
func checkUnitTestCoverage(t *testing.T, groups []ruleGroup) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	must(t, err)
	var file struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	must(t, yaml.Unmarshal(raw, &file))
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" && (!fires[r.Alert] || !quiet[r.Alert]) {
				t.Errorf("%s: testdata/alerts.test.yaml needs a case where it fires (%v) and one where it must not (%v)",
					r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
}

// check is one query that must return data, and where it comes from.
type check struct {
	what  string
	query string
}

// liveChecks lists what must return data: every dashboard query and variable, every rule's selectors.
func liveChecks(t *testing.T, r rendered) []check {
	t.Helper()
	var out []check
	for _, p := range r.dashboard.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			out = append(out, check{fmt.Sprintf("panel %q query %s", p.Title, target.RefID), dashboardVariables.Replace(target.Expr)})
		}
	}
	for _, v := range r.dashboard.Templating.List {
		q, _ := v.Query.(map[string]any)
		if v.Type != "query" || q == nil {
			continue
		}
		// label_values(selector, label): the selector must have series carrying the label.
		expr := q["query"].(string)
		inner := strings.TrimSuffix(strings.TrimPrefix(expr, "label_values("), ")")
		at := strings.LastIndex(inner, ",")
		if !strings.HasPrefix(expr, "label_values(") || at < 0 {
			t.Fatalf("variable %s: query %q is not label_values(selector, label)", v.Name, expr)
		}
		label := strings.TrimSpace(inner[at+1:])
		out = append(out, check{fmt.Sprintf("variable %s", v.Name),
			fmt.Sprintf("count by (%s) (%s)", label, dashboardVariables.Replace(inner[:at]))})
	}
	for _, g := range r.groups {
		for _, rule := range g.Rules {
			sels, err := selectors(rule.Expr)
			if err != nil {
				t.Fatalf("%s: %v", rule.Alert, err)
			}
			if len(sels) == 0 {
				t.Fatalf("%s: no selector found in %q", rule.Alert, rule.Expr)
			}
			for _, s := range sels {
				out = append(out, check{fmt.Sprintf("rule %s selector", rule.Alert), s})
			}
		}
	}
	return out
}

// checkQueriesReturnData polls the checks until each has returned data once, and fails naming the rest at the
// deadline. A check naming an unreachable metric is not polled; its name must be one the operator exports.
func checkQueriesReturnData(t *testing.T, prom *promAPI, checks []check) {
	t.Helper()
	var pending []check
	for _, c := range checks {
		if name, why := unreachableIn(c.query); name != "" {
			if !slices.Contains(statemetrics.Names(), name) {
				t.Errorf("%s: %s is not a metric the operator exports (%v)", c.what, name, statemetrics.Names())
			}
			t.Logf("not checked for data: %s (%s: %s)", c.what, name, why)
			continue
		}
		pending = append(pending, c)
	}
	total := len(pending)
	deadline := time.Now().Add(queryDeadline)
	for len(pending) > 0 {
		var left []check
		for _, c := range pending {
			n, err := prom.resultCount(c.query)
			if err != nil {
				t.Fatalf("%s: %s: %v", c.what, c.query, err) // a query Prometheus refuses never gets better
			}
			if n == 0 {
				left = append(left, c)
			}
		}
		pending = left
		if len(pending) > 0 && time.Now().After(deadline) {
			for _, c := range pending {
				t.Errorf("%s returned no data within %s: %s", c.what, queryDeadline, c.query)
			}
			names, _ := prom.metricNames()
			t.Logf("metric names Prometheus has: %s", strings.Join(names, " "))
			return
		}
		if len(pending) > 0 {
			time.Sleep(500 * time.Millisecond) // poll interval: the next scrape comes within a second
		}
	}
	t.Logf("%d queries returned data (dashboard panels and variables, rule selectors)", total)
}

// unreachableIn names the unreachable metric a query reads, if any.
func unreachableIn(query string) (string, string) {
	for name, why := range unreachable {
		if strings.Contains(query, name) {
			return name, why
		}
	}
	return "", ""
}

// promAPI is the HTTP API of the test's Prometheus.
type promAPI struct{ base string }

func (p *promAPI) get(path string, params url.Values, into any) error {
	resp, err := http.Get(p.base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		return err
	}
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body.Bytes(), &envelope); err != nil {
		return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, body.String())
	}
	if envelope.Status != "success" {
		return fmt.Errorf("%s: %s", path, envelope.Error)
	}
	return json.Unmarshal(envelope.Data, into)
}

// resultCount is the number of series an instant query returns.
func (p *promAPI) resultCount(query string) (int, error) {
	var data struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query", url.Values{"query": {query}}, &data); err != nil {
		return 0, err
	}
	if data.ResultType != "vector" {
		return 0, fmt.Errorf("result type %s, want a vector", data.ResultType)
	}
	return len(data.Result), nil
}

// targetsUp is nil once every configured target has been scraped successfully.
func (p *promAPI) targetsUp() error {
	var data struct {
		ActiveTargets []struct {
			ScrapePool string `json:"scrapePool"`
			Health     string `json:"health"`
			LastError  string `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := p.get("/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return err
	}
	if len(data.ActiveTargets) != 3 {
		return fmt.Errorf("%d targets, want 3", len(data.ActiveTargets))
	}
	for _, tg := range data.ActiveTargets {
		if tg.Health != "up" {
			return fmt.Errorf("target %s is %s: %s", tg.ScrapePool, tg.Health, tg.LastError)
		}
	}
	return nil
}

// rulesHealthy is nil once every rule has been evaluated without error.
func (p *promAPI) rulesHealthy() error {
	var data struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get("/api/v1/rules", nil, &data); err != nil {
		return err
	}
	n := 0
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				return fmt.Errorf("rule %s: health %q %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("prometheus loaded no rules")
	}
	return nil
}

// metricNames lists every metric name Prometheus holds (for a failure's message).
func (p *promAPI) metricNames() ([]string, error) {
	var names []string
	err := p.get("/api/v1/label/__name__/values", nil, &names)
	return names, err
}
