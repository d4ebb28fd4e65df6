package gitcontent

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// The status of a Git site from what the steps saw: a pure function, every branch.
func TestGitVerdict(t *testing.T) {
	const c1, c2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	published := func(commit string, failure *gitrevision.Failure) *gitrevision.Revision {
		return &gitrevision.Revision{Digest: strings.Repeat("a", 64), Size: 10, Commit: commit, Ref: "refs/heads/main", Failure: failure,
			CommitTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	}
	serving := func(commits ...string) []gitPod {
		var out []gitPod
		for i, c := range commits {
			out = append(out, gitPod{name: string(rune('a' + i)), rev: &gitrevision.Revision{Digest: strings.Repeat("b", 64), Commit: c}})
		}
		return out
	}
	authFailed := &gitrevision.Failure{Reason: v1alpha1.ReasonGitAuthFailed, Message: "authentication required"}
	unreachable := &gitrevision.Failure{Reason: v1alpha1.ReasonGitUnreachable, Message: "dial tcp: i/o timeout"}
	for _, tc := range []struct {
		name         string
		g            State
		status       metav1.ConditionStatus
		reason       string
		stall, wait  bool
		messagePart  string
		servedColumn string
	}{
		{"first fetch under way", State{ref: "main", fetcher: &gitrevision.Revision{}, podsRead: true},
			metav1.ConditionUnknown, v1alpha1.ReasonGitFetchPending, false, true, "first fetch of main", ""},
		{"fetcher pod starting", State{ref: "main", fetcherWaiting: "waiting for the pod of Deployment docs-git", podsRead: true},
			metav1.ConditionUnknown, v1alpha1.ReasonGitFetchPending, false, true, "docs-git", ""},
		{"published, pods converging", State{ref: "main", fetcher: published(c2, nil), pods: serving(c1, c2), podsRead: true},
			metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched, false, false, "served by 1 of 2 ready pods", "1/2"},
		{"published, all served", State{ref: "main", fetcher: published(c2, nil), pods: serving(c2, c2), podsRead: true},
			metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched, false, false, "commit 222222222222 of refs/heads/main (committed 2026-01-02T03:04:05Z)", "2/2"},
		{"failure after a publish keeps Ready", State{ref: "main", fetcher: published(c1, authFailed), pods: serving(c1, c1), podsRead: true},
			metav1.ConditionFalse, v1alpha1.ReasonGitAuthFailed, false, false, "commit 111111111111 keeps being served (served by 2 of 2", "2/2"},
		{"failure before any publish stalls", State{ref: "main", fetcher: &gitrevision.Revision{Failure: authFailed}, podsRead: true},
			metav1.ConditionFalse, v1alpha1.ReasonGitAuthFailed, true, false, "no commit is served yet", ""},
		{"unreachable before any publish waits", State{ref: "main", fetcher: &gitrevision.Revision{Failure: unreachable}, podsRead: true},
			metav1.ConditionFalse, v1alpha1.ReasonGitUnreachable, false, true, "i/o timeout", ""},
		{"fetcher down while pods serve", State{ref: "main", fetcherDown: "the fetcher pod x is not running: CrashLoopBackOff", pods: serving(c1), podsRead: true},
			metav1.ConditionFalse, v1alpha1.ReasonGitFetcherUnavailable, false, false, "commit 111111111111 keeps being served", ""},
		{"fetcher down before any publish waits", State{ref: "main", fetcherDown: "ImagePullBackOff", podsRead: true},
			metav1.ConditionFalse, v1alpha1.ReasonGitFetcherUnavailable, false, true, "ImagePullBackOff", ""},
		{"missing Secret before any publish stalls", State{ref: "main", missingSecrets: []string{`"auth" (spec.content.git.secretRef)`}, fetcher: &gitrevision.Revision{Failure: authFailed}, podsRead: true},
			metav1.ConditionFalse, v1alpha1.ReasonGitSecretNotFound, true, false, `Secret "auth" (spec.content.git.secretRef) not found`, ""},
		{"missing Secret while serving", State{ref: "main", missingSecrets: []string{`"hook" (spec.content.git.webhookSecretRef)`}, fetcher: published(c1, nil), pods: serving(c1), podsRead: true},
			metav1.ConditionFalse, v1alpha1.ReasonGitSecretNotFound, false, false, "keeps being served", "1/1"},
		{"restarted fetcher, pods serve", State{ref: "main", fetcher: &gitrevision.Revision{}, pods: serving(c1, c1), podsRead: true},
			metav1.ConditionUnknown, v1alpha1.ReasonGitFetchPending, false, false, "commit 111111111111 keeps being served", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.g.Verdict()
			if v.Status != tc.status || v.Reason != tc.reason || (v.Stall != nil) != tc.stall || (v.Wait != nil) != tc.wait ||
				!strings.Contains(v.Message, tc.messagePart) {
				t.Errorf("verdict %s/%s stall=%v wait=%v %q\nwant %s/%s stall=%v wait=%v containing %q",
					v.Status, v.Reason, v.Stall != nil, v.Wait != nil, v.Message, tc.status, tc.reason, tc.stall, tc.wait, tc.messagePart)
			}
			r := tc.g.ServedRevision()
			got := ""
			if r != nil {
				got = r.Served
			}
			if got != tc.servedColumn {
				t.Errorf("served %q, want %q (%+v)", got, tc.servedColumn, r)
			}
		})
	}
	if got := RevisionString(&gitrevision.Revision{Commit: c1, Ref: "refs/tags/v1.2.0"}); got != "v1.2.0@sha1:"+c1 {
		t.Errorf("tag revision %q", got)
	}
	if got := RevisionString(&gitrevision.Revision{Commit: c1}); got != "sha1:"+c1 {
		t.Errorf("pinned revision %q", got)
	}
}
