package gittestserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// maxRequestBytes bounds an upload-pack request body (wants, haves, capabilities): far above any test's.
const maxRequestBytes = 1 << 20

// advertiseShallowAndWants adds what this server answers beyond go-git's session: shallow fetches and wants of
// any reachable commit.
func advertiseShallowAndWants(c *capability.List) error {
	if err := c.Set(capability.Shallow); err != nil {
		return err
	}
	return c.Set(capability.AllowReachableSHA1InWant)
}

// uploadPack answers POST git-upload-pack: the packfile of the wanted commits (to the asked depth), preceded by
// the shallow lines when a depth was asked and a NAK (this server negotiates no common commits: a test fetch
// into a fresh repository has none to offer).
func (s *Server) uploadPack(w http.ResponseWriter, r *http.Request, ep *transport.Endpoint) {
	req, err := decodeUploadPackRequest(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, err := s.loader.Load(ep)
	if err != nil {
		repoError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	if missing, err := firstUnreachable(st, req.Wants); err != nil || !missing.IsZero() {
		msg := fmt.Sprintf("upload-pack: not our ref %s", missing)
		if err != nil {
			msg = "upload-pack: " + err.Error()
		}
		_ = (&pktline.ErrorLine{Text: msg}).Encode(w)
		return
	}
	objs, shallows, err := objectsToSend(st, req)
	if err != nil {
		_ = (&pktline.ErrorLine{Text: "upload-pack: " + err.Error()}).Encode(w)
		return
	}
	// The shallow lines (when a depth was asked) and the NAK go first; the encoder then streams the packfile.
	resp := packp.NewUploadPackResponse(req)
	resp.Shallows = shallows
	var head bytes.Buffer
	if !req.Depth.IsZero() {
		if err := resp.ShallowUpdate.Encode(&head); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if err := resp.ServerResponse.Encode(&head, false); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := w.Write(head.Bytes()); err != nil {
		return
	}
	_, _ = packfile.NewEncoder(w, st, false).Encode(objs, 10)
}

// decodeUploadPackRequest reads the wants, capabilities and depth (up to a flush), then the haves up to "done".
func decodeUploadPackRequest(body io.Reader) (*packp.UploadPackRequest, error) {
	req := packp.NewUploadPackRequest()
	if err := req.UploadRequest.Decode(body); err != nil {
		return nil, fmt.Errorf("decoding the upload request: %w", err)
	}
	sc := pktline.NewScanner(body)
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\n"))
		if h, ok := bytes.CutPrefix(line, []byte("have ")); ok {
			req.Haves = append(req.Haves, plumbing.NewHash(string(h)))
		}
		if bytes.Equal(line, []byte("done")) {
			break
		}
	}
	return req, sc.Err()
}

// firstUnreachable returns the first want that no ref reaches (the zero hash when all are reachable): the rule
// of uploadpack.allowReachableSHA1InWant, so a commit a force-push left behind can no longer be fetched.
func firstUnreachable(st storer.Storer, wants []plumbing.Hash) (plumbing.Hash, error) {
	reachable := map[plumbing.Hash]bool{}
	refs, err := st.IterReferences()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var tips []plumbing.Hash
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			tips = append(tips, ref.Hash())
		}
		return nil
	})
	for len(tips) > 0 {
		h := tips[len(tips)-1]
		tips = tips[:len(tips)-1]
		if reachable[h] {
			continue
		}
		reachable[h] = true
		obj, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch obj.Type() {
		case plumbing.TagObject:
			tag, err := object.DecodeTag(st, obj)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			tips = append(tips, tag.Target)
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(st, obj)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			tips = append(tips, c.ParentHashes...)
		}
	}
	for _, w := range wants {
		if !reachable[w] {
			return w, nil
		}
	}
	return plumbing.ZeroHash, nil
}

// objectsToSend lists the objects of the answer. Without a depth: everything the wants reach that the haves do
// not. With depth n: the commits at most n-1 parents below a want, their trees and blobs, and as shallows the
// deepest of those commits (whose parents are not sent).
func objectsToSend(st storer.Storer, req *packp.UploadPackRequest) (objs, shallows []plumbing.Hash, err error) {
	depth, ok := req.Depth.(packp.DepthCommits)
	if req.Depth.IsZero() || !ok || depth <= 0 {
		haves, err := revlist.Objects(st, req.Haves, nil)
		if err != nil {
			return nil, nil, err
		}
		objs, err := revlist.Objects(st, req.Wants, haves)
		return objs, nil, err
	}
	seen := map[plumbing.Hash]bool{}
	level := req.Wants
	for d := 1; d <= int(depth) && len(level) > 0; d++ {
		var next []plumbing.Hash
		for _, h := range level {
			if seen[h] {
				continue
			}
			seen[h] = true
			// An annotated tag is sent with what it names, which is at the same depth.
			for t, err := object.GetTag(st, h); err == nil; t, err = object.GetTag(st, h) {
				objs = append(objs, h)
				h = t.Target
			}
			objs = append(objs, h)
			c, err := object.GetCommit(st, h)
			if err != nil {
				return nil, nil, err
			}
			if objs, err = appendTree(st, c.TreeHash, objs, seen); err != nil {
				return nil, nil, err
			}
			if d == int(depth) && len(c.ParentHashes) > 0 {
				shallows = append(shallows, h)
			}
			next = append(next, c.ParentHashes...)
		}
		level = next
	}
	return objs, shallows, nil
}

// appendTree appends a tree and everything below it, once each. Submodule entries name a commit of another
// repository: they are not objects of this one, so they are not sent (git does the same).
func appendTree(st storer.EncodedObjectStorer, h plumbing.Hash, objs []plumbing.Hash, seen map[plumbing.Hash]bool) ([]plumbing.Hash, error) {
	if seen[h] {
		return objs, nil
	}
	seen[h] = true
	objs = append(objs, h)
	t, err := object.GetTree(st, h)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		switch {
		case e.Mode == filemode.Submodule:
		case e.Mode == filemode.Dir:
			if objs, err = appendTree(st, e.Hash, objs, seen); err != nil {
				return nil, err
			}
		case !seen[e.Hash]:
			seen[e.Hash] = true
			objs = append(objs, e.Hash)
		}
	}
	return objs, nil
}
