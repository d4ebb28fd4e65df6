package gitwebhook

import (
	"encoding/json"
	"strings"
)

// zeroCommit is the "after" of a push that deleted its ref.
const zeroCommit = "0000000000000000000000000000000000000000"

// gitHubPush holds the fields of a GitHub push payload this package reads; Gitea's has the same names.
type gitHubPush struct {
	Ref        string           `json:"ref"`
	After      string           `json:"after"`
	Deleted    bool             `json:"deleted"`
	Repository gitHubRepository `json:"repository"`
}

// gitHubRepository is the repository of a GitHub or Gitea event (push and pull_request alike).
type gitHubRepository struct {
	CloneURL string `json:"clone_url"`
	SSHURL   string `json:"ssh_url"`
	HTMLURL  string `json:"html_url"`
}

// urls are the repository's addresses, for SameRepo.
func (r gitHubRepository) urls() []string { return nonEmpty(r.CloneURL, r.SSHURL, r.HTMLURL) }

func parseGitHubLike(p Provider, body []byte) (Push, error) {
	var in gitHubPush
	if err := json.Unmarshal(body, &in); err != nil {
		return Push{}, fail(BadRequest, "%s push payload: %v", p, err)
	}
	return finish(Push{Provider: p, Ref: in.Ref, After: in.After, Deleted: in.Deleted, RepoURLs: in.Repository.urls()})
}

// gitLabPush holds the fields of a GitLab push or tag push payload this package reads.
type gitLabPush struct {
	ObjectKind string `json:"object_kind"`
	Ref        string `json:"ref"`
	After      string `json:"after"`
	Project    struct {
		HTTPURL string `json:"git_http_url"`
		SSHURL  string `json:"git_ssh_url"`
		WebURL  string `json:"web_url"`
	} `json:"project"`
}

func parseGitLab(body []byte) (Push, error) {
	var in gitLabPush
	if err := json.Unmarshal(body, &in); err != nil {
		return Push{}, fail(BadRequest, "gitlab push payload: %v", err)
	}
	if in.ObjectKind != "push" && in.ObjectKind != "tag_push" {
		return Push{}, fail(NotPush, "gitlab object_kind %q", in.ObjectKind)
	}
	pr := in.Project
	return finish(Push{Provider: GitLab, Ref: in.Ref, After: in.After, Deleted: in.After == zeroCommit, RepoURLs: nonEmpty(pr.HTTPURL, pr.SSHURL, pr.WebURL)})
}

// finish checks what every push must carry: a full ref, a 40-hex commit, a repository.
func finish(p Push) (Push, error) {
	if !strings.HasPrefix(p.Ref, "refs/") {
		return Push{}, fail(BadRequest, "%s push: ref %q is not a full ref", p.Provider, p.Ref)
	}
	if !isHex40(p.After) {
		return Push{}, fail(BadRequest, "%s push: after %q is not a commit hash", p.Provider, p.After)
	}
	if len(p.RepoURLs) == 0 {
		return Push{}, fail(BadRequest, "%s push: no repository URL", p.Provider)
	}
	p.Deleted = p.Deleted || p.After == zeroCommit
	return p, nil
}

func isHex40(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
