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

// uploadPack answers POST git-upload-pack (stateless: the whole negotiation state is in each request). Git
// sends a depth fetch in two requests: wants + deepen + flush first, answered by the shallow lines only; then
// the same with "done", answered by the shallow lines, a NAK and the packfile. go-git sends "done"
// in its first request. This server never ACKs a have (it negotiates no common commits).
func (s *Server) uploadPack(w http.ResponseWriter, r *http.Request, ep *transport.Endpoint) {
	body := io.LimitReader(r.Body, maxRequestBytes)
	req := packp.NewUploadPackRequest()
	if err := req.UploadRequest.Decode(body); err != nil {
		http.Error(w, "decoding the upload request: "+err.Error(), http.StatusBadRequest)
		return
	}
	flushes := 0
	done, err := readHaves(pktline.NewScanner(body), req, func() error { flushes++; return nil })
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	up, err := s.prepare(ep, req)
	if err != nil {
		repoError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	if up.refuse(w) || up.writeShallows(w) != nil {
		return
	}
	if !done {
		// A round without "done": each block of haves gets a NAK (git's upload-pack answers the same), and a
		// request that ended right after the wants (git's first round of a depth fetch) gets only the shallow
		// lines above: git's client reads them, then sends the next request.
		for range flushes {
			_ = writeNAK(w)
		}
		return
	}
	up.writePack(w)
}

// upload is one upload-pack answer being written.
type upload struct {
	st       storer.Storer
	req      *packp.UploadPackRequest
	objs     []plumbing.Hash
	shallows []plumbing.Hash
	err      string // a refusal for the client (an ERR line), or ""
}

// prepare opens the repository and works out the answer; an error means the repository could not be opened.
func (s *Server) prepare(ep *transport.Endpoint, req *packp.UploadPackRequest) (*upload, error) {
	st, err := s.loader.Load(ep)
	if err != nil {
		return nil, err
	}
	up := &upload{st: st, req: req}
	if missing, err := firstUnreachable(st, req.Wants); err != nil {
		up.err = "upload-pack: " + err.Error()
	} else if !missing.IsZero() {
		up.err = fmt.Sprintf("upload-pack: not our ref %s", missing)
	} else if up.objs, up.shallows, err = objectsToSend(st, req); err != nil {
		up.err = "upload-pack: " + err.Error()
	}
	return up, nil
}

// refuse writes the ERR line and reports true when the request cannot be served.
func (up *upload) refuse(w io.Writer) bool {
	if up.err == "" {
		return false
	}
	_ = (&pktline.ErrorLine{Text: up.err}).Encode(w)
	return true
}

// writeShallows writes the shallow lines and their flush when a depth was asked (nothing otherwise).
func (up *upload) writeShallows(w io.Writer) error {
	if up.req.Depth.IsZero() {
		return nil
	}
	su := packp.ShallowUpdate{Shallows: up.shallows}
	return su.Encode(w)
}

// writePack writes the final NAK and streams the packfile.
func (up *upload) writePack(w io.Writer) {
	if writeNAK(w) != nil {
		return
	}
	// Window 0: no delta search. A forge sends the deltas already in its stored packs; searching them here cost
	// 86% of a 67 MB fetch's CPU (BenchmarkSyncDocsSizedCommit's profile), which would time this server, not the
	// fetcher.
	_, _ = packfile.NewEncoder(w, up.st, false).Encode(up.objs, 0)
}

func writeNAK(w io.Writer) error {
	return pktline.NewEncoder(w).EncodeString("NAK\n")
}

// readHaves reads "have" lines up to "done" (true) or the end of the input (false, a stateless round that
// continues in another request). onFlush, for a stateful connection, answers each flush (a NAK).
func readHaves(sc *pktline.Scanner, req *packp.UploadPackRequest, onFlush func() error) (bool, error) {
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\n"))
		switch {
		case len(line) == 0:
			if onFlush != nil {
				if err := onFlush(); err != nil {
					return false, err
				}
			}
		case bytes.Equal(line, []byte("done")):
			return true, nil
		default:
			if h, ok := bytes.CutPrefix(line, []byte("have ")); ok {
				req.Haves = append(req.Haves, plumbing.NewHash(string(h)))
			}
		}
	}
	return false, sc.Err()
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
