package staticsite

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/podtext"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// A server refuses content it cannot load, typically a bad _redirects or _headers rule; its message names the file
// and the line. ContentAvailable=False with reason ContentLoadFailed (and so Stalled, Ready=False) carries it,
// read from either of two places, because the failure shows in one of two ways:
//
//   - A running server whose reload fails keeps serving its previous content and stays ready. Its admin port says
//     so: hyperstatic_content_load_failed and /load-error (podmetrics), read from a ready pod in
//     observeServedContent.
//   - A server whose first load fails exits before it was ever ready, so there is no admin port to read. It writes
//     the error to its termination log (/dev/termination-log, below), which the kubelet shows as the
//     container's termination message: in state.terminated while it is down, then in lastState.terminated while it
//     waits in CrashLoopBackOff.
//
// Both are rebuilt from the pods in every pass, so the condition clears once the content is fixed: the reload
// succeeds, or new servers start and run.

// TerminationMessagePrefix starts the termination message of a server whose first content load failed
// (images/server/src/site/load_error.rs). Anything else in a termination message is not a content failure.
const TerminationMessagePrefix = "content load failed: "

// The pod template says nothing about the termination message: the server writes to the kubelet's default path,
// /dev/termination-log, by itself when that file exists (images/server/src/config.rs), and the default policy
// (File) shows what it wrote. Any field the operator added to the server container here would change every site's
// pod template at once on the operator upgrade that brings it, rolling every site together: exactly what the
// server-image rollout queue (serverimage.go) exists to prevent.

// StartFailure is the content error a pod's server exited with on its last start, if that is why it is down. A
// server that runs again got past its first load: an older termination message no longer says anything.
func StartFailure(p *corev1.Pod) (string, bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != sitechild.ContainerName || cs.State.Running != nil {
			continue
		}
		t := cs.State.Terminated
		if t == nil && cs.State.Waiting != nil {
			t = cs.LastTerminationState.Terminated
		}
		if t != nil && t.ExitCode != 0 && strings.HasPrefix(t.Message, TerminationMessagePrefix) {
			// The kubelet bounds the message to 4 KiB; the pod wrote it: escaped and bounded for the status.
			return podtext.Clean(strings.TrimSpace(t.Message), podtext.MaxStatusText), true
		}
	}
	return "", false
}

// observeStartFailures records the first pod (in list order) that runs the current content and whose server
// cannot start on it, unless the content already has a problem.
func observeStartFailures(st *observation) {
	for i := range st.pods {
		p := &st.pods[i]
		if st.contentProblem != nil {
			return
		}
		if st.content.RollHash != "" && !current(p, st.content) {
			continue // an older image's failure says nothing of the current one
		}
		if msg, ok := StartFailure(p); ok {
			st.contentProblem = &problem{Reason: v1alpha1.ReasonContentLoadFailed, Message: fmt.Sprintf("the server of pod %s cannot start: %s", p.Name, msg)}
		}
	}
}

// observeReloadFailure records a ready pod's failed reload, unless the content already has a problem.
func observeReloadFailure(st *observation, pod string, s podmetrics.Sample) {
	if !s.LoadFailed || st.contentProblem != nil {
		return
	}
	if strings.HasPrefix(s.LoadError, sitevalue.LoadErrorPrefix) {
		return // the content loads; the site value was refused: SiteValueApplied says so (step_sitevalue.go)
	}
	st.contentProblem = &problem{Reason: v1alpha1.ReasonContentLoadFailed, Message: fmt.Sprintf("the server of pod %s refused the new content and keeps serving the previous one: %s", pod, podtext.Clean(s.LoadError, podtext.MaxStatusText))}
}
