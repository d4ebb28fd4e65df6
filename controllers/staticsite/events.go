package staticsite

// Event reasons the StaticSite controller records besides condition transitions (which use the condition's own
// reason, see api/v1alpha1/staticsite_reasons.go).
const (
	// eventCreated, eventUpdated, eventDeleted: a child object (Deployment, Service, PodDisruptionBudget) was
	// created, changed to the desired state, or deleted because it is no longer wanted.
	eventCreated = "Created"
	eventUpdated = "Updated"
	eventDeleted = "Deleted"
	// eventPinnedPrefix + the Pinned condition's status ("PinnedTrue", "PinnedFalse") when it changes.
	eventPinnedPrefix = "Pinned"
	// eventContentChanged: status.contentRevision moved to a new revision.
	eventContentChanged = "ContentChanged"
	// eventContentPartlyOnDisk (Warning): ContentInMemory turned False; the message names the bytes served from
	// disk and the memory limit that would hold the site. eventContentInMemory (Normal): it turned True after False.
	eventContentPartlyOnDisk = "ContentPartlyOnDisk"
	eventContentInMemory     = "ContentInMemory"
)

// deploymentTimedOutReason is the reason the Deployment controller puts on Progressing=False when a rollout passes
// spec.progressDeadlineSeconds (k8s.io/kubernetes' deploymentutil.TimedOutReason, not importable from here).
const deploymentTimedOutReason = "ProgressDeadlineExceeded"
