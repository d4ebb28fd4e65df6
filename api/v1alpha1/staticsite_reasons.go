package v1alpha1

// Reasons the StaticSite controller writes on its conditions, grouped by the condition and status they go with.
// Polarity (kstatus): Ready, ContentAvailable, Pinned and ContentInMemory are normal-true (True is healthy); Reconciling and Stalled
// are abnormal-true (present only while they hold, removed otherwise). A reason names the state in CamelCase; the
// message carries the details. docs/staticsite.md lists them for users.

// Ready=True reasons.
const (
	// ReasonAvailable: every desired replica runs the current spec and is ready.
	ReasonAvailable = "Available"
	// ReasonScaledToZero: spec.replicas is 0, so there is nothing to wait for.
	ReasonScaledToZero = "ScaledToZero"
)

// Reconciling=True (and Ready=False) reasons: the operator or the Deployment is still moving towards the spec.
const (
	// ReasonCreating: the Deployment does not exist yet.
	ReasonCreating = "Creating"
	// ReasonProgressing: the Deployment controller has not observed the latest Deployment spec yet.
	ReasonProgressing = "Progressing"
	// ReasonRollingOut: pods of an older template are still being replaced or are terminating.
	ReasonRollingOut = "RollingOut"
	// ReasonWaitingForReadyPods: all pods run the current template but fewer than desired are ready.
	ReasonWaitingForReadyPods = "WaitingForReadyPods"
	// ReasonScalingUp: more replicas are wanted than are ready, every pod runs the current spec and none of the pods
	// that were ready was lost. Ready stays True (reason Available): the site serves as it did before the scale-up.
	ReasonScalingUp = "ScalingUp"
	// ReasonRetryingAfterError: a pass failed on a transient error (API unavailable, conflict); it is retried with
	// backoff and the rest of the status is left as the last complete pass wrote it.
	ReasonRetryingAfterError = "RetryingAfterError"
	// ReasonServerImageUpgradeQueued: the operator's default server image changed (an operator upgrade) and the
	// site waits for its turn to move to it, so that only a few sites roll at a time (operator flag
	// --server-image-rollout-concurrency). Unlike the reasons above it leaves Ready as it was: the site keeps
	// serving on its current image, a queued upgrade is not an outage. The message names the image and how many
	// sites are ahead.
	ReasonServerImageUpgradeQueued = "ServerImageUpgradeQueued"
)

// Stalled=True (and Ready=False) reasons: progress needs someone to act.
const (
	// ReasonProgressDeadlineExceeded: the Deployment's rollout passed its progress deadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonDeploymentRejected, ReasonServiceRejected, ReasonPodDisruptionBudgetRejected: the API server refused the
	// child object (quota, admission webhook, policy); the message has its answer.
	ReasonDeploymentRejected          = "DeploymentRejected"
	ReasonServiceRejected             = "ServiceRejected"
	ReasonPodDisruptionBudgetRejected = "PodDisruptionBudgetRejected"
	// ReasonNotOwned: an object with a child's name (Deployment, Service, PodDisruptionBudget or NetworkPolicy)
	// exists and is not controlled by the site (for the Ingress, HTTPRoute and PodMonitor it is said in their own
	// condition instead: see exposure_reasons.go). The operator never takes it over (it would be deleted with the site).
	ReasonNotOwned = "NotOwned"
	// ReasonPolicyViolation: a field of the spec breaks the operator's tenancy policy (the message names it); the
	// operator creates and changes no child until it is fixed, and what already runs stays as it was
	// (Stalled=True, Ready=False). docs/security.md lists the settings.
	ReasonPolicyViolation = "PolicyViolation"
)

// ContentAvailable reasons. True: the source exists and can be mounted or run. False (also Stalled=True): it
// cannot, or the server refuses it, and the site keeps whatever it served before.
const (
	// True: spec.content.image is set; the image itself is checked by the kubelet's pull (see ImagePullFailed).
	ReasonImageSpecified = "ImageSpecified"
	// True: every ConfigMap in spec.content.configMaps exists.
	ReasonConfigMapsFound = "ConfigMapsFound"
	// True: spec.content.imageVolume is set and the cluster supports image volumes.
	ReasonImageVolumeSpecified = "ImageVolumeSpecified"
	// True: the PersistentVolumeClaim exists and is bound.
	ReasonClaimFound = "ClaimFound"

	// False: a ConfigMap named in spec.content.configMaps does not exist.
	ReasonConfigMapNotFound = "ConfigMapNotFound"
	// False: the cluster cannot mount OCI image volumes (feature gate off or Kubernetes too old).
	ReasonImageVolumeUnsupported = "ImageVolumeUnsupported"
	// False: the PersistentVolumeClaim does not exist.
	ReasonClaimNotFound = "ClaimNotFound"
	// False: the PersistentVolumeClaim lost its volume.
	ReasonClaimLost = "ClaimLost"
	// False: the claim's volume can be mounted by one node (ReadWriteOnce) or one pod (ReadWriteOncePod) at a time
	// and the site asks for more than one replica.
	ReasonClaimAccessMode = "ClaimAccessMode"
	// False: spec.content sets no source (only possible for objects that bypassed validation).
	ReasonNoContentSource = "NoContentSource"
	// False: a pod cannot pull the site's image (ErrImagePull, ImagePullBackOff, InvalidImageName).
	ReasonImagePullFailed = "ImagePullFailed"
	// False: a pod's server refused the content, typically a bad _redirects or _headers rule (the message names the
	// pod, the file and the line). Either a running server's reload failed, and it keeps serving the content it had,
	// or a new server cannot start on it (its container's termination message). Cleared when the content is fixed.
	ReasonContentLoadFailed = "ContentLoadFailed"
)

// ContentAvailable reasons of a Git site (spec.content.git). A fetch failure never takes a served commit away: the
// pods keep the last good commit, so the False reasons below leave Ready as it was once a commit is served (a
// Warning event says why the newest commit is not served); before the first good commit no pod can start, and
// they make the site Stalled (Reconciling for GitUnreachable and GitFetcherUnavailable, which may pass by
// themselves). The Git* failure reasons are the fetcher's (internal/gitsource), prefixed; the operator accepts
// only these names from the fetcher and says GitFetchFailed for anything else.
const (
	// True: the fetcher published a checked commit of spec.content.git.ref.
	ReasonGitRevisionFetched = "GitRevisionFetched"
	// Unknown: the fetcher has not published a commit yet (its first fetch is under way).
	ReasonGitFetchPending = "GitFetchPending"
	// False: the fetcher pod is not running or its /revision cannot be read.
	ReasonGitFetcherUnavailable = "GitFetcherUnavailable"
	// False: a Secret named in spec.content.git.secretRef or webhookSecretRef does not exist.
	ReasonGitSecretNotFound = "GitSecretNotFound"
	// False: the Secret of spec.content.git.secretRef lacks LabelGitCredentials="true", which the tenancy policy
	// requires; the fetcher runs without it (it is not mounted).
	ReasonGitSecretNotLabelled = "GitSecretNotLabelled"
	// False: the host could not be reached or did not answer as a Git server (DNS, TCP, TLS, 5xx, timeout).
	ReasonGitUnreachable = "GitUnreachable"
	// False: the host refused the credentials, or asked for some and none were given.
	ReasonGitAuthFailed = "GitAuthFailed"
	// False: there is no repository at spec.content.git.url (forges say so for a private one without access, too).
	ReasonGitRepositoryNotFound = "GitRepositoryNotFound"
	// False: the ref does not exist (any more), or the commit is not reachable from any ref.
	ReasonGitRefNotFound = "GitRefNotFound"
	// False: the pack or the served tree is larger than spec.content.git.maxSize, or the tree has more entries
	// than maxEntries or a path deeper than maxDepth (the message names the limit and the path).
	ReasonGitTooLarge = "GitTooLarge"
	// False: the commit cannot be served as is: spec.content.git.path is missing, a link leaves the tree, a
	// submodule or an LFS pointer is in the served tree, or the server's --check refused a _redirects or _headers.
	ReasonGitInvalidContent = "GitInvalidContent"
	// False: the source itself is wrong (the URL, or the credentials Secret's keys); no fetch was tried.
	ReasonGitInvalidSource = "GitInvalidSource"
	// False: the Git server cannot do what the source needs (fetching a commit by hash where it is not allowed).
	ReasonGitUnsupported = "GitUnsupported"
	// False: the fetcher failed for another reason (its disk, the check not running); the message says which.
	ReasonGitFetchFailed = "GitFetchFailed"
)

// Pinned reasons. True: every ready pod's workers run on exclusive CPUs. False: by design (fractional spec.cpu) or
// because the node does not give exclusive CPUs. Unknown: no pod has said yet.
const (
	// True: every ready pod reports workers pinned to exclusive CPUs.
	ReasonExclusiveCPUs = "ExclusiveCPUs"
	// False: spec.cpu is fractional, so pods share the node's CPU pool by design.
	ReasonFractionalCPU = "FractionalCPU"
	// False: a pod asked for whole CPUs but runs on shared ones (the node's CPU manager policy is not static).
	ReasonSharedCPUs = "SharedCPUs"
	// Unknown: a ready pod's metrics could not be read.
	ReasonMetricsUnavailable = "MetricsUnavailable"
	// Unknown: no pod is ready yet.
	ReasonNoReadyPods = "NoReadyPods"
)

// ContentInMemory reasons. Normal-true, informational: True when every file is served from memory; False when part
// of the site is served from disk (correct, only slower: it does not affect Ready); Unknown while no ready pod
// that runs the current spec has reported its content.
const (
	// True: a ready pod reports every file held in memory.
	ReasonAllInMemory = "AllInMemory"
	// False: a ready pod serves some bytes from disk. The message names them and the memory limit that would hold
	// the whole site (status.content.fitMemoryLimit), or says that more memory would not help (files over the
	// server's --max-memory-file-size, or a --memory-budget in spec.server.extraArgs).
	ReasonPartlyOnDisk = "PartlyOnDisk"
	// Unknown: no ready pod runs the current spec, or its admin port could not be read, or its server is too old
	// to report content metrics. status.content is absent meanwhile.
	ReasonNotMeasured = "NotMeasured"
)
