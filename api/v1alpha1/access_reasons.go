package v1alpha1

// ConditionAccessApplied is True when the htpasswd Secret of spec.server.access holds a file the server accepts;
// present only while spec.server.access names one for a rule. False never makes Ready False: the servers keep the
// last good users they loaded (a bad file is refused when read) and keep serving.
const ConditionAccessApplied = "AccessApplied"

// AccessApplied reasons.
const (
	// True: the Secret holds bcrypt lines only; the message says how many users.
	ReasonHtpasswdAccepted = "HtpasswdAccepted"
	// False: the Secret, or its key, does not exist; new pods wait for it (running ones keep their users).
	ReasonHtpasswdSecretNotFound = "HtpasswdSecretNotFound"
	// False: a line is not a bcrypt line (the message names its number); the servers keep the last good users.
	ReasonHtpasswdInvalid = "HtpasswdInvalid"
)
