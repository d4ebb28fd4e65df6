package capacitygate

// The children of a capacity measurement: a measurement pod (probe or canary) made from a pod template, and the
// Benchmark that loads it. Pure builders; step.go decides when they exist.

import (
	"encoding/json"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/capacity"
)

const (
	// RoleProbe measures the serving template; RoleCanary a candidate of the performance gate.
	RoleProbe  = "probe"
	RoleCanary = "canary"
	// annotationCapacityStarted is when the measurement's first child was created, by the controller's clock: the
	// readiness deadline and status.capacity.took count from it (the creation timestamp is the API server's clock,
	// which the controller's injected clock need not share).
	annotationCapacityStarted = "hyperstatic.dev/capacity-started"
	// ProbeReadyTimeout is how long a measurement pod has to become Ready.
	ProbeReadyTimeout = 3 * time.Minute
	// MeasurementRetry is how soon a failed measurement is tried again.
	MeasurementRetry = 5 * time.Minute
	// benchmarkMemory is the memory of a measurement's k6 pod.
	benchmarkMemory = "256Mi"
	// benchmarkTimeoutMargin is added to the load's duration for the Benchmark's timeout (k6 pod start, results).
	benchmarkTimeoutMargin = 3 * time.Minute
	// maxBenchmarkName is the Benchmark CRD's limit on names.
	maxBenchmarkName = 60
)

// Wanted: the site asked for capacity figures, or something that needs them is on.
func Wanted(site *v1alpha1.StaticSite) bool {
	return site.Spec.Capacity != nil || GateSpec(site) != nil ||
		(site.Spec.Autoscaling != nil && site.Spec.Autoscaling.TargetUtilization != nil)
}

// GateSpec is spec.rollout.performanceGate, nil when the gate is off.
func GateSpec(site *v1alpha1.StaticSite) *v1alpha1.PerformanceGateSpec {
	if site.Spec.Rollout == nil {
		return nil
	}
	return site.Spec.Rollout.PerformanceGate
}

// templateKeys are the server container and content-hash annotation that identify a template, as package desired
// builds a site's pods after the conventions of package sitechild.
var templateKeys = capacity.TemplateKeys{ServerContainer: sitechild.ContainerName, ContentHashAnnotation: sitechild.AnnotationContentHash}

// Identify names a pod template. The content revision is the current one when the template carries the current
// content hash; otherwise (a template of older content) it is what the template itself names: the image volume's
// reference, or the baked image.
func Identify(t *corev1.PodTemplateSpec, content Content) v1alpha1.TemplateIdentity {
	id := capacity.Identify(t, templateKeys, "")
	if t.Annotations[templateKeys.ContentHashAnnotation] == content.RollHash {
		id.ContentRevision = content.Revision
		return id
	}
	for _, v := range t.Spec.Volumes {
		if v.Name == sitechild.SiteVolumeName && v.Image != nil {
			id.ContentRevision = v.Image.Reference
		}
	}
	if id.ContentRevision == "" {
		id.ContentRevision = id.ServerImage
	}
	return id
}

// PodTemplateOf turns a desired pod template (an apply configuration) into the typed form: its JSON is the
// typed object's.
func PodTemplateOf(ac *corev1ac.PodTemplateSpecApplyConfiguration) (corev1.PodTemplateSpec, error) {
	var t corev1.PodTemplateSpec
	b, err := json.Marshal(ac)
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal(b, &t)
}

// MeasurementName is the name of a measurement's pod and Benchmark: <site>-cap-<id[:8]>, the site's part cut so
// the whole stays a DNS label the Benchmark CRD accepts.
func MeasurementName(site, id string) string {
	suffix := "-cap-" + id[:min(8, len(id))]
	prefix := site[:min(len(site), maxBenchmarkName-len(suffix))]
	return strings.TrimRight(prefix, "-") + suffix
}

// measurementLabels are the labels of a measurement's children: the operator's (the manager's cache holds only
// those), the site, the template and the role. Never LabelSite nor app.kubernetes.io/name: the Service,
// Deployment, PodDisruptionBudget, NetworkPolicy and autoscaler select on those.
func measurementLabels(site *v1alpha1.StaticSite, id, role string) map[string]string {
	return map[string]string{
		v1alpha1.LabelManagedBy:        v1alpha1.ManagedByValue,
		v1alpha1.LabelCapacityProbeOf:  site.Name,
		v1alpha1.LabelCapacityTemplate: id,
		v1alpha1.LabelCapacityRole:     role,
	}
}

func controllerRef(site *v1alpha1.StaticSite) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(site, v1alpha1.GroupVersion.WithKind("StaticSite"))}
}

// measurementPod is a pod of template that gets no traffic but the measurement's: the site's selector labels are
// removed, the measurement's added. It keeps the template's resources (Guaranteed) and security context, and
// keeps off the nodes of other measurement pods: two loads on one node would measure each other.
//
// Only the site's own namespace can keep it from being scheduled: the required anti-affinity names the pods of
// its namespace (no namespaces, no namespaceSelector), and the measurement pods of other namespaces are avoided
// by a preferred term only. Anyone who may create a pod can give it LabelCapacityRole (the CRD refuses the key in
// spec.podTemplate.labels, but not on a plain Pod or another controller's), so a required term over every
// namespace let one tenant's pods leave every probe and canary of the cluster Pending (issue 38). In its own
// namespace a tenant can only block their own measurement.
func measurementPod(site *v1alpha1.StaticSite, t corev1.PodTemplateSpec, id, role, name string, now time.Time) *corev1.Pod {
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for k := range sitechild.SelectorLabels(site) {
		delete(labels, k)
	}
	maps.Copy(labels, measurementLabels(site, id, role))
	annotations := maps.Clone(t.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationCapacityStarted] = now.UTC().Format(time.RFC3339)
	spec := *t.Spec.DeepCopy()
	spec.RestartPolicy = corev1.RestartPolicyAlways
	// One pod: the site's spread constraints (over the serving pods' labels) say nothing about it.
	spec.TopologySpreadConstraints = nil
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.PodAntiAffinity == nil {
		spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	anti := spec.Affinity.PodAntiAffinity
	measurementPods := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: v1alpha1.LabelCapacityRole, Operator: metav1.LabelSelectorOpExists}}}
	anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{
		LabelSelector: measurementPods, // in the pod's own namespace only
		TopologyKey:   corev1.LabelHostname,
	})
	anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution, corev1.WeightedPodAffinityTerm{
		Weight: 100,
		PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector:     measurementPods.DeepCopy(),
			NamespaceSelector: &metav1.LabelSelector{}, // every namespace
			TopologyKey:       corev1.LabelHostname,
		},
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: site.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: controllerRef(site)},
		Spec: spec,
	}
}

// capacityDuration, capacityConcurrency, loadCPU, latencyObjective and capacityTarget are spec.capacity's fields or their defaults.
func capacityDuration(site *v1alpha1.StaticSite) time.Duration {
	if c := site.Spec.Capacity; c != nil && c.Duration != nil {
		return c.Duration.Duration
	}
	d, _ := time.ParseDuration(v1alpha1.DefaultCapacityDuration)
	return d
}

func capacityConcurrency(site *v1alpha1.StaticSite) int32 {
	if c := site.Spec.Capacity; c != nil && c.Concurrency != nil {
		return *c.Concurrency
	}
	return v1alpha1.DefaultCapacityConcurrency
}

func loadCPU(site *v1alpha1.StaticSite) resource.Quantity {
	if c := site.Spec.Capacity; c != nil && c.LoadCPU != nil {
		return c.LoadCPU.DeepCopy()
	}
	return resource.MustParse("1")
}

func latencyObjective(site *v1alpha1.StaticSite) time.Duration {
	if c := site.Spec.Capacity; c != nil && c.LatencyObjective != nil {
		return c.LatencyObjective.Duration
	}
	d, _ := time.ParseDuration(v1alpha1.DefaultCapacityLatencyObj)
	return d
}

func capacityTarget(site *v1alpha1.StaticSite) v1alpha1.CapacityTarget {
	if c := site.Spec.Capacity; c != nil && c.Target != "" {
		return c.Target
	}
	return v1alpha1.CapacityTargetProbe
}

// measurementBenchmark loads pod, one of site's, with a constant closed-model load of every file, compressed as
// browsers ask for it, over HTTP/1.1 from one k6 pod; its Job goes once the results are in.
func measurementBenchmark(site *v1alpha1.StaticSite, id, role, name, pod string, now time.Time) *v1alpha1.Benchmark {
	cpu, mem := loadCPU(site), resource.MustParse(benchmarkMemory)
	d := capacityDuration(site)
	return &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: site.Namespace, Labels: measurementLabels(site, id, role),
			Annotations:     map[string]string{annotationCapacityStarted: now.UTC().Format(time.RFC3339)},
			OwnerReferences: controllerRef(site)},
		Spec: v1alpha1.BenchmarkSpec{
			Target:         v1alpha1.BenchmarkTarget{StaticSite: site.Name, Pod: pod},
			Protocol:       v1alpha1.ProtocolHTTP11,
			AcceptEncoding: "br, gzip",
			Paths:          &v1alpha1.BenchmarkPaths{AllFiles: true},
			Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{
				VUs: capacityConcurrency(site), Duration: metav1.Duration{Duration: d}, KeepAlive: ptr.To(true)}},
			Parallelism: 1,
			CPU:         &cpu,
			Memory:      &mem,
			Timeout:     &metav1.Duration{Duration: d + benchmarkTimeoutMargin},
			Cleanup:     v1alpha1.CleanupDelete,
		},
	}
}

// startedAt reads a child's annotationCapacityStarted, falling back to its creation time.
func startedAt(o metav1.Object) time.Time {
	if t, err := time.Parse(time.RFC3339, o.GetAnnotations()[annotationCapacityStarted]); err == nil {
		return t
	}
	return o.GetCreationTimestamp().Time
}
