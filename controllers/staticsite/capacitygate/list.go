package capacitygate

// Listing the site's measurement pods and Benchmarks, and deleting those that belong to no measurement wanted now.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// measurementChildren lists the site's measurement pods and Benchmarks that are not being deleted.
func (s Step) measurementChildren(ctx context.Context, site *v1alpha1.StaticSite) ([]corev1.Pod, []v1alpha1.Benchmark, error) {
	sel := client.MatchingLabels{v1alpha1.LabelCapacityProbeOf: site.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(site.Namespace), sel); err != nil {
		return nil, nil, fmt.Errorf("list measurement pods: %w", err)
	}
	benches := &v1alpha1.BenchmarkList{}
	if err := s.Client.List(ctx, benches, client.InNamespace(site.Namespace), sel); err != nil {
		return nil, nil, fmt.Errorf("list measurement Benchmarks: %w", err)
	}
	var ps []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() && metav1.IsControlledBy(&p, site) {
			ps = append(ps, p)
		}
	}
	var bs []v1alpha1.Benchmark
	for _, b := range benches.Items {
		if b.DeletionTimestamp.IsZero() && metav1.IsControlledBy(&b, site) {
			bs = append(bs, b)
		}
	}
	return ps, bs, nil
}

// deleteMeasurementChildren deletes the children that are not job's (all of them when job is nil): a
// measurement of another template or role, left from before the site changed.
func (s Step) deleteMeasurementChildren(ctx context.Context, pods []corev1.Pod, benches []v1alpha1.Benchmark, job *measurementJob) error {
	keep := func(o metav1.Object) bool {
		l := o.GetLabels()
		return job != nil && l[v1alpha1.LabelCapacityRole] == job.role && l[v1alpha1.LabelCapacityTemplate] == job.identity.ID
	}
	var stale []client.Object
	for i := range pods {
		if !keep(&pods[i]) {
			stale = append(stale, &pods[i])
		}
	}
	for i := range benches {
		if !keep(&benches[i]) {
			stale = append(stale, &benches[i])
		}
	}
	return Delete(ctx, s.Client, stale)
}

// Delete deletes a measurement's children (in the background: a pod's and a Benchmark's own children follow).
func Delete(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, o := range objs {
		if err := c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete measurement %s: %w", o.GetName(), err)
		}
	}
	return nil
}

func findPod(pods []corev1.Pod, name string) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

func findBenchmark(bs []v1alpha1.Benchmark, name string) *v1alpha1.Benchmark {
	for i := range bs {
		if bs[i].Name == name {
			return &bs[i]
		}
	}
	return nil
}

// Remove deletes every measurement child of the site, whatever its spec: a site placed in a pool has no pod of
// its own to measure (the pool is measured as a whole).
func (s Step) Remove(ctx context.Context, site *v1alpha1.StaticSite) error {
	pods, benches, err := s.measurementChildren(ctx, site)
	if err != nil {
		return err
	}
	return s.deleteMeasurementChildren(ctx, pods, benches, nil)
}
