package contentagent

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
)

// POST /pin on the fetcher's port (docs/design/deploys.md, decision 2): the operator pins a deploy of the history,
// or unpins. The contract:
//
//	POST /pin
//	Authorization: Bearer <the token of --pin-token-file>
//	{"pin": "<40 lower-case hex>"}   publish that deploy of the history in place of the ref's newest
//	{"pin": null}                     publish the ref's newest again
//
// 200: the pin is taken (also when it was already), the body is the Revision now published (with deploys and
// pin); the pullers' long polls return at once. 409 with a Failure {reason: "NotInHistory"}: the commit is not a
// deploy of the history; nothing changes. 400: a body that is not that JSON (4 KiB at most). 401: no or another
// token. 403: no token configured (the flag unset, the file empty or unreadable): pinning is off. The pin is kept
// in state.json, so it survives a container restart; fetches go on while pinned and add to the history.
//
// The token is what stops a server pod: the NetworkPolicy admits the site's pods to this port (they long-poll
// it), and those face the internet. The operator mounts the token's Secret into the fetcher only.

// ReasonNotInHistory is the Failure reason of a pin whose commit is not in the history.
const ReasonNotInHistory = "NotInHistory"

// maxPinBody bounds a /pin request's body: {"pin": "<40 hex>"} is 51 bytes.
const maxPinBody = 4 << 10

// maxTokenBytes bounds the token file read at each request.
const maxTokenBytes = 4 << 10

// PinRequest is the body of POST /pin; a nil Pin unpins.
type PinRequest struct {
	Pin *string `json:"pin"`
}

func (f *Fetcher) servePin(w http.ResponseWriter, r *http.Request) {
	token := readToken(f.PinTokenFile)
	if token == nil {
		http.Error(w, "pinning is not configured on this fetcher", http.StatusForbidden)
		return
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), token) != 1 {
		http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
		return
	}
	var req PinRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxPinBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "the body must be {\"pin\": \"<commit>\"} or {\"pin\": null}: "+err.Error(), http.StatusBadRequest)
		return
	}
	pin := ""
	if req.Pin != nil {
		pin = *req.Pin
	}
	if pin != "" && !validCommit(pin) {
		http.Error(w, "pin must be a full commit hash (40 lower-case hex digits) or null", http.StatusBadRequest)
		return
	}
	rev, err := f.pin(pin)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case errors.Is(err, errNotInHistory):
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(Failure{Reason: ReasonNotInHistory, Message: "commit " + pin +
			" is not in the fetcher's history of deploys; nothing changed", Time: f.Now()})
	case err != nil:
		http.Error(w, "recording the pin: "+err.Error(), http.StatusInternalServerError)
	default:
		_ = json.NewEncoder(w).Encode(rev)
	}
}

var errNotInHistory = errors.New("not in the history")

// pin publishes the deploy of commit (unpins for ""), records it in state.json and returns what is published.
func (f *Fetcher) pin(commit string) (Revision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, _ := f.board.get()
	if commit != "" && indexOfDeploy(cur.Deploys, commit) < 0 {
		return cur, errNotInHistory
	}
	if commit == cur.Pin {
		return cur, nil
	}
	next := publishing(cur, cur.Deploys, commit, f.Now())
	if err := f.publish(next); err != nil {
		return cur, err
	}
	f.Log.Info("pin", "pin", commit, "commit", next.Commit, "digest", next.Digest)
	rev, _ := f.board.get()
	f.writeStatus(rev)
	return rev, nil
}

// readToken returns the token of file, surrounding whitespace trimmed; nil when there is none.
func readToken(file string) []byte {
	if file == "" {
		return nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxTokenBytes))
	if err != nil {
		return nil
	}
	if data = bytes.TrimSpace(data); len(data) == 0 {
		return nil
	}
	return data
}

// validCommit is true for a full Git commit hash as the API admits it: 40 lower-case hex digits.
func validCommit(s string) bool { return len(s) == 40 && validHex(s) }
