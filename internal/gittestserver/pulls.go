package gittestserver

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// Pull requests as the forges keep them, for the previews of issue 41 (docs/design/deploys.md, decision 4).
//
// A forge gives each pull request a read-only ref in the base repository that names the head commit of its source
// branch: GitHub and Gitea refs/pull/<N>/head, GitLab refs/merge-requests/<N>/head. The forge writes it when the
// request is opened and each time its source branch moves (GitHub's "synchronize", Gitea's "synchronized",
// GitLab's "update"), and keeps it after the request is closed or merged: a client that only lists refs cannot
// tell an open request from a closed one, only the forge's pull-request webhook says so. The forges' cleanup of
// old refs (GitLab's housekeeping) is DeletePullRef. Clients cannot push to these refs (receive-pack refuses
// them, as GitHub's "deny updating a hidden ref" does), so a test moves them with the calls below only.

// Action is what happened to a pull request, as the webhook payloads name it (Event renders each forge's word).
type Action string

const (
	Opened   Action = "opened"
	Updated  Action = "updated" // new commits on the source branch
	Closed   Action = "closed"
	Reopened Action = "reopened"
)

// PullRef is the forge's ref of pull request number on forge: refs/pull/N/head on GitHub and Gitea,
// refs/merge-requests/N/head on GitLab.
func PullRef(forge gitwebhook.Provider, number int) string {
	if forge == gitwebhook.GitLab {
		return "refs/merge-requests/" + strconv.Itoa(number) + "/head"
	}
	return "refs/pull/" + strconv.Itoa(number) + "/head"
}

// pullRefPrefixes are the namespaces only the forge writes.
var pullRefPrefixes = []string{"refs/pull/", "refs/merge-requests/"}

// SetPullRef points the pull request's ref of the repository repo (its name under Root, e.g. "site.git") at
// commit, as the forge does when the request is opened or its branch moves. The commit must already be in the
// repository (pushed to the source branch first, as a contributor does).
func (s *Server) SetPullRef(repo string, forge gitwebhook.Provider, number int, commit plumbing.Hash) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storer(repo)
	if err != nil {
		return err
	}
	if _, err := st.EncodedObject(plumbing.CommitObject, commit); err != nil {
		return fmt.Errorf("commit %s is not in %s (push it to the source branch first): %w", commit, repo, err)
	}
	return st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(PullRef(forge, number)), commit))
}

// DeletePullRef removes the pull request's ref (a forge's cleanup long after the request closed).
func (s *Server) DeletePullRef(repo string, forge gitwebhook.Provider, number int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.storer(repo)
	if err != nil {
		return err
	}
	return st.RemoveReference(plumbing.ReferenceName(PullRef(forge, number)))
}

// storer opens a repository's storage; call with s.mu held.
func (s *Server) storer(repo string) (storer.Storer, error) {
	st, err := s.loader.Load(&transport.Endpoint{Path: "/" + repo})
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", repo, err)
	}
	return st, nil
}

// errHiddenRef is receive-pack's answer to a push that names a forge's ref.
var errHiddenRef = errors.New("deny updating a hidden ref")

// hiddenRef is true for a ref only the forge writes.
func hiddenRef(name string) bool {
	for _, p := range pullRefPrefixes {
		if len(name) > len(p) && name[:len(p)] == p {
			return true
		}
	}
	return false
}

// Pull applies what the forge does to the request's ref for the event: opening, updating or reopening points it
// at e.Head; closing leaves it where it is (the forges keep it). The caller then delivers the event.
func (s *Server) Pull(repo string, e PullEvent) error {
	if e.Action == Closed {
		return nil
	}
	return s.SetPullRef(repo, e.Forge, e.Number, e.Head)
}
