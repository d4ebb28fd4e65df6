package gittestserver

import (
	"bytes"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// A fetcher that keeps its object store sends a "have" for each commit it holds, and a real server then leaves
// out of the pack what those commits hold: a push of one page costs the page, not the site. This server answers
// the haves as git's upload-pack does, so the tests and the kind e2e measure the saving a forge gives, and no
// more. Checked by hand against git 2.39's upload-pack with a one-file change of a 24-object commit whose parent
// the client has (a depth-1 clone) and names as its have: depth 1 without thin-pack, 24 objects sent; depth 2
// without thin-pack, 4; depth 1 with thin-pack (what git's own client asks), 4; no depth, 4. go-git's client
// never asks for thin packs, so only the have that is a parent of a commit sent saves anything (objectsToSend).
//
// Neither go-git's client nor this server speaks multi_ack, so the answers are git's without it: the first have
// the repository holds gets "ACK <it>" at once; a flush gets "NAK" while no have was held; "done" gets "NAK" when
// none was, and nothing after an ACK. The haves held are the common objects.

// Faults make the server answer as some servers do that a fetcher must survive; the tests of its fallbacks set
// them. The zero value is git's behaviour.
type Faults struct {
	// IgnoreHaves: NAK every have and send everything wanted, as a server without negotiation does (and as this
	// one did).
	IgnoreHaves bool
	// IgnoreClientShallows: count as the client's everything its haves reach, the parents of its shallow commits
	// included, as a server that ignores the client's "shallow" lines would: objects the client lacks are left out.
	IgnoreClientShallows bool
}

// SetFaults changes how the server answers the fetches that follow.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// haveLine is one line a client sends after its wants: a have, or a flush ending a block of them.
type haveLine struct {
	have  plumbing.Hash
	flush bool
}

// readHaves reads the haves and flushes up to "done" (true) or the end of the input (false, a stateless round
// that continues in another request), passing each to on.
func readHaves(sc *pktline.Scanner, on func(haveLine) error) (bool, error) {
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\n"))
		switch {
		case len(line) == 0:
			if err := on(haveLine{flush: true}); err != nil {
				return false, err
			}
		case bytes.Equal(line, []byte("done")):
			return true, nil
		default:
			if h, ok := bytes.CutPrefix(line, []byte("have ")); ok {
				if err := on(haveLine{have: plumbing.NewHash(string(h))}); err != nil {
					return false, err
				}
			}
		}
	}
	return false, sc.Err()
}

// negotiation answers the haves of one upload-pack exchange and keeps the common ones.
type negotiation struct {
	st     storer.EncodedObjectStorer
	ignore bool
	common []plumbing.Hash
}

// answer takes one line of the client's and writes git's answer to it, if any.
func (n *negotiation) answer(w io.Writer, l haveLine) error {
	if l.flush {
		return n.nakUnlessCommon(w)
	}
	if n.ignore || n.st.HasEncodedObject(l.have) != nil {
		return nil // an object this repository does not hold says nothing of what the client has
	}
	n.common = append(n.common, l.have)
	if len(n.common) > 1 {
		return nil
	}
	return pktline.NewEncoder(w).Encodef("ACK %s\n", l.have)
}

// done answers the client's "done".
func (n *negotiation) done(w io.Writer) error { return n.nakUnlessCommon(w) }

func (n *negotiation) nakUnlessCommon(w io.Writer) error {
	if len(n.common) > 0 {
		return nil
	}
	return writeNAK(w)
}

func writeNAK(w io.Writer) error {
	return pktline.NewEncoder(w).EncodeString("NAK\n")
}

// reachedByHaves returns the commits the common haves reach: the client has them, so they are not sent, and
// those that are parents of a commit sent are the edges whose trees are not sent either (objectsToSend). The walk
// stops at the client's shallow commits (req.Shallows), whose parents the client does not have, as git's does.
func reachedByHaves(st storer.EncodedObjectStorer, req *packp.UploadPackRequest, common []plumbing.Hash, f Faults) (map[plumbing.Hash]bool, error) {
	shallow := map[plumbing.Hash]bool{}
	if !f.IgnoreClientShallows {
		for _, h := range req.Shallows {
			shallow[h] = true
		}
	}
	reached := map[plumbing.Hash]bool{}
	stack := append([]plumbing.Hash(nil), common...)
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if reached[h] {
			continue
		}
		obj, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, err
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			reached[h] = true
			c, err := object.DecodeCommit(st, obj)
			if err != nil {
				return nil, err
			}
			if !shallow[h] {
				stack = append(stack, c.ParentHashes...)
			}
		case plumbing.TagObject:
			tag, err := object.DecodeTag(st, obj)
			if err != nil {
				return nil, err
			}
			stack = append(stack, tag.Target)
		}
	}
	return reached, nil
}
