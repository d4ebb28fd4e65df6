package main

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// pullsHandler serves POST /-/pulls, the forge's side of a pull request that the e2e tests drive (issue 41's
// previews): the form fields repo (site.git), forge (github|gitea|gitlab), number, action
// (opened|updated|closed|reopened), head (the commit, already pushed to branch), branch, repoURL (the clone URL
// the payload names) and hook (the receiver's URL, e.g. the site's …-git-webhook Service). It moves the request's
// ref as the forge does, then delivers the signed event to hook with the secret in GIT_WEBHOOK_SECRET, and answers
// the receiver's status. It takes the Git server's credentials. Everything else goes to the Git server.
func pullsHandler(srv *gittestserver.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	mux.HandleFunc("POST /-/pulls", func(w http.ResponseWriter, r *http.Request) {
		if !srv.Authorized(r) {
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		number, err := strconv.Atoi(r.FormValue("number"))
		if err != nil || number <= 0 || !plumbing.IsHash(r.FormValue("head")) {
			http.Error(w, "number must be a positive integer and head a commit hash", http.StatusBadRequest)
			return
		}
		ev := gittestserver.PullEvent{
			Forge: gitwebhook.Provider(r.FormValue("forge")), Action: gittestserver.Action(r.FormValue("action")),
			Number: number, Head: plumbing.NewHash(r.FormValue("head")), Branch: r.FormValue("branch"),
			RepoURL: r.FormValue("repoURL"),
		}
		if err := srv.Pull(r.FormValue("repo"), ev); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		if hook := r.FormValue("hook"); hook != "" {
			ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
			defer cancel()
			status, err := ev.Deliver(ctx, client, gittestserver.Hook{URL: hook, Secret: []byte(os.Getenv("GIT_WEBHOOK_SECRET"))})
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			_, _ = w.Write([]byte("delivered: " + strconv.Itoa(status) + "\n"))
			return
		}
		_, _ = w.Write([]byte("ref moved; no hook\n"))
	})
	return mux
}
