package gitcontent

// What the Git steps saw in one pass.

import (
	"time"

	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// State is what the Git steps saw in one pass: package staticsite keeps it in its observation and reads it
// through the methods (Verdict, ContentRevision, ServedRevision, Published).
type State struct {
	ref      string        // spec.content.git.ref, for messages
	interval time.Duration // spec.content.git.interval (its default resolved)
	// missingSecrets names the Secrets of secretRef and webhookSecretRef that do not exist.
	missingSecrets []string
	// unlabelledCredentials names the secretRef Secret when it lacks LabelGitCredentials and the policy requires
	// it: the fetcher then runs as if secretRef were unset (fetcherSite).
	unlabelledCredentials string
	// fetcher is what the fetcher pod publishes (nil: not read); fetcherDown says why it could not be read when
	// the pod is failing, fetcherWaiting when it is starting.
	fetcher                     *gitrevision.Revision
	fetcherDown, fetcherWaiting string
	// pods are the ready server pods and what their pullers serve, in name order; podsRead: the pullers step ran.
	pods     []gitPod
	podsRead bool
	// pin is the wanted pin and what became of its delivery (deploys.go).
	pin pinState
}

// pinState is the pin the site asks for and what the fetcher did with it.
type pinState struct {
	want    string // the commit wanted ("" for none)
	invalid string // the annotation's value when it is not a commit
	asked   bool   // the site asks for a pin (valid or not)
	// refused: the commit is not in the fetcher's history; undelivered: why the pin could not be sent.
	refused     bool
	undelivered string
	// token is the pin token (nil: its Secret could not be read or made; tokenErr says why).
	token    []byte
	tokenErr string
}

// gitPod is a ready server pod's puller: what it serves (rev), or why it could not be read (err).
type gitPod struct {
	name string
	rev  *gitrevision.Revision
	err  string
}

// published says the fetcher published a commit.
func (g *State) published() bool { return g.fetcher != nil && g.fetcher.Published() }

// Published is the revision the fetcher published, nil before its first publish (or while it cannot be read).
func (g *State) Published() *gitrevision.Revision {
	if !g.published() {
		return nil
	}
	return g.fetcher
}

// servedBy counts the ready pods whose puller serves commit.
func (g *State) servedBy(commit string) int32 {
	var n int32
	for _, p := range g.pods {
		if p.rev != nil && p.rev.Commit == commit {
			n++
		}
	}
	return n
}
