package benchmark

import (
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// Names, paths and annotations of a Benchmark's children.
const (
	// ContainerName is the k6 container of the Job's pods.
	ContainerName = "k6"
	// ScriptDir is where the script ConfigMap is mounted in the k6 pods.
	ScriptDir = "/etc/hyperstatic/benchmark"
	// AnnotationStartAt on the Job holds the Unix time (ms) at which every pod starts step 0.
	AnnotationStartAt = "hyperstatic.dev/start-at-ms"
	// AnnotationDeadline on the Job holds the Unix time (ms) after which the run times out (creation + timeout).
	AnnotationDeadline = "hyperstatic.dev/deadline-ms"
	// RunAsUser is the k6 pods' user (the "nonroot" user of distroless images).
	RunAsUser = 65532
)

// cpuOf and memoryOf apply the defaults the CRD also sets.
func cpuOf(b *v1alpha1.Benchmark) resource.Quantity {
	if b.Spec.CPU != nil && !b.Spec.CPU.IsZero() {
		return *b.Spec.CPU
	}
	return resource.MustParse("1")
}

func memoryOf(b *v1alpha1.Benchmark) resource.Quantity {
	if b.Spec.Memory != nil && !b.Spec.Memory.IsZero() {
		return *b.Spec.Memory
	}
	return resource.MustParse("512Mi")
}

func parallelismOf(b *v1alpha1.Benchmark) int32 {
	if b.Spec.Parallelism < 1 {
		return 1
	}
	return b.Spec.Parallelism
}

// timeoutOf is spec.timeout, or the planned duration plus 5 minutes.
func timeoutOf(b *v1alpha1.Benchmark, plan k6script.Plan, startDelay time.Duration) time.Duration {
	if b.Spec.Timeout != nil && b.Spec.Timeout.Duration > 0 {
		return b.Spec.Timeout.Duration
	}
	return startDelay + plan.Duration() + 5*time.Minute
}

// desiredJob is the Indexed Job that runs the k6 pods. backoffLimit 0: a failed run is reported, never silently
// re-run (a re-run would load the target twice and mix two runs' numbers). Each pod's completion index is its
// execution segment. The pods are Guaranteed (requests == limits), meet the restricted Pod Security Standard, and
// prefer nodes without the target's server pods, so client and server do not share CPUs when there is a choice
// (k6Affinity). targetPod holds the labels of the loaded pod for target.pod (the plan's TargetPodLabels), else nil.
func desiredJob(b *v1alpha1.Benchmark, targetPod map[string]string, image string, now, startAt time.Time, timeout time.Duration) *batchv1.Job {
	n := parallelismOf(b)
	labels := childLabels(b)
	res := corev1.ResourceList{corev1.ResourceCPU: cpuOf(b), corev1.ResourceMemory: memoryOf(b)}
	if b.Spec.Image != "" {
		image = b.Spec.Image
	}
	startMs := strconv.FormatInt(startAt.UnixMilli(), 10)
	affinity := k6Affinity(b, targetPod)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(b), Namespace: b.Namespace, Labels: labels,
			Annotations: map[string]string{AnnotationStartAt: startMs,
				AnnotationDeadline: strconv.FormatInt(now.Add(timeout).UnixMilli(), 10)},
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)}},
		Spec: batchv1.JobSpec{
			CompletionMode:        ptr.To(batchv1.IndexedCompletion),
			Completions:           ptr.To(n),
			Parallelism:           ptr.To(n),
			BackoffLimit:          ptr.To(int32(0)),
			ActiveDeadlineSeconds: ptr.To(int64((timeout + time.Minute).Seconds())), // backstop if the operator is down
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					AutomountServiceAccountToken:  ptr.To(ptr.Deref(b.Spec.AutomountServiceAccountToken, false)), // k6 never calls the API: no token unless asked
					ServiceAccountName:            b.Spec.ServiceAccountName,
					ImagePullSecrets:              imagePullSecrets(b.Spec.ImagePullSecrets),
					EnableServiceLinks:            ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					NodeSelector:                  b.Spec.NodeSelector,
					Tolerations:                   b.Spec.Tolerations,
					Affinity:                      affinity,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To(int64(RunAsUser)),
						RunAsGroup:     ptr.To(int64(RunAsUser)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"/runner"},
						Args:            []string{"-k6=/k6", "-dir=" + ScriptDir},
						Env:             k6Env(b, startMs, n),
						Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "script", MountPath: ScriptDir, ReadOnly: true},
							{Name: "tmp", MountPath: "/tmp"},
						},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: []corev1.Volume{
						{Name: "script", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: ScriptConfigMapName(b)}}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
							SizeLimit: ptr.To(resource.MustParse("64Mi"))}}},
					},
				},
			},
		},
	}
}

// k6Affinity is the k6 pods' preferred pod anti-affinity (preferred, never required: a one-node cluster still runs
// the benchmark). Most important, weight 100: no pod measured on the node. For target.pod that is the loaded pod,
// selected by all the labels it had when the target was resolved: a pod name is no label, but a selector of every
// label of a pod certainly matches it, and matches besides only pods that carry the same labels (its siblings of one
// template). The site's serving pods (hyperstatic.dev/site) come next for target.pod (a probe is not one of them,
// and the public traffic they carry shares the node's CPUs), first otherwise. Then the k6 pods spread among
// themselves: two on one node share its CPUs and its network.
func k6Affinity(b *v1alpha1.Benchmark, targetPod map[string]string) *corev1.Affinity {
	term := func(weight int32, match map[string]string) corev1.WeightedPodAffinityTerm {
		return corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: match}}}
	}
	var terms []corev1.WeightedPodAffinityTerm
	siteWeight := int32(100)
	if len(targetPod) > 0 {
		terms = append(terms, term(100, targetPod))
		siteWeight = 60
	}
	if site := b.Spec.Target.StaticSite; site != "" {
		terms = append(terms, term(siteWeight, map[string]string{v1alpha1.LabelSite: site}))
	}
	terms = append(terms, term(50, map[string]string{v1alpha1.LabelBenchmark: b.Name}))
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}
}

// k6Env is the k6 container's environment. spec.protocol HTTP/1.1 sets GODEBUG=http2client=0: k6 (v0.36 on,
// internal/js/runner.go: forceHTTP1) then leaves HTTP/2 out of its transport, so it offers only http/1.1 in ALPN
// over TLS too. k6 has no other switch for it (grafana/k6#936). Auto and HTTP/2 leave k6's default, which
// negotiates h2 over TLS.
func k6Env(b *v1alpha1.Benchmark, startMs string, pods int32) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "HS_START_AT_MS", Value: startMs},
		{Name: "HS_PARALLELISM", Value: strconv.Itoa(int(pods))},
		{Name: "K6_NO_USAGE_REPORT", Value: "true"},
		{Name: "TMPDIR", Value: "/tmp"},
	}
	if b.Spec.Protocol == v1alpha1.ProtocolHTTP11 {
		env = append(env, corev1.EnvVar{Name: "GODEBUG", Value: "http2client=0"})
	}
	return env
}

// imagePullSecrets converts the API's references to the pod's, keeping their order; nil for none.
func imagePullSecrets(refs []v1alpha1.LocalObjectReference) []corev1.LocalObjectReference {
	if len(refs) == 0 {
		return nil
	}
	out := make([]corev1.LocalObjectReference, len(refs))
	for i, r := range refs {
		out[i] = corev1.LocalObjectReference{Name: r.Name}
	}
	return out
}

// startAtOf and deadlineOf read the times a Job was created with.
func startAtOf(job *batchv1.Job) (time.Time, error)  { return annotationTime(job, AnnotationStartAt) }
func deadlineOf(job *batchv1.Job) (time.Time, error) { return annotationTime(job, AnnotationDeadline) }

func annotationTime(job *batchv1.Job, key string) (time.Time, error) {
	ms, err := strconv.ParseInt(job.Annotations[key], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("job %s: annotation %s: %w", job.Name, key, err)
	}
	return time.UnixMilli(ms), nil
}
