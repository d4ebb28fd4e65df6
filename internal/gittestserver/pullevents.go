package gittestserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// PullEvent is one pull-request webhook delivery, rendered in the format of its forge by Request: GitHub's
// pull_request event, Gitea's (GitHub's shape, its own headers and its word "synchronized"), GitLab's Merge
// Request Hook. The payloads carry the fields the forges send that a receiver reads (action, number, head commit,
// source branch, state, the repository's URLs), shaped as the forges send them; the rest of a real payload (users,
// labels, diffs) is left out.
type PullEvent struct {
	Forge  gitwebhook.Provider
	Action Action
	Number int
	// Head is the commit the request's ref names after the action.
	Head plumbing.Hash
	// Branch is the source branch; Base the target (main when empty).
	Branch, Base string
	// RepoURL is the base repository's clone URL (https://host/org/site.git).
	RepoURL string
}

// forgeAction is the word each forge puts in the payload for an action.
func (e PullEvent) forgeAction() string {
	switch e.Forge {
	case gitwebhook.GitLab:
		return map[Action]string{Opened: "open", Updated: "update", Closed: "close", Reopened: "reopen"}[e.Action]
	case gitwebhook.Gitea:
		if e.Action == Updated {
			return "synchronized"
		}
	default:
		if e.Action == Updated {
			return "synchronize"
		}
	}
	return string(e.Action)
}

// Body is the JSON payload.
func (e PullEvent) Body() []byte {
	base := e.Base
	if base == "" {
		base = "main"
	}
	web := strings.TrimSuffix(e.RepoURL, ".git")
	var v any
	if e.Forge == gitwebhook.GitLab {
		state := "opened"
		if e.Action == Closed {
			state = "closed"
		}
		v = map[string]any{
			"object_kind": "merge_request", "event_type": "merge_request",
			"project": map[string]any{"git_http_url": e.RepoURL, "web_url": web, "path_with_namespace": "test/site"},
			"object_attributes": map[string]any{
				"iid": e.Number, "action": e.forgeAction(), "state": state,
				"source_branch": e.Branch, "target_branch": base,
				"last_commit": map[string]any{"id": e.Head.String()},
			},
		}
	} else {
		state := "open"
		if e.Action == Closed {
			state = "closed"
		}
		repo := map[string]any{"clone_url": e.RepoURL, "html_url": web, "full_name": "test/site"}
		v = map[string]any{
			"action": e.forgeAction(), "number": e.Number,
			"pull_request": map[string]any{
				"number": e.Number, "state": state, "merged": false,
				"head": map[string]any{"ref": e.Branch, "sha": e.Head.String(), "repo": repo},
				"base": map[string]any{"ref": base, "repo": repo},
			},
			"repository": repo,
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return b
}

// Request is the delivery to url, authenticated with secret as the forge does it: GitHub's X-Hub-Signature-256
// (sha256=HMAC), Gitea's X-Gitea-Signature (hex HMAC, beside GitHub's event header as Gitea sends it), GitLab's
// X-Gitlab-Token (the secret itself).
func (e PullEvent) Request(ctx context.Context, url string, secret []byte) (*http.Request, error) {
	body := e.Body()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	sig := hex.EncodeToString(mac.Sum(nil))
	switch e.Forge {
	case gitwebhook.GitLab:
		req.Header.Set("X-Gitlab-Event", "Merge Request Hook")
		req.Header.Set("X-Gitlab-Token", string(secret))
	case gitwebhook.Gitea:
		req.Header.Set("X-Gitea-Event", "pull_request")
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-Gitea-Signature", sig)
	default:
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-Hub-Signature-256", "sha256="+sig)
	}
	return req, nil
}

// Hook is a webhook the forge delivers pull-request events to.
type Hook struct {
	URL    string
	Secret []byte
}

// Deliver sends the event to the hook and returns the receiver's status; a forge logs it and does not retry at
// once, so neither does this.
func (e PullEvent) Deliver(ctx context.Context, client *http.Client, h Hook) (int, error) {
	req, err := e.Request(ctx, h.URL, h.Secret)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("delivering %s #%d %s to %s: %w", e.Forge, e.Number, e.Action, h.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
