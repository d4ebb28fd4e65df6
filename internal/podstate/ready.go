// Package podstate answers questions about a Pod's state that several controllers ask the same way.
package podstate

import corev1 "k8s.io/api/core/v1"

// Ready reports whether the pod's Ready condition is True: the kubelet's readiness probe passes and the pod
// receives Service traffic. It says nothing of deletion or phase; callers that need those check them too.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Serving reports whether the pod is running, Ready and not being deleted: a pod whose metrics describe the
// site's current load.
func Serving(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && Ready(p)
}

// Container is the container of that name in cs, nil when there is none.
func Container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// ContainerStatus is the status of the container of that name in cs, nil when there is none.
func ContainerStatus(cs []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
