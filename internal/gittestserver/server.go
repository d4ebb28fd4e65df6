// Package gittestserver is a real Git server for the tests: it serves bare repositories on disk over Git's smart
// HTTP protocol (upload-pack for fetch and clone, receive-pack for push), with optional HTTP basic or bearer
// authentication. It is built from go-git's server-side pieces, so the tests need neither a `git` binary nor a
// network: the Go tests start it on loopback (httptest), and e2e/cmd/gitserver packs it into a FROM scratch image
// for kind.
//
// go-git's own upload-pack session ignores a client's depth and refuses wants that no ref points at; a fetcher
// that asks for `--depth 1` or for an exact commit (what internal/gitsource does, and what GitHub, GitLab and
// Gitea all allow) would then be tested against a server unlike any real one. This server answers both itself:
// it sends only the commits within the asked depth (with the `shallow` lines) and accepts any commit reachable
// from a ref (allow-reachable-sha1-in-want), answering `ERR ... not our ref` otherwise, as git does. It honours
// the client's haves, at a depth too, leaving out of the pack what they reach (negotiate.go), and counts what it
// sends (Uploads).
package gittestserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// Server serves the bare repositories under Root: a repository at Root/site.git is at <base URL>/site.git.
type Server struct {
	// Root holds the bare repositories (git.PlainInit(dir, true)).
	Root string
	// Username and Password, when Username is set, are required as HTTP basic auth on every request.
	Username, Password string
	// BearerToken, when set, is accepted as "Authorization: Bearer <token>" (instead of, or beside, basic auth).
	BearerToken string
	// The three fields above are set before serving; SetCredentials changes them while serving.
	credsMu sync.RWMutex

	// repoCA is the CA of the certificate StartTLS serves (PEM): the Repos NewRepo makes trust it.
	repoCA []byte

	loader server.Loader
	// mu serialises pushes against fetches: go-git's filesystem storage is not safe for a writer and readers at
	// once, and a test server has no need for concurrent pushes. It guards faults too.
	mu     sync.RWMutex
	faults Faults
	// sent counts what upload-pack sent (Uploads).
	sent uploadCounter
}

// New returns a server for the repositories under root; empty credentials mean no authentication.
func New(root, username, password, bearerToken string) *Server {
	return &Server{
		Root: root, Username: username, Password: password, BearerToken: bearerToken,
		loader: server.NewFilesystemLoader(osfs.New(root, osfs.WithBoundOS())),
	}
}

// ServeHTTP answers the three requests of the smart HTTP protocol:
// GET <repo>/info/refs?service=git-{upload,receive}-pack, POST <repo>/git-upload-pack, POST <repo>/git-receive-pack.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	repo, op, ok := splitPath(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	ep := &transport.Endpoint{Path: repo}
	switch {
	case op == "info/refs" && r.Method == http.MethodGet:
		s.advertise(w, r, ep, r.URL.Query().Get("service"))
	case op == transport.UploadPackServiceName && r.Method == http.MethodPost:
		s.uploadPack(w, r, ep)
	case op == transport.ReceivePackServiceName && r.Method == http.MethodPost:
		s.receivePack(w, r, ep)
	default:
		http.Error(w, "not a smart HTTP request", http.StatusBadRequest)
	}
}

// authorized is true when no credentials are configured or the request carries one of the configured ones.
// Comparisons are constant-time: this server also stands in for a private repository in e2e.
func (s *Server) authorized(r *http.Request) bool {
	s.credsMu.RLock()
	defer s.credsMu.RUnlock()
	if s.Username == "" && s.BearerToken == "" {
		return true
	}
	if u, p, ok := r.BasicAuth(); ok && s.Username != "" {
		return equal(u, s.Username) && equal(p, s.Password)
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.BearerToken != "" {
		return equal(tok, s.BearerToken)
	}
	return false
}

// Authorized is true when r carries the server's credentials (or none are configured): the forge's own
// endpoints beside Git (e2e/cmd/gitserver's pull requests) take the same ones.
func (s *Server) Authorized(r *http.Request) bool { return s.authorized(r) }

// SetCredentials replaces the credentials while the server runs (a forge's password or token rotated); the
// next request is checked against the new ones.
func (s *Server) SetCredentials(username, password, bearerToken string) {
	s.credsMu.Lock()
	defer s.credsMu.Unlock()
	s.Username, s.Password, s.BearerToken = username, password, bearerToken
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// splitPath splits "/site.git/info/refs" into ("/site.git", "info/refs"). A path that climbs out of the root is
// refused, not cleaned into something else.
func splitPath(p string) (repo, op string, ok bool) {
	if strings.Contains(p, "..") {
		return "", "", false
	}
	for _, suffix := range []string{"info/refs", transport.UploadPackServiceName, transport.ReceivePackServiceName} {
		if rest, found := strings.CutSuffix(p, "/"+suffix); found && rest != "" {
			return path.Clean(rest), suffix, true
		}
	}
	return "", "", false
}

// advertise answers GET info/refs: the service line, a flush, then the refs and capabilities of the service.
func (s *Server) advertise(w http.ResponseWriter, r *http.Request, ep *transport.Endpoint, service string) {
	if service != transport.UploadPackServiceName && service != transport.ReceivePackServiceName {
		http.Error(w, "dumb HTTP is not served: ask for ?service=git-upload-pack or git-receive-pack", http.StatusForbidden)
		return
	}
	ar, err := s.advertisedRefs(r.Context(), ep, service)
	if err != nil {
		repoError(w, err)
		return
	}
	w.Header().Set("Content-Type", fmt.Sprintf("application/x-%s-advertisement", service))
	w.Header().Set("Cache-Control", "no-cache")
	enc := pktline.NewEncoder(w)
	if err := enc.Encodef("# service=%s\n", service); err != nil {
		return
	}
	if err := enc.Flush(); err != nil {
		return
	}
	_ = ar.Encode(w) // the client sees a truncated advertisement; nothing else to tell it
}

// advertisedRefs is the ref advertisement of a service (the same over HTTP and SSH), with this server's
// upload-pack capabilities added.
func (s *Server) advertisedRefs(ctx context.Context, ep *transport.Endpoint, service string) (*packp.AdvRefs, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	srv := server.NewServer(s.loader)
	var sess transport.Session
	var err error
	if service == transport.UploadPackServiceName {
		sess, err = srv.NewUploadPackSession(ep, nil)
	} else {
		sess, err = srv.NewReceivePackSession(ep, nil)
	}
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, err
	}
	if service == transport.UploadPackServiceName {
		if err := advertiseShallowAndWants(ar.Capabilities); err != nil {
			return nil, err
		}
	}
	return ar, nil
}

// repoError maps a loader error to a status: a repository that does not exist is a 404, as on a real forge.
func repoError(w http.ResponseWriter, err error) {
	if errors.Is(err, transport.ErrRepositoryNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
