package benchmark

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// A Benchmark's children are named after it, labelled with its name and controlled by it (owner reference), so
// deleting the Benchmark deletes them. The builders here are pure; the steps create them.

// ScriptConfigMapName, ResultsConfigMapName and JobName name a Benchmark's children.
func ScriptConfigMapName(b *v1alpha1.Benchmark) string  { return b.Name + "-script" }
func ResultsConfigMapName(b *v1alpha1.Benchmark) string { return b.Name + "-results" }
func JobName(b *v1alpha1.Benchmark) string              { return b.Name }

// childLabels are set on every child (and on the Job's pods).
func childLabels(b *v1alpha1.Benchmark) map[string]string {
	return map[string]string{v1alpha1.LabelBenchmark: b.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}
}

func ownerRef(b *v1alpha1.Benchmark) metav1.OwnerReference {
	return *metav1.NewControllerRef(b, v1alpha1.GroupVersion.WithKind("Benchmark"))
}

// desiredScriptConfigMap holds the k6 script, the paths and the plan (see internal/k6script).
func desiredScriptConfigMap(b *v1alpha1.Benchmark, files map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ScriptConfigMapName(b), Namespace: b.Namespace, Labels: childLabels(b),
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
		Data:      files,
		Immutable: ptr.To(true), // a run's script never changes; a new run is a new Benchmark
	}
}

// desiredResultsConfigMap is created empty when the run starts (the server samples accumulate in it) and filled
// with results.json, results.csv and chart.svg when it ends.
func desiredResultsConfigMap(b *v1alpha1.Benchmark) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ResultsConfigMapName(b), Namespace: b.Namespace, Labels: childLabels(b),
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
		Data: map[string]string{},
	}
}
