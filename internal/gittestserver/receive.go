package gittestserver

import (
	"context"
	"io"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// maxPushBytes bounds a pushed packfile: the tests push at most a few MiB (the size-limit case).
const maxPushBytes = 256 << 20

// receivePack answers POST git-receive-pack with go-git's own session: it stores the pushed packfile and moves,
// creates or deletes the refs (no fast-forward check, so a forced push replaces a branch as on a forge), then
// reports the status of each command.
func (s *Server) receivePack(w http.ResponseWriter, r *http.Request, ep *transport.Endpoint) {
	req := packp.NewReferenceUpdateRequest()
	if err := req.Decode(http.MaxBytesReader(w, r.Body, maxPushBytes)); err != nil {
		http.Error(w, "decoding the push: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	status, err := s.applyPush(r.Context(), ep, req)
	if status != nil {
		_ = status.Encode(w)
		return
	}
	if err != nil {
		repoError(w, err)
	}
}

// applyPush stores a push and moves the refs with go-git's receive-pack session (the same over HTTP and SSH).
func (s *Server) applyPush(ctx context.Context, ep *transport.Endpoint, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	if refused := refuseHidden(req); refused != nil {
		if req.Packfile != nil {
			_, _ = io.Copy(io.Discard, req.Packfile) // the client sent it whole before reading the report
		}
		return refused, nil
	}
	if onlyDeletes(req) {
		req.Packfile = nil // a push that only deletes refs sends no packfile; the decoder hands an empty reader
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := server.NewServer(s.loader).NewReceivePackSession(ep, nil)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	return sess.ReceivePack(ctx, req)
}

func onlyDeletes(req *packp.ReferenceUpdateRequest) bool {
	for _, c := range req.Commands {
		if c.Action() != packp.Delete {
			return false
		}
	}
	return len(req.Commands) > 0
}

// refuseHidden answers a push naming a pull request's ref as GitHub does: the whole push is refused, each command
// reported, nothing stored.
func refuseHidden(req *packp.ReferenceUpdateRequest) *packp.ReportStatus {
	hidden := false
	for _, c := range req.Commands {
		hidden = hidden || hiddenRef(c.Name.String())
	}
	if !hidden {
		return nil
	}
	rs := packp.NewReportStatus()
	rs.UnpackStatus = "ok"
	for _, c := range req.Commands {
		status := "atomic push failed"
		if hiddenRef(c.Name.String()) {
			status = errHiddenRef.Error()
		}
		rs.CommandStatuses = append(rs.CommandStatuses, &packp.CommandStatus{ReferenceName: c.Name, Status: status})
	}
	return rs
}
