package v1alpha1

// ConditionAccessApplied is True when the Secrets of spec.server.access hold what the server and the login agent
// accept: the htpasswd Secret (for basicAuth rules) and the sso Secret (for signIn rules); present only while a
// rule needs one. With both, False names the first bad one, True carries both messages and the reason
// SSOAccepted. False never makes Ready False: the servers keep the
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
	// True: the sso Secret holds a client secret and one or two good session keys; the message says where users
	// sign in.
	ReasonSSOAccepted = "SSOAccepted"
	// False: the sso Secret, or one of its keys (client-secret, session-keys), does not exist; new pods wait for it.
	ReasonSSOSecretNotFound = "SSOSecretNotFound"
	// False: session-keys is not one or two lines of base64 of 32 to 64 bytes (the message names the line, never
	// a key); the servers keep the last good keys.
	ReasonSSOSecretInvalid = "SSOSecretInvalid"
)
