package v1alpha1

// Benchmark conditions, reasons and phases. The Benchmark controller derives all of them in one function from
// what a pass observed (controllers/benchmark/status.go); docs/benchmark-controller.md is the prose contract.
//
// Polarity: a "normal-true" condition is True when things are well; an "abnormal-true" one is True when something
// needs attention. Running, Complete and Failed are set on every pass from the first; TargetResolved too;
// ClientBound only once results were collected (before that nothing is known about the client).

// Benchmark condition types.
const (
	// BenchmarkTargetResolved (normal-true): the target's URL (and, for paths.allFiles, its file list) is known and
	// written into the script ConfigMap. False while the controller waits for the target.
	BenchmarkTargetResolved = "TargetResolved"
	// BenchmarkRunning (normal-true while running): the k6 Job exists and has not finished.
	BenchmarkRunning = "Running"
	// BenchmarkComplete (normal-true, terminal): every k6 pod finished and the merged results are published.
	BenchmarkComplete = "Complete"
	// BenchmarkFailed (abnormal-true, terminal): the run could not produce results (Job failed, timeout, target
	// never resolved, unreadable results). The reason says which; partial results may still be published.
	BenchmarkFailed = "Failed"
	// BenchmarkClientBound (abnormal-true): in at least one step the k6 pods used >= 90% of their CPU, so that
	// step measured the client, not the server. Such steps are never presented as server capacity.
	BenchmarkClientBound = "ClientBound"
	// BenchmarkTargetChanged (abnormal-true, sticky): the target StaticSite's generation or ready pod count differs
	// from status.targetAtStart, so the run measured more than one configuration. Once True it stays True: the
	// numbers already mix both. Set only for StaticSite targets, from the Job's creation on.
	BenchmarkTargetChanged = "TargetChanged"
)

// A Benchmark also carries ConditionReconciling (True while it has no outcome: Pending or Running) and
// ConditionStalled (True once Failed), with the reason and message of the condition they repeat: kstatus, and the
// GitOps tools that read health through it (Flux), know those two and none of the above.

// BenchmarkAbnormalTrueConditions are the Benchmark conditions that are True when something needs attention (see
// StaticSiteAbnormalTrueConditions); the others are normal-true.
var BenchmarkAbnormalTrueConditions = []string{BenchmarkFailed, BenchmarkClientBound, BenchmarkTargetChanged, ConditionReconciling, ConditionStalled}

// Reasons of TargetResolved.
const (
	// BenchmarkReasonResolved (True): the base URL and the paths are known.
	BenchmarkReasonResolved = "Resolved"
	// BenchmarkReasonServiceNotFound (False): the StaticSite has no Service yet.
	BenchmarkReasonServiceNotFound = "ServiceNotFound"
	// BenchmarkReasonNoHTTPPort (False): the StaticSite's Service has no port named "http".
	BenchmarkReasonNoHTTPPort = "NoHTTPPort"
	// BenchmarkReasonNoHTTPSPort (False): protocol HTTP/2 loads a StaticSite's https port, and its Service (or,
	// with target.pod, the pod) has none (the site has no spec.tls).
	BenchmarkReasonNoHTTPSPort = "NoHTTPSPort"
	// BenchmarkReasonNoReadyPod (False): paths.allFiles needs a ready server pod to list the files; none is.
	BenchmarkReasonNoReadyPod = "NoReadyPod"
	// BenchmarkReasonNoContent (False): the StaticSite serves no file.
	BenchmarkReasonNoContent = "NoContent"
	// BenchmarkReasonContentListFailed (False): no ready server pod answered the file list request.
	BenchmarkReasonContentListFailed = "ContentListFailed"
	// BenchmarkReasonPodNotFound (False): target.pod names no pod in the Benchmark's namespace.
	BenchmarkReasonPodNotFound = "PodNotFound"
	// BenchmarkReasonPodNotOfSite (False): target.pod is not a pod of target.staticSite: it has neither the label
	// hyperstatic.dev/site=<site>, nor hyperstatic.dev/capacity-probe-of=<site> together with a controller owner
	// reference to that StaticSite.
	BenchmarkReasonPodNotOfSite = "PodNotOfSite"
	// BenchmarkReasonPodNotReady (False): target.pod is not running and Ready, is being deleted, or has no IP.
	BenchmarkReasonPodNotReady = "PodNotReady"
)

// Reasons of Running, Complete and Failed while no outcome is known, and of a successful outcome.
const (
	// BenchmarkReasonWaitingForTarget (Running, Complete, Failed all False): the target is not resolved yet.
	BenchmarkReasonWaitingForTarget = "WaitingForTarget"
	// BenchmarkReasonJobRunning (Running=True): the k6 Job exists and has not finished.
	BenchmarkReasonJobRunning = "JobRunning"
	// BenchmarkReasonInProgress (Complete=False, Failed=False): the run is going on.
	BenchmarkReasonInProgress = "InProgress"
	// BenchmarkReasonFinished (Running=False): the k6 Job has finished and its output was collected.
	BenchmarkReasonFinished = "Finished"
	// BenchmarkReasonResultsPublished (Complete=True): the merged results are in the results ConfigMap.
	BenchmarkReasonResultsPublished = "ResultsPublished"
	// BenchmarkReasonSucceeded (Failed=False, terminal): the run completed.
	BenchmarkReasonSucceeded = "Succeeded"
)

// Reasons of Failed=True. The same reason is put on Running=False and Complete=False of a failed run.
const (
	// BenchmarkReasonJobFailed: the Job controller failed the k6 Job (a pod failed; backoffLimit is 0).
	BenchmarkReasonJobFailed = "JobFailed"
	// BenchmarkReasonTimeout: the run did not end by its deadline; the Job is deleted to stop the load.
	BenchmarkReasonTimeout = "Timeout"
	// BenchmarkReasonJobDeleted: the k6 Job disappeared before it finished; a run is never restarted.
	BenchmarkReasonJobDeleted = "JobDeleted"
	// BenchmarkReasonTargetNotResolved: the target stayed unresolved for spec.timeout (default 10 min).
	BenchmarkReasonTargetNotResolved = "TargetNotResolved"
	// BenchmarkReasonInvalidSpec: the spec passed the API server's validation but no plan can be made from it.
	BenchmarkReasonInvalidSpec = "InvalidSpec"
	// BenchmarkReasonPolicyViolation: a field of the spec breaks the operator's tenancy policy (the message names
	// it); no k6 pod runs. docs/security.md lists the settings.
	BenchmarkReasonPolicyViolation = "PolicyViolation"
	// BenchmarkReasonInvalidScript: the script ConfigMap's plan cannot be read.
	BenchmarkReasonInvalidScript = "InvalidScript"
	// BenchmarkReasonInvalidJob: the k6 Job lacks its start or deadline annotation.
	BenchmarkReasonInvalidJob = "InvalidJob"
	// BenchmarkReasonNoResults: the k6 pods completed but reported no request.
	BenchmarkReasonNoResults = "NoResults"
	// BenchmarkReasonChildNotOwned: an object with a child's name exists and is not controlled by this Benchmark;
	// the controller leaves it untouched.
	BenchmarkReasonChildNotOwned = "ChildNotOwned"
)

// Reasons of ClientBound.
const (
	// BenchmarkReasonClientCPUSaturated (True): at least one step had a k6 pod at >= 90% of its CPU.
	BenchmarkReasonClientCPUSaturated = "ClientCPUSaturated"
	// BenchmarkReasonClientHadHeadroom (False): every step's k6 pods stayed below 90% of their CPU.
	BenchmarkReasonClientHadHeadroom = "ClientHadHeadroom"
)

// Reasons of TargetChanged.
const (
	// BenchmarkReasonTargetUnchanged (False): the target is as it was when the k6 Job was created.
	BenchmarkReasonTargetUnchanged = "TargetUnchanged"
	// BenchmarkReasonTargetSpecChanged (True): the StaticSite's generation changed (its spec, replicas included).
	BenchmarkReasonTargetSpecChanged = "TargetSpecChanged"
	// BenchmarkReasonTargetReadyPodsChanged (True): the StaticSite's ready pod count changed.
	BenchmarkReasonTargetReadyPodsChanged = "TargetReadyPodsChanged"
	// BenchmarkReasonTargetDeleted (True): the StaticSite was deleted during the run.
	BenchmarkReasonTargetDeleted = "TargetDeleted"
)

// Reasons of Failed=True that concern the results rather than the Job.
const (
	// BenchmarkReasonResultsTruncated: no k6 pod's result block could be read whole (log missing, rotated or
	// larger than the read limit); the message names the pods.
	BenchmarkReasonResultsTruncated = "ResultsTruncated"
	// BenchmarkReasonResultsTooLarge: the k6 pods' result blocks together pass the operator's budget (8 MiB):
	// the pods past it are not parsed, so that no run, whatever its pods print, can exhaust the operator's memory.
	BenchmarkReasonResultsTooLarge = "ResultsTooLarge"
)

// Benchmark phases, derived from the conditions (for display only: act on conditions).
const (
	BenchmarkPhasePending  = "Pending"
	BenchmarkPhaseRunning  = "Running"
	BenchmarkPhaseComplete = "Complete"
	BenchmarkPhaseFailed   = "Failed"
)
