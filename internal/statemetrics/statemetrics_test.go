package statemetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

func site(name string, mutate func(*v1alpha1.StaticSite)) *v1alpha1.StaticSite {
	s := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// The exposition a scrape gets: the collector over a fake cache of plain objects (the mapping is pure; the
// monitoring test, hack/monitoring, scrapes the real manager).
func TestCollectorExposesObjectiveCapacityAndConditions(t *testing.T) {
	measured := site("measured", func(s *v1alpha1.StaticSite) {
		s.Spec.Capacity = &v1alpha1.CapacitySpec{LatencyObjective: &metav1.Duration{Duration: 25 * time.Millisecond}}
		s.Status.Capacity = &v1alpha1.CapacityStatus{Current: true,
			CapacityMeasurement: v1alpha1.CapacityMeasurement{RPSPerPod: 41000}}
		s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}}
		s.Status.Content = &v1alpha1.ServedContent{Revision: &v1alpha1.ContentRevision{Commit: "abc", ServedBy: 1, ReadyPods: 3}}
	})
	// A stale measurement says nothing about the pods serving now: no capacity series.
	stale := site("stale", func(s *v1alpha1.StaticSite) {
		s.Status.Capacity = &v1alpha1.CapacityStatus{Current: false,
			CapacityMeasurement: v1alpha1.CapacityMeasurement{RPSPerPod: 900}}
	})
	bench := &v1alpha1.Benchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b"},
		Status: v1alpha1.BenchmarkStatus{Conditions: []metav1.Condition{
			{Type: "Failed", Status: metav1.ConditionTrue, Reason: "PolicyViolation"}}}}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(measured, stale, bench).Build()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(reader))
	want := `
# HELP hyperstatic_benchmark_status_condition 1 for each condition of a Benchmark, with its status and reason.
# TYPE hyperstatic_benchmark_status_condition gauge
hyperstatic_benchmark_status_condition{benchmark="b",condition="Failed",namespace="team",reason="PolicyViolation",status="True"} 1
# HELP hyperstatic_staticsite_capacity_rps_per_pod Requests per second one server pod of a StaticSite serves at capacity (status.capacity.rpsPerPod), while the measurement is current.
# TYPE hyperstatic_staticsite_capacity_rps_per_pod gauge
hyperstatic_staticsite_capacity_rps_per_pod{namespace="team",staticsite="measured"} 41000
# HELP hyperstatic_staticsite_git_pods_behind Ready server pods of a Git site that do not serve the commit its fetcher published (status.content.revision: readyPods - servedBy).
# TYPE hyperstatic_staticsite_git_pods_behind gauge
hyperstatic_staticsite_git_pods_behind{namespace="team",staticsite="measured"} 2
# HELP hyperstatic_staticsite_latency_objective_seconds The 99th percentile latency a StaticSite should keep (spec.capacity.latencyObjective, default 100ms).
# TYPE hyperstatic_staticsite_latency_objective_seconds gauge
hyperstatic_staticsite_latency_objective_seconds{namespace="team",staticsite="measured"} 0.025
hyperstatic_staticsite_latency_objective_seconds{namespace="team",staticsite="stale"} 0.1
# HELP hyperstatic_staticsite_status_condition 1 for each condition of a StaticSite, with its status and reason.
# TYPE hyperstatic_staticsite_status_condition gauge
hyperstatic_staticsite_status_condition{condition="Ready",namespace="team",reason="Ready",staticsite="measured",status="True"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}

// Names lists exactly the families the collector describes.
func TestNamesAreTheDescribedFamilies(t *testing.T) {
	ch := make(chan *prometheus.Desc, 8)
	New(nil).Describe(ch)
	close(ch)
	var described []string
	for d := range ch {
		described = append(described, d.String())
	}
	if len(described) != len(Names()) {
		t.Fatalf("%d families described, Names lists %d", len(described), len(Names()))
	}
	for i, name := range Names() {
		if !strings.Contains(described[i], `fqName: "`+name+`"`) {
			t.Errorf("family %d is %s, Names says %s", i, described[i], name)
		}
	}
}
