package staticsite

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func getPodMonitor(ns, name string) (*unstructured.Unstructured, error) {
	pm := &unstructured.Unstructured{}
	pm.SetGroupVersionKind(desired.PodMonitorGVK)
	return pm, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pm)
}

// spec.monitoring against the Prometheus Operator's real PodMonitor CRD: missing, then installed (the PodMonitor
// appears without an edit), kept in sync, deleted with the field.
func TestPodMonitor(t *testing.T) {
	ctx := context.Background()
	crd, err := testenv.PodMonitorCRD()
	testenv.Must(t, err)
	env.UninstallCRD(t, crd)
	t.Cleanup(func() { env.UninstallCRD(t, crd) })

	ns := namespace(t)
	site := createSite(t, ns, "metrics", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/m:v1"},
		Monitoring: &v1alpha1.MonitoringSpec{Labels: map[string]string{"release": "kube-prometheus-stack"}, Interval: "15s"}})
	waitSite(t, ns, "metrics", "PodMonitorApplied False PodMonitorCRDMissing", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPodMonitorApplied, metav1.ConditionFalse, v1alpha1.ReasonPodMonitorCRDMissing)
	})
	waitEvent(t, ns, "metrics", "Warning PodMonitorCRDMissing PodMonitorApplied False: the cluster does not serve monitoring.coreos.com/v1 PodMonitors")
	rollOutAndWaitReady(t, ns, "metrics") // without the CRD

	env.InstallCRD(t, crd)
	waitSite(t, ns, "metrics", "PodMonitorApplied True", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPodMonitorApplied, metav1.ConditionTrue, v1alpha1.ReasonPodMonitorCreated)
	})
	pm, err := getPodMonitor(ns, "metrics")
	testenv.Must(t, err)
	if !metav1.IsControlledBy(pm, site) || pm.GetLabels()["release"] != "kube-prometheus-stack" || pm.GetLabels()[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
		t.Errorf("PodMonitor metadata: owners %v labels %v", pm.GetOwnerReferences(), pm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if want := []any{map[string]any{"port": "admin", "path": "/metrics", "interval": "15s"}}; !reflect.DeepEqual(endpoints, want) {
		t.Errorf("endpoints %v, want %v", endpoints, want)
	}
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if !reflect.DeepEqual(sel, sitechild.SelectorLabels(site)) {
		t.Errorf("selector %v", sel)
	}
	// The port name the PodMonitor scrapes is the pod template's admin port.
	d := getDeployment(t, ns, "metrics")
	if p := d.Spec.Template.Spec.Containers[0].Ports[1]; p.Name != "admin" || p.ContainerPort != v1alpha1.AdminPort {
		t.Errorf("admin port %+v", p)
	}

	// Drift is corrected through the PodMonitor's watch (TestExposureApplyIsSkippedWhenUnchanged: an unchanged one is
	// not written again).
	testenv.Eventually(t, "edit PodMonitor", func() error {
		pm, err := getPodMonitor(ns, "metrics")
		if err != nil {
			return err
		}
		testenv.Must(t, unstructured.SetNestedSlice(pm.Object, []any{map[string]any{"port": "http", "path": "/steal"}}, "spec", "podMetricsEndpoints"))
		return k8s.Update(ctx, pm)
	})
	testenv.Eventually(t, "PodMonitor restored", func() error {
		pm, err := getPodMonitor(ns, "metrics")
		if err != nil {
			return err
		}
		if e, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints"); len(e) != 1 || e[0].(map[string]any)["port"] != "admin" {
			return fmt.Errorf("endpoints %v", e)
		}
		return nil
	})
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Monitoring = nil })
	testenv.Eventually(t, "PodMonitor deleted", func() error {
		_, err := getPodMonitor(ns, "metrics")
		return testenv.Gone(err)
	})
	waitSite(t, ns, "metrics", "no PodMonitorApplied", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPodMonitorApplied, "", "")
	})
}
