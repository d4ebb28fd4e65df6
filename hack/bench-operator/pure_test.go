package main

import (
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

const exposition = `# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 10
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 3
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PUT"} 1
# TYPE controller_runtime_reconcile_time_seconds histogram
controller_runtime_reconcile_time_seconds_bucket{controller="staticsite",le="0.01"} 50
controller_runtime_reconcile_time_seconds_bucket{controller="staticsite",le="0.1"} 90
controller_runtime_reconcile_time_seconds_bucket{controller="staticsite",le="1"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="staticsite",le="+Inf"} 100
controller_runtime_reconcile_time_seconds_sum{controller="staticsite"} 4
controller_runtime_reconcile_time_seconds_count{controller="staticsite"} 100
controller_runtime_reconcile_time_seconds_bucket{controller="autoscaler",le="0.01"} 7
controller_runtime_reconcile_time_seconds_bucket{controller="autoscaler",le="0.1"} 7
controller_runtime_reconcile_time_seconds_bucket{controller="autoscaler",le="1"} 7
controller_runtime_reconcile_time_seconds_bucket{controller="autoscaler",le="+Inf"} 7
controller_runtime_reconcile_time_seconds_sum{controller="autoscaler"} 0.01
controller_runtime_reconcile_time_seconds_count{controller="autoscaler"} 7
# TYPE apiserver_request_total counter
apiserver_request_total{verb="GET",resource="pods",subresource="",code="200"} 5
apiserver_request_total{verb="PATCH",resource="staticsites",subresource="status",code="200"} 2
apiserver_request_total{verb="APPLY",resource="deployments",subresource="",code="200"} 4
apiserver_request_total{verb="PUT",resource="leases",subresource="",code="200"} 6
apiserver_request_total{verb="LIST",resource="pods",subresource="",code="200"} 1
apiserver_request_total{verb="WATCH",resource="pods",subresource="",code="200"} 1
`

func mustParse(t *testing.T, s string) families {
	t.Helper()
	f, err := parseFamilies(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCountersByLabel(t *testing.T) {
	f := mustParse(t, exposition)
	got := f.sumBy("rest_client_requests_total", "method", nil)
	if got["GET"] != 10 || got["PATCH"] != 3 || got["PUT"] != 1 || len(got) != 3 {
		t.Fatalf("by method: %v", got)
	}
	if w := writes(got, restClientWriteMethods); w != 4 {
		t.Fatalf("writes = %v, want 4 (PATCH and PUT, not GET)", w)
	}
	if n := f.sum("rest_client_requests_total", map[string]string{"code": "409"}); n != 1 {
		t.Fatalf("code 409 = %v", n)
	}
	if n := f.refusedWrites(); n != 1 {
		t.Fatalf("refused writes = %v, want 1 (the PUT answered 409; GET and 2xx are not)", n)
	}
	aw := f.apiserverWrites()
	if aw["PATCH staticsites/status"] != 2 || aw["APPLY deployments"] != 4 || aw["PUT leases"] != 6 || len(aw) != 3 {
		t.Fatalf("apiserver writes: %v", aw)
	}
}

func TestDeltaKeepsKeysOfBothSides(t *testing.T) {
	d := delta(map[string]float64{"a": 1, "gone": 2}, map[string]float64{"a": 4, "new": 3})
	if d["a"] != 3 || d["gone"] != -2 || d["new"] != 3 {
		t.Fatalf("delta: %v", d)
	}
	if s := formatCounts(map[string]float64{"b": 60, "a": 30, "z": 0}, 0.5); s != "a=60.0, b=120.0" {
		t.Fatalf("formatCounts: %q", s)
	}
	if s := formatCounts(map[string]float64{"a": 0}, 1); s != "none" {
		t.Fatalf("formatCounts of zeros: %q", s)
	}
}

func TestHistogramQuantileInterpolatesLikePrometheus(t *testing.T) {
	f := mustParse(t, exposition)
	h := f.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "staticsite"})
	if h.count != 100 || h.sum != 4 {
		t.Fatalf("count/sum: %v/%v", h.count, h.sum)
	}
	for _, tc := range []struct{ q, want float64 }{
		{0.5, 0.01},                      // rank 50: the top of the first bucket
		{0.25, 0.005},                    // rank 25: halfway through [0, 0.01]
		{0.7, 0.01 + (0.1-0.01)*20.0/40}, // rank 70: 20 of the 40 in (0.01, 0.1]
		{0.99, 0.1 + (1-0.1)*9.0/10},     // rank 99: 9 of the 10 in (0.1, 1]
		{1, 1},                           // the last finite bound
	} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("q%v = %v, want %v", tc.q, got, tc.want)
		}
	}
	before := histogram{bounds: h.bounds, counts: []float64{50, 50, 50, 50}, count: 50, sum: 1}
	d := h.minus(before) // the 50 observations after: 40 in (0.01, 0.1], 10 in (0.1, 1]
	if d.count != 50 || d.sum != 3 || d.quantile(0.8) != 0.1 {
		t.Fatalf("minus: %+v, q0.8 %v", d, d.quantile(0.8))
	}
	if !math.IsNaN((histogram{}).quantile(0.5)) || !math.IsNaN((histogram{}).mean()) {
		t.Fatal("an empty histogram must have no quantile or mean")
	}
	if a := f.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "autoscaler"}); a.count != 7 {
		t.Fatalf("the label filter must keep the autoscaler's series apart: %+v", a)
	}
}

func TestProcParsers(t *testing.T) {
	// A command name with spaces and parentheses: fields count from the last ')'.
	stat := "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 12 0 100 123456 789"
	cpu, err := parseStatCPU(stat)
	if err != nil || cpu != 4.0 {
		t.Fatalf("cpu = %v, %v; want 4 s (250+150 ticks)", cpu, err)
	}
	if _, err := parseStatCPU("4242 (short) S 1"); err == nil {
		t.Fatal("a short line must fail")
	}
	status := "Name:\tmanager\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t12\n"
	rss, hwm, err := parseStatusMemory(status)
	if err != nil || rss != 100<<20 || hwm != 200<<20 {
		t.Fatalf("rss %d hwm %d err %v", rss, hwm, err)
	}
	if _, _, err := parseStatusMemory("Name:\tx\nVmRSS:\t1 kB\n"); err == nil {
		t.Fatal("a status without VmHWM must fail")
	}
}

func TestMachineLocalChecks(t *testing.T) {
	loop := machineLocal{}
	netns := machineLocal{isolated: true, local: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("198.19.0.2/32")}}
	for ip, want := range map[string][2]bool{ // loopback mode, isolated mode
		"127.0.0.1": {true, true}, "127.64.3.9": {true, true}, "::1": {true, true}, "::ffff:127.0.0.5": {true, true},
		"198.18.3.7": {false, true}, "::ffff:198.18.3.7": {false, true}, "198.19.0.2": {false, true}, "198.19.0.3": {false, false},
		"10.0.0.1": {false, false}, "192.168.1.1": {false, false}, "fd00::1": {false, false}, "": {false, false}, "garbage": {false, false}} {
		if got := loop.contains(ip); got != want[0] {
			t.Errorf("loopback mode: contains(%q) = %v", ip, got)
		}
		if got := netns.contains(ip); got != want[1] {
			t.Errorf("isolated mode: contains(%q) = %v", ip, got)
		}
	}
	// Not isolated, a range is no help: only loopback counts.
	if (machineLocal{local: netns.local}).contains("198.18.3.7") {
		t.Error("a range counts only when isolated")
	}
	ss := strings.Join([]string{
		`LISTEN 0 4096 127.0.0.1:41001 0.0.0.0:* users:(("manager",pid=77,fd=7))`,
		`LISTEN 0 4096 [::]:8081 [::]:* users:(("manager",pid=77,fd=8))`,
		`ESTAB 0 0 127.0.0.1:50000 127.64.0.12:9090 users:(("manager",pid=77,fd=9))`,
		`ESTAB 0 0 127.0.0.1:50001 127.0.0.1:6443 users:(("manager",pid=77,fd=10))`,
		`ESTAB 0 0 10.1.1.1:50002 10.1.1.9:9090 users:(("other",pid=770,fd=3))`,
		`TIME-WAIT 0 0 127.0.0.1:50003 127.64.0.13:9090`,
	}, "\n")
	if bad := nonLocalPeers(ss, 77, loop); len(bad) != 0 {
		t.Fatalf("pid 77 has loopback peers only, got %v (pid 770's socket must not count)", bad)
	}
	inRange := ss + "\n" + `ESTAB 0 0 198.18.0.5:50006 198.18.0.9:9090 users:(("manager",pid=77,fd=13))`
	if bad := nonLocalPeers(inRange, 77, netns); len(bad) != 0 {
		t.Fatalf("isolated, a peer in the pod CIDR is machine-local, got %v", bad)
	}
	if bad := nonLocalPeers(inRange, 77, loop); len(bad) != 1 || bad[0] != "198.18.0.9:9090" {
		t.Fatalf("loopback mode, a peer in 198.18.0.0/16 is not machine-local, got %v", bad)
	}
	ss += "\n" + `ESTAB 0 0 10.1.1.1:50004 10.0.3.7:9090 users:(("manager",pid=77,fd=11))` +
		"\n" + `SYN-SENT 0 1 [fd00::2]:50005 [fd00::7]:9090 users:(("manager",pid=77,fd=12))`
	for _, m := range []machineLocal{loop, netns} {
		if bad := nonLocalPeers(ss, 77, m); len(bad) != 2 || bad[0] != "10.0.3.7:9090" || bad[1] != "[fd00::7]:9090" {
			t.Fatalf("%s: peers that are not machine-local: %v", m, bad)
		}
	}
	if peers := peersOnPort(ss, "9090"); len(peers) != 5 || peers[0] != "127.64.0.12:9090" || peers[4] != "[fd00::7]:9090" {
		t.Fatalf("peers on 9090: %v", peers)
	}
	for cidr, ok := range map[string]bool{"127.64.0.0/16": true, "127.0.0.0/8": true, "198.18.0.0/16": true, "10.0.0.0/16": true,
		"0.0.0.0/0": false, "10.0.0.0/7": false, "::1/128": false, "fd00::/64": false, "garbage": false} {
		if _, err := parsePodCIDR(cidr); (err == nil) != ok {
			t.Errorf("parsePodCIDR(%s): %v", cidr, err)
		}
	}
	if p, _ := parsePodCIDR("198.18.7.7/16"); p.String() != "198.18.0.0/16" {
		t.Errorf("parsePodCIDR masks: %s", p)
	}
	if a := lastAddr(netip.MustParsePrefix("198.18.0.0/15")); a.String() != "198.19.255.255" {
		t.Errorf("lastAddr: %s", a)
	}
}

// fakeNet is a network namespace for machineLocalFor: its interfaces, and the addresses reachable in it.
func fakeNet(ifaces []string, local ...string) netProbe {
	return netProbe{
		interfaces: func() ([]string, error) { return ifaces, nil },
		reach: func(a netip.Addr) error {
			for _, l := range local {
				if netip.MustParsePrefix(l).Contains(a) {
					return nil
				}
			}
			return errors.New("cannot assign requested address")
		},
	}
}

func TestMachineLocalFor(t *testing.T) {
	pods, node := netip.MustParsePrefix("198.18.0.0/16"), netip.MustParseAddr("198.19.0.2")
	loPods, loNode := netip.MustParsePrefix("127.64.0.0/16"), netip.MustParseAddr("127.0.0.2")
	onlyLo, host := []string{"lo"}, []string{"lo", "eth0"}
	for _, tc := range []struct {
		name       string
		pods       netip.Prefix
		node       netip.Addr
		probe      netProbe
		isolated   bool
		refusalHas string // "" when accepted
	}{
		{"loopback anywhere, the probe unused", loPods, loNode, netProbe{}, false, ""},
		{"the benchmarking range in a namespace with lo alone", pods, node, fakeNet(onlyLo, "198.18.0.0/15"), true, ""},
		{"the benchmarking range beside eth0", pods, node, fakeNet(host, "198.18.0.0/15"), false, "not lo alone"},
		{"loopback pods, a node IP that is not", loPods, node, fakeNet(host, "198.18.0.0/15"), false, "not lo alone"},
		{"no interface at all", pods, node, fakeNet(nil, "198.18.0.0/15"), false, "not lo alone"},
		{"no local route", pods, node, fakeNet(onlyLo), false, "198.18.0.0 (of 198.18.0.0/16) is not local"},
		{"half of the CIDR local", pods, node, fakeNet(onlyLo, "198.18.0.0/17", "198.19.0.0/16"), false, "198.18.255.255 (of 198.18.0.0/16) is not local"},
		{"the node IP outside the route", pods, netip.MustParseAddr("10.1.1.1"), fakeNet(onlyLo, "198.18.0.0/15"), false, "10.1.1.1 (of 10.1.1.1/32) is not local"},
		{"everything reachable: the probe proves nothing", pods, node, fakeNet(onlyLo, "0.0.0.0/0"), false, "192.0.2.1, outside them, is reachable"},
		{"the first control address inside the CIDR", netip.MustParsePrefix("192.0.2.0/24"), node, fakeNet(onlyLo, "192.0.2.0/24", "198.19.0.2/32"), true, ""},
	} {
		m, err := machineLocalFor(tc.pods, tc.node, tc.probe)
		switch {
		case tc.refusalHas == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refusalHas != "" && (err == nil || !strings.Contains(err.Error(), tc.refusalHas)):
			t.Errorf("%s: want a refusal with %q, got %v", tc.name, tc.refusalHas, err)
		case err == nil && m.isolated != tc.isolated:
			t.Errorf("%s: isolated = %v", tc.name, m.isolated)
		}
		if err == nil && !m.contains(tc.pods.Addr().Next().String()) {
			t.Errorf("%s: a pod IP is not machine-local once accepted", tc.name)
		}
	}
}

func TestReconciledSites(t *testing.T) {
	site := func(name string, gen, observed int64) v1alpha1.StaticSite {
		s := v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: gen}}
		s.Status.ObservedGeneration = observed
		return s
	}
	dep := func(replicas, ready, updated int32) appsv1.Deployment {
		d := appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
		d.Status.ReadyReplicas, d.Status.UpdatedReplicas = ready, updated
		return d
	}
	sites := []v1alpha1.StaticSite{
		site("done", 2, 2),     // reconciled, available
		site("old", 3, 2),      // observed an older generation: not reconciled
		site("nodeploy", 1, 1), // no Deployment yet: not reconciled
		site("starting", 1, 1), // reconciled, pods not ready yet
		site("rolling", 1, 1),  // reconciled, ready but not updated yet
	}
	deps := map[types.NamespacedName]appsv1.Deployment{
		{Namespace: "ns", Name: "done"}:     dep(2, 2, 2),
		{Namespace: "ns", Name: "old"}:      dep(2, 2, 2),
		{Namespace: "ns", Name: "starting"}: dep(2, 1, 2),
		{Namespace: "ns", Name: "rolling"}:  dep(2, 2, 1),
	}
	got := reconciledSites(sites, deps)
	if got != (progress{reconciled: 3, available: 1, readyPods: 5}) {
		t.Fatalf("progress: %+v", got)
	}
}
