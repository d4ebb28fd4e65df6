package gitwebhook

import (
	"encoding/json"
	"strconv"
)

// PullRequest is one authenticated pull-request (GitHub, Gitea) or merge-request (GitLab) event: the request was
// opened, got new commits, was reopened, or was closed or merged. The forge keeps the request's ref after it is
// closed, so Closed is the only word a receiver gets that a preview of it should go.
type PullRequest struct {
	Provider Provider
	// RepoURLs are the base repository's addresses, as Push.RepoURLs.
	RepoURLs []string
	Number   int
	// Ref is the forge's ref of the request: refs/pull/<N>/head (GitHub, Gitea), refs/merge-requests/<N>/head
	// (GitLab).
	Ref string
	// Head is the request's head commit after the event (40 hex).
	Head string
	// Action is the forge's own word (opened, synchronize, synchronized, update, closed, merge, ...).
	Action string
	// Closed is true when the request is closed or merged.
	Closed bool
}

// SameRepo is true when one of the event's repository URLs names the same repository as repoURL (Push.SameRepo).
func (p PullRequest) SameRepo(repoURL string) bool { return sameRepo(p.RepoURLs, repoURL) }

type gitHubPRPayload struct {
	Action      string `json:"action"`
	Number      int    `json:"number"`
	PullRequest struct {
		State string `json:"state"`
		Head  struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
	Repository gitHubRepository `json:"repository"`
}

func parseGitHubLikePullRequest(p Provider, body []byte) (PullRequest, error) {
	var in gitHubPRPayload
	if err := json.Unmarshal(body, &in); err != nil {
		return PullRequest{}, fail(BadRequest, "%s pull_request payload: %v", p, err)
	}
	return finishPullRequest(PullRequest{
		Provider: p, RepoURLs: in.Repository.urls(), Number: in.Number,
		Ref: "refs/pull/" + strconv.Itoa(in.Number) + "/head", Head: in.PullRequest.Head.SHA, Action: in.Action,
		Closed: in.Action == "closed" || in.PullRequest.State == "closed",
	})
}

type gitLabMRPayload struct {
	ObjectKind string `json:"object_kind"`
	Project    struct {
		HTTPURL string `json:"git_http_url"`
		SSHURL  string `json:"git_ssh_url"`
		WebURL  string `json:"web_url"`
	} `json:"project"`
	Attributes struct {
		IID        int    `json:"iid"`
		Action     string `json:"action"`
		State      string `json:"state"`
		LastCommit struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
}

func parseGitLabMergeRequest(body []byte) (PullRequest, error) {
	var in gitLabMRPayload
	if err := json.Unmarshal(body, &in); err != nil {
		return PullRequest{}, fail(BadRequest, "gitlab merge request payload: %v", err)
	}
	if in.ObjectKind != "merge_request" {
		return PullRequest{}, fail(NotPush, "gitlab object_kind %q", in.ObjectKind)
	}
	a, pr := in.Attributes, in.Project
	return finishPullRequest(PullRequest{
		Provider: GitLab, RepoURLs: nonEmpty(pr.HTTPURL, pr.SSHURL, pr.WebURL), Number: a.IID,
		Ref: "refs/merge-requests/" + strconv.Itoa(a.IID) + "/head", Head: a.LastCommit.ID, Action: a.Action,
		Closed: a.Action == "close" || a.Action == "merge" || a.State == "closed" || a.State == "merged",
	})
}

// finishPullRequest checks what every event must carry: a number, a 40-hex head, a repository.
func finishPullRequest(p PullRequest) (PullRequest, error) {
	if p.Number <= 0 {
		return PullRequest{}, fail(BadRequest, "%s pull request: number %d", p.Provider, p.Number)
	}
	if !isHex40(p.Head) {
		return PullRequest{}, fail(BadRequest, "%s pull request #%d: head %q is not a commit hash", p.Provider, p.Number, p.Head)
	}
	if len(p.RepoURLs) == 0 {
		return PullRequest{}, fail(BadRequest, "%s pull request #%d: no repository URL", p.Provider, p.Number)
	}
	return p, nil
}
