package gittestserver

import (
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
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"hyperstatic.dev/hyperstatic/internal/countio"
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
// the same with its haves and "done", answered by the shallow lines, the ACK or NAK of the haves (negotiate.go)
// and the packfile. go-git sends its haves and "done" in its first request.
func (s *Server) uploadPack(w http.ResponseWriter, r *http.Request, ep *transport.Endpoint) {
	body := io.LimitReader(r.Body, maxRequestBytes)
	req := packp.NewUploadPackRequest()
	if err := req.UploadRequest.Decode(body); err != nil {
		http.Error(w, "decoding the upload request: "+err.Error(), http.StatusBadRequest)
		return
	}
	// The haves are read whole before anything is answered, so a malformed request still gets its 400.
	var lines []haveLine
	done, err := readHaves(pktline.NewScanner(body), func(l haveLine) error { lines = append(lines, l); return nil })
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
	// A request that ended right after the wants (git's first round of a depth fetch) gets only the shallow
	// lines above: git's client reads them, then sends the next request.
	n := up.negotiation()
	for _, l := range lines {
		if n.answer(w, l) != nil {
			return
		}
	}
	if done {
		up.writePack(w, n)
	}
}

// upload is one upload-pack answer being written.
type upload struct {
	st     storer.Storer
	req    *packp.UploadPackRequest
	faults Faults
	sent   *uploadCounter
	// shallows are, for a fetch with a depth, the deepest commits within it.
	shallows []plumbing.Hash
	err      string // a refusal for the client (an ERR line), or ""
}

// prepare opens the repository and works out what can be known before the haves: whether the wants may be
// served, and the shallow lines. An error means the repository could not be opened. Call with s.mu held.
func (s *Server) prepare(ep *transport.Endpoint, req *packp.UploadPackRequest) (*upload, error) {
	st, err := s.loader.Load(ep)
	if err != nil {
		return nil, err
	}
	up := &upload{st: st, req: req, faults: s.faults, sent: &s.sent}
	if missing, err := firstUnreachable(st, req.Wants); err != nil {
		up.err = "upload-pack: " + err.Error()
	} else if !missing.IsZero() {
		up.err = fmt.Sprintf("upload-pack: not our ref %s", missing)
	} else if depth, ok := fetchDepth(req); ok {
		if up.shallows, err = shallowsAt(st, req.Wants, depth); err != nil {
			up.err = "upload-pack: " + err.Error()
		}
	}
	return up, nil
}

// negotiation starts the answers to the client's haves.
func (up *upload) negotiation() *negotiation {
	return &negotiation{st: up.st, ignore: up.faults.IgnoreHaves}
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

// writePack answers "done" and streams the packfile of what the client lacks.
func (up *upload) writePack(w io.Writer, n *negotiation) {
	if n.done(w) != nil {
		return
	}
	objs, err := up.objectsToSend(n.common)
	if err != nil {
		_ = (&pktline.ErrorLine{Text: "upload-pack: " + err.Error()}).Encode(w)
		return
	}
	// Window 0: no delta search. A forge sends the deltas already in its stored packs; searching them here cost
	// 86% of a 67 MB fetch's CPU (BenchmarkSyncDocsSizedCommit's profile), which would time this server, not the
	// fetcher.
	cw := &countio.Writer{W: w}
	_, _ = packfile.NewEncoder(cw, up.st, false).Encode(objs, 0)
	up.sent.add(len(objs), cw.N)
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

// fetchDepth is the depth in commits a request asks for (false for none: everything the wants reach).
func fetchDepth(req *packp.UploadPackRequest) (int, bool) {
	depth, ok := req.Depth.(packp.DepthCommits)
	if req.Depth.IsZero() || !ok || depth <= 0 {
		return 0, false
	}
	return int(depth), true
}

// shallowsAt returns the shallow lines of a fetch of depth: the commits depth-1 parents below a want (an annotated
// tag peeled) that have parents, which are not sent. Like git, it looks at the wants only, not the haves.
func shallowsAt(st storer.EncodedObjectStorer, wants []plumbing.Hash, depth int) ([]plumbing.Hash, error) {
	var shallows []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	level := wants
	for d := 1; d <= depth && len(level) > 0; d++ {
		var next []plumbing.Hash
		for _, h := range level {
			c, err := peeledCommit(st, h)
			if err != nil {
				return nil, err
			}
			if seen[c.Hash] {
				continue
			}
			seen[c.Hash] = true
			if d == depth && len(c.ParentHashes) > 0 {
				shallows = append(shallows, c.Hash)
			}
			next = append(next, c.ParentHashes...)
		}
		level = next
	}
	return shallows, nil
}

// peeledCommit follows annotated tags from h to the commit they name.
func peeledCommit(st storer.EncodedObjectStorer, h plumbing.Hash) (*object.Commit, error) {
	for t, err := object.GetTag(st, h); err == nil; t, err = object.GetTag(st, h) {
		h = t.Target
	}
	return object.GetCommit(st, h)
}

// objectsToSend lists the objects of the pack as git's upload-pack does for a client that asks for no thin pack
// (go-git never does): the commits from the wants down to the depth (all of them without one) that the common
// haves do not reach, with the annotated tags wanted; and their trees, less what the trees of the edges hold.
// An edge is a commit the haves reach that is the parent of a commit sent. Only edges save anything: on a depth-1
// fetch the commit sent has no parent in the walk (it is shallow), so everything is sent however many haves were
// ACKed; at depth 2 the have that is the new commit's parent is an edge.
func (up *upload) objectsToSend(common []plumbing.Hash) ([]plumbing.Hash, error) {
	reached, err := reachedByHaves(up.st, up.req, common, up.faults)
	if err != nil {
		return nil, err
	}
	depth, limited := fetchDepth(up.req)
	var objs []plumbing.Hash
	var trees, edges []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	level := up.req.Wants
	for d := 1; len(level) > 0 && (!limited || d <= depth); d++ {
		var next []plumbing.Hash
		for _, h := range level {
			for t, err := object.GetTag(up.st, h); err == nil; t, err = object.GetTag(up.st, h) {
				if !seen[h] {
					seen[h] = true
					objs = append(objs, h)
				}
				h = t.Target
			}
			if seen[h] || reached[h] {
				continue
			}
			seen[h] = true
			c, err := object.GetCommit(up.st, h)
			if err != nil {
				return nil, err
			}
			objs, trees = append(objs, h), append(trees, c.TreeHash)
			if limited && d == depth {
				continue // shallow: its parents are not in the walk
			}
			for _, p := range c.ParentHashes {
				if reached[p] {
					edges = append(edges, p)
				} else {
					next = append(next, p)
				}
			}
		}
		level = next
	}
	has := map[plumbing.Hash]bool{}
	for _, e := range edges {
		c, err := object.GetCommit(up.st, e)
		if err != nil {
			return nil, err
		}
		if _, err := appendTree(up.st, c.TreeHash, nil, has); err != nil {
			return nil, err
		}
	}
	for _, t := range trees {
		if objs, err = appendTree(up.st, t, objs, has); err != nil {
			return nil, err
		}
	}
	return objs, nil
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
