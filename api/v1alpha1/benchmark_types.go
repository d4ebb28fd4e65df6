package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Benchmark runs k6 inside the cluster against a StaticSite (or a plain URL), merges the results of every k6
// pod correctly (requests summed, latency percentiles from merged histograms) and says whether the load generator
// was the limit. A Benchmark runs once: its spec is immutable, create a new one to run again.

// BenchmarkSpec is what to load, how, and what counts as a pass.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new Benchmark to run again"
// +kubebuilder:validation:XValidation:rule="!has(self.paths) || !has(self.paths.allFiles) || !self.paths.allFiles || has(self.target.staticSite)",message="paths.allFiles needs target.staticSite: a plain URL cannot list its files"
// +kubebuilder:validation:XValidation:rule="!has(self.workload.sweep) || self.workload.sweep.from >= (has(self.parallelism) ? self.parallelism : 1)",message="workload.sweep.from must be at least parallelism: every k6 pod needs a VU"
// +kubebuilder:validation:XValidation:rule="!has(self.workload.constant) || self.workload.constant.vus >= (has(self.parallelism) ? self.parallelism : 1)",message="workload.constant.vus must be at least parallelism: every k6 pod needs a VU"
// +kubebuilder:validation:XValidation:rule="!has(self.workload.arrivalRate) || self.workload.arrivalRate.rate >= (has(self.parallelism) ? self.parallelism : 1)",message="workload.arrivalRate.rate must be at least parallelism"
// +kubebuilder:validation:XValidation:rule="!has(self.protocol) || self.protocol != 'HTTP/2' || has(self.target.staticSite) || (has(self.target.url) && self.target.url.startsWith('https://'))",message="protocol HTTP/2 needs an https target: k6 speaks HTTP/2 over TLS only (no h2c); use an https:// target.url, or a target.staticSite with spec.tls"
type BenchmarkSpec struct {
	// Target is what to load: a StaticSite by name or a plain URL.
	Target BenchmarkTarget `json:"target"`

	// Protocol is the HTTP version k6 loads the target with. Auto (default) takes what k6 negotiates: HTTP/2 over
	// TLS when the server offers it (ALPN), HTTP/1.1 otherwise; a StaticSite target is loaded on its http port.
	// HTTP/1.1 turns k6's HTTP/2 off (GODEBUG=http2client=0 in the k6 pods). HTTP/2 needs TLS (k6 has no h2c): an
	// https:// URL, or a StaticSite with spec.tls, loaded on its https port. status.protocol says what the
	// responses actually used.
	// +kubebuilder:default=Auto
	// +optional
	Protocol BenchmarkProtocol `json:"protocol,omitempty"`

	// AcceptEncoding is the Accept-Encoding header of every request (k6 sends none by default), e.g. "br, gzip" to
	// load a site as browsers do. k6 reads the encoded bodies whole and discards them without decoding (the script
	// keeps no body), so any encoding the server picks works and bytesReceived counts what crossed the wire.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9*,;=. -]*$`
	AcceptEncoding string `json:"acceptEncoding,omitempty"`

	// Paths are the URL paths requested, one chosen at random per request. Default: "/".
	// +optional
	Paths *BenchmarkPaths `json:"paths,omitempty"`

	// Workload is the load shape: exactly one of sweep, constant, arrivalRate.
	Workload BenchmarkWorkload `json:"workload"`

	// Parallelism is the number of k6 pods; the load is split between them with k6 execution segments.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	Parallelism int32 `json:"parallelism,omitempty"`

	// CPU of each k6 pod (requests == limits, so the pod is Guaranteed). One k6 process drives about 9k req/s per
	// core on a small machine: size this and parallelism so the client is not the limit.
	// +kubebuilder:default="1"
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory of each k6 pod (requests == limits).
	// +kubebuilder:default="512Mi"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// Thresholds decide the verdict; without any, the verdict is empty.
	// +optional
	Thresholds *BenchmarkThresholds `json:"thresholds,omitempty"`

	// Timeout bounds the whole run, from the Job's creation; default: the planned duration plus 5 minutes.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Cleanup decides what happens to the Job and its pods once results are collected: DeleteOnSuccess (default)
	// keeps a failed run's pods for debugging, Delete always deletes them, Keep never does.
	// +kubebuilder:default=DeleteOnSuccess
	// +optional
	Cleanup BenchmarkCleanupPolicy `json:"cleanup,omitempty"`

	// Image overrides the k6 image (default: the operator's --k6-image).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// NodeSelector for the k6 pods. They also prefer nodes without the target's server pods.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations for the k6 pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// imagePullSecrets, serviceAccountName and automountServiceAccountToken of the k6 pods (e.g. for a k6 image
	// in a private registry).
	PodIdentity `json:",inline"`
}

// BenchmarkTarget names exactly one target.
// +kubebuilder:validation:XValidation:rule="has(self.staticSite) != has(self.url)",message="target: set exactly one of staticSite or url"
// +kubebuilder:validation:XValidation:rule="!has(self.pod) || has(self.staticSite)",message="target.pod needs target.staticSite: it names a pod of that site"
type BenchmarkTarget struct {
	// StaticSite is the name of a StaticSite in the Benchmark's namespace; its Service's http port is loaded.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	StaticSite string `json:"staticSite,omitempty"`
	// Pod names one pod of staticSite to load directly at its IP, not through the Service: a capacity probe or
	// canary the operator made for the site (label hyperstatic.dev/capacity-probe-of=<site>), or one of its serving
	// pods (hyperstatic.dev/site=<site>). Server figures are then sampled from that pod only. Needs staticSite.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod,omitempty"`
	// URL is a plain http(s) base URL, e.g. http://nginx.default.svc:80.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/\s]+(/\S*)?$`
	URL string `json:"url,omitempty"`
}

// BenchmarkPaths is an explicit list of URL paths, or every file of the target StaticSite.
// +kubebuilder:validation:XValidation:rule="has(self.list) != (has(self.allFiles) && self.allFiles)",message="paths: set exactly one of list or allFiles: true"
type BenchmarkPaths struct {
	// List of URL paths, each starting with "/".
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:Pattern=`^/\S*$`
	// +kubebuilder:validation:items:MaxLength=1024
	List []string `json:"list,omitempty"`
	// AllFiles requests every file the StaticSite serves (listed by its server's admin /content endpoint).
	// +optional
	AllFiles bool `json:"allFiles,omitempty"`
}

// BenchmarkWorkload is exactly one load shape.
// +kubebuilder:validation:XValidation:rule="(has(self.sweep) ? 1 : 0) + (has(self.constant) ? 1 : 0) + (has(self.arrivalRate) ? 1 : 0) == 1",message="workload: set exactly one of sweep, constant, arrivalRate"
type BenchmarkWorkload struct {
	// Sweep steps the number of concurrent connections (k6 VUs) from..to by step: the classic static-file method.
	// +optional
	Sweep *SweepWorkload `json:"sweep,omitempty"`
	// Constant runs a fixed number of VUs (closed model).
	// +optional
	Constant *ConstantWorkload `json:"constant,omitempty"`
	// ArrivalRate starts requests at a fixed rate whatever the latency (open model: no coordinated omission).
	// +optional
	ArrivalRate *ArrivalRateWorkload `json:"arrivalRate,omitempty"`
}

// SweepWorkload steps the concurrency.
// +kubebuilder:validation:XValidation:rule="!has(self.stepDuration) || duration(self.stepDuration) >= duration('5s')",message="sweep.stepDuration must be at least 5s"
// +kubebuilder:validation:XValidation:rule="self.to >= self.from",message="sweep: to must be >= from"
// +kubebuilder:validation:XValidation:rule="(self.to - self.from) / self.step < 200",message="sweep: at most 200 steps"
type SweepWorkload struct {
	// From is the first step's concurrency (VUs over all k6 pods).
	// +kubebuilder:validation:Minimum=1
	From int32 `json:"from"`
	// To is the last step's concurrency (inclusive when reached by whole steps).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	To int32 `json:"to"`
	// Step is the concurrency increment.
	// +kubebuilder:validation:Minimum=1
	Step int32 `json:"step"`
	// StepDuration is how long each step loads (at least 5s).
	// +kubebuilder:default="30s"
	// +optional
	StepDuration metav1.Duration `json:"stepDuration,omitempty"`
	// KeepAlive reuses connections (default true, like the classic benchmarks); false opens one per request.
	// +kubebuilder:default=true
	// +optional
	KeepAlive *bool `json:"keepAlive,omitempty"`
}

// ConstantWorkload is a fixed number of VUs for a duration.
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || duration(self.duration) >= duration('5s')",message="constant.duration must be at least 5s"
type ConstantWorkload struct {
	// VUs is the concurrency over all k6 pods.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	VUs int32 `json:"vus"`
	// Duration of the run (at least 5s).
	// +kubebuilder:default="60s"
	// +optional
	Duration metav1.Duration `json:"duration,omitempty"`
	// KeepAlive reuses connections (default true).
	// +kubebuilder:default=true
	// +optional
	KeepAlive *bool `json:"keepAlive,omitempty"`
}

// ArrivalRateWorkload is an open-model load: Rate requests start every second whatever the latency.
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || duration(self.duration) >= duration('5s')",message="arrivalRate.duration must be at least 5s"
type ArrivalRateWorkload struct {
	// Rate is the target requests per second over all k6 pods.
	// +kubebuilder:validation:Minimum=1
	Rate int32 `json:"rate"`
	// Duration of the run (at least 5s).
	// +kubebuilder:default="60s"
	// +optional
	Duration metav1.Duration `json:"duration,omitempty"`
	// MaxVUs caps the VUs k6 may use to keep the rate (default: rate/10, at least 10, at most 10000). When k6 runs
	// out of VUs it drops iterations, reported as dropped.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxVUs int32 `json:"maxVUs,omitempty"`
	// KeepAlive reuses connections (default true).
	// +kubebuilder:default=true
	// +optional
	KeepAlive *bool `json:"keepAlive,omitempty"`
}

// BenchmarkThresholds decide the verdict over the whole run (like k6 thresholds): every set threshold must hold.
type BenchmarkThresholds struct {
	// P99 is the highest acceptable 99th percentile latency, e.g. "50ms".
	// +optional
	P99 *metav1.Duration `json:"p99,omitempty"`
	// MaxErrorRate is the highest acceptable share of failed requests, a percentage such as "1%" or "0.1%".
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?%$`
	MaxErrorRate string `json:"maxErrorRate,omitempty"`
}

// BenchmarkProtocol is the HTTP version a Benchmark asks k6 for.
// +kubebuilder:validation:Enum=Auto;HTTP/1.1;HTTP/2
type BenchmarkProtocol string

const (
	// ProtocolAuto takes what k6 negotiates: HTTP/2 over TLS when offered, else HTTP/1.1.
	ProtocolAuto BenchmarkProtocol = "Auto"
	// ProtocolHTTP11 forces HTTP/1.1, over TLS too.
	ProtocolHTTP11 BenchmarkProtocol = "HTTP/1.1"
	// ProtocolHTTP2 loads over TLS, where k6 negotiates HTTP/2.
	ProtocolHTTP2 BenchmarkProtocol = "HTTP/2"
)

// BenchmarkCleanupPolicy says when the Job and its pods are deleted after a run.
// +kubebuilder:validation:Enum=DeleteOnSuccess;Delete;Keep
type BenchmarkCleanupPolicy string

const (
	// CleanupDeleteOnSuccess deletes the Job of a complete run and keeps a failed run's pods for debugging.
	CleanupDeleteOnSuccess BenchmarkCleanupPolicy = "DeleteOnSuccess"
	// CleanupDelete deletes the Job once results are collected, whatever the outcome.
	CleanupDelete BenchmarkCleanupPolicy = "Delete"
	// CleanupKeep never deletes the Job (it still goes when the Benchmark is deleted).
	CleanupKeep BenchmarkCleanupPolicy = "Keep"
)

// Benchmark condition types, reasons and phases are in benchmark_conditions.go.

// Benchmark verdicts.
const (
	VerdictPass = "Pass"
	VerdictFail = "Fail"
)

// BenchmarkStatus is rebuilt from the world (Job, pods, results) on every reconcile.
type BenchmarkStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Running, Complete, Failed, ClientBound, TargetResolved (see the constants for polarity).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Phase is a one-word summary of the conditions, for kubectl get.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Target is the resolved base URL.
	// +optional
	Target string `json:"target,omitempty"`
	// Job is the name of the k6 Job.
	// +optional
	Job string `json:"job,omitempty"`
	// StartAt is the wall-clock time at which every k6 pod starts its first step (they wait for it, so steps line up).
	// +optional
	StartAt *metav1.Time `json:"startAt,omitempty"`
	// CompletionTime is when the results were published or the run failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Results names the ConfigMap holding results.json, results.csv and chart.svg.
	// +optional
	Results string `json:"results,omitempty"`
	// Summary is the compact result.
	// +optional
	Summary *BenchmarkSummary `json:"summary,omitempty"`
	// Protocol is the HTTP version of the run's responses as k6 reported it (its responses' proto: "HTTP/1.1",
	// "HTTP/2.0"), counted over every k6 pod and step, not taken from spec.protocol. Responses of more than one
	// version are joined with "+", most used first (the results' warnings give the counts). Empty until the
	// results are collected, and when no response arrived.
	// +optional
	Protocol string `json:"protocol,omitempty"`
	// TargetAtStart is the target StaticSite as it was when the k6 Job was created. A run whose target's spec
	// (generation) or ready pod count changes before the outcome is recorded measured more than one
	// configuration: condition TargetChanged says so.
	// +optional
	TargetAtStart *BenchmarkTargetState `json:"targetAtStart,omitempty"`
	// Dropped lists what the results ConfigMap left out to stay under the 1 MiB object limit (empty: nothing).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Dropped []string `json:"dropped,omitempty"`
}

// BenchmarkTargetState is a StaticSite's configuration at one moment, as far as it decides what a run measures.
type BenchmarkTargetState struct {
	// StaticSite is the target's name.
	StaticSite string `json:"staticSite"`
	// Generation is the StaticSite's metadata.generation: any spec change (content, cpu, replicas, ...) bumps it.
	Generation int64 `json:"generation"`
	// Replicas is the StaticSite's spec.replicas (what the scale subresource and autoscalers write).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the StaticSite's status.readyReplicas: the server pods that took the load.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}

// BenchmarkSummary is the headline of a run. Latencies are strings with units ("1.25ms") so they read well.
type BenchmarkSummary struct {
	// Peak is what the Peak RPS column shows: the highest requests/s of a step that was not client-bound, or
	// ">=N (client-bound)" when every step was limited by the client (then N is a lower bound of the server's capacity).
	Peak string `json:"peak"`
	// PeakRPS is the highest requests/s of a step that was not client-bound (0 when there is none).
	PeakRPS int64 `json:"peakRPS"`
	// MeasuredPeakRPS is the highest requests/s of any step, client-bound or not.
	MeasuredPeakRPS int64 `json:"measuredPeakRPS"`
	// PeakStep is the step index (0-based) the latencies below come from: the peak step.
	PeakStep int32 `json:"peakStep"`
	// PeakConcurrency is the VUs of the peak step (the target rate for arrivalRate).
	PeakConcurrency int32 `json:"peakConcurrency"`
	// P50, P90, P99 latencies at the peak step, from the merged histogram of every k6 pod.
	P50 string `json:"p50"`
	P90 string `json:"p90"`
	P99 string `json:"p99"`
	// ServerCPU is the CPU (cores) the target's server pods used at the peak step, e.g. "0.049" (empty for a URL
	// target, or when no server sample fell inside the step). The peak step is the one p50/p90/p99 come from
	// (peakStep): the fastest step that was not client-bound, or, when every step was, the fastest step of all.
	// +optional
	ServerCPU string `json:"serverCPU,omitempty"`
	// ServerRPS is the requests per second the target's server pods counted at the peak step (0: unknown).
	// +optional
	ServerRPS int64 `json:"serverRPS,omitempty"`
	// RequestsPerCPUSecond is requests per second of server CPU time at the peak step (0: unknown).
	// +optional
	RequestsPerCPUSecond int64 `json:"requestsPerCPUSecond,omitempty"`
	// ServerCPULimit is the CPU limit (cores) of the measured server pod when the target is one pod (target.pod):
	// its server container's (the one declaring the "http" port), e.g. "0.05"; empty without a limit.
	// +optional
	ServerCPULimit string `json:"serverCPULimit,omitempty"`
	// Requests over the whole run, all pods.
	Requests int64 `json:"requests"`
	// Errors over the whole run (network errors and HTTP status >= 400).
	Errors int64 `json:"errors"`
	// ErrorRate over the whole run, as a percentage.
	ErrorRate string `json:"errorRate"`
	// Steps in the run, and how many of them were client-bound.
	Steps            int32 `json:"steps"`
	ClientBoundSteps int32 `json:"clientBoundSteps"`
	// Verdict is Pass or Fail against spec.thresholds (whole run), empty without thresholds.
	// +optional
	Verdict string `json:"verdict,omitempty"`
	// VerdictReason says which threshold failed, or why there is no verdict.
	// +optional
	VerdictReason string `json:"verdictReason,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hsbench,categories=hyperstatic
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.target`
// +kubebuilder:printcolumn:name="Peak RPS",type=string,JSONPath=`.status.summary.peak`
// +kubebuilder:printcolumn:name="p99",type=string,JSONPath=`.status.summary.p99`
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.status.protocol`,description="HTTP version of the responses measured"
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.summary.verdict`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 60 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label of at most 60 characters (lowercase letters, digits and '-'): it names the k6 Job (its job-name label holds at most 63) and the Job's pods' hostnames <name>-<index>, index up to 63"

// Benchmark is an in-cluster k6 load test of a StaticSite or URL.
type Benchmark struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BenchmarkSpec   `json:"spec"`
	Status BenchmarkStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BenchmarkList is a list of Benchmarks.
type BenchmarkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Benchmark `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Benchmark{}, &BenchmarkList{})
}
