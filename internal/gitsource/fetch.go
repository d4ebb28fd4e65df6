package gitsource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/crypto/ssh/knownhosts"
)

// fetchedRef is where a fetch puts the wanted commit in the object store.
const fetchedRef = "refs/hyperstatic/fetched"

// objectCacheSize bounds go-git's cache of decoded objects. Its default, 96 MiB, filled with the blobs of a
// docs-sized tree as it was written (each read once: the cache buys nothing there) and made the fetcher's peak
// RSS 140 MiB instead of 38 MiB (docs/design/git-content.md, "Memory"). 8 MiB still holds the bases of delta
// chains a forge's pack may have, which are read again and again.
const objectCacheSize = 8 * cache.MiByte

// Target is a ref resolved on the remote: its full name ("" for a commit given by hash) and its commit.
type Target struct {
	Ref    string
	Commit plumbing.Hash
}

// Resolve asks the remote which commit src.Ref names now (one ref advertisement, no objects). A branch name is
// looked up as refs/heads/NAME, then refs/tags/NAME; an annotated tag is peeled to its commit. A 40-hex ref is a
// commit and is returned as is: whether the server has it is only known by fetching it.
func Resolve(ctx context.Context, src Source) (Target, error) {
	if h, ok := commitHash(src.Ref); ok {
		return Target{Commit: h}, nil
	}
	byName, err := listRefs(ctx, src)
	if err != nil {
		return Target{}, err
	}
	if t, ok := resolveIn(byName, src.Ref); ok {
		return t, nil
	}
	return Target{}, newError(RefNotFound, nil, "%s has no branch or tag %q", redact(src.URL), src.Ref)
}

// Refs is one listing of a remote's refs (full name → commit, annotated tags peeled).
type Refs map[string]plumbing.Hash

// ListRefs asks the remote for all its refs at once (one ref advertisement, no objects): the previews' fetcher
// resolves every preview, and production's ref, from one listing per interval.
func ListRefs(ctx context.Context, src Source) (Refs, error) {
	byName, err := listRefs(ctx, src)
	if err != nil {
		return nil, err
	}
	out := Refs{}
	for name, h := range byName {
		if base, peeled := strings.CutSuffix(name, "^{}"); peeled {
			out[base] = h
		} else if _, has := out[name]; !has {
			out[name] = h
		}
	}
	return out, nil
}

func listRefs(ctx context.Context, src Source) (map[string]plumbing.Hash, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{src.URL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: src.Auth, CABundle: src.CABundle, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, classify(err, src, "listing the refs of %s", redact(src.URL))
	}
	byName := map[string]plumbing.Hash{}
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			byName[r.Name().String()] = r.Hash()
		}
	}
	return byName, nil
}

// resolveIn looks ref up in a listing with its peeled entries.
func resolveIn(byName map[string]plumbing.Hash, ref string) (Target, bool) {
	for _, name := range refCandidates(ref) {
		h, ok := byName[name]
		if !ok {
			continue
		}
		if peeled, ok := byName[name+"^{}"]; ok {
			h = peeled
		}
		return Target{Ref: name, Commit: h}, true
	}
	return Target{}, false
}

// refCandidates lists the full names a ref may stand for, in the order git itself tries them.
func refCandidates(ref string) []string {
	if strings.HasPrefix(ref, "refs/") {
		return []string{ref}
	}
	return []string{"refs/heads/" + ref, "refs/tags/" + ref}
}

// commitHash is true for a full 40-hex commit hash (short hashes are refused by validation upstream: a remote
// cannot be asked for one).
func commitHash(ref string) (plumbing.Hash, bool) {
	if len(ref) != 40 {
		return plumbing.ZeroHash, false
	}
	for _, c := range ref {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return plumbing.ZeroHash, false
		}
	}
	return plumbing.NewHash(ref), true
}

// fetchCommit fetches target's commit at depth (1, or 2 into a kept store: objects.go) into st, whose writes b
// counts, and returns the commit. A branch or tag is fetched by name, so the commit is whatever the ref points at
// when the server answers (a push after Resolve is taken, not refused); a commit is fetched by hash. go-git sends
// a have for each ref st holds (the commits Objects keeps) and a shallow line for each shallow commit.
func fetchCommit(ctx context.Context, src Source, target Target, st *filesystem.Storage, b *budget, depth int) (*object.Commit, error) {
	cfg := &config.RemoteConfig{Name: "origin", URLs: []string{src.URL}}
	if err := cfg.Validate(); err != nil {
		return nil, newError(InvalidSource, err, "url %q", redact(src.URL))
	}
	want := target.Ref
	if want == "" {
		want = target.Commit.String()
	}
	err := git.NewRemote(st, cfg).FetchContext(ctx, &git.FetchOptions{
		Auth: src.Auth, CABundle: src.CABundle, Depth: depth, Tags: git.NoTags,
		RefSpecs: []config.RefSpec{config.RefSpec("+" + want + ":" + fetchedRef)},
	})
	if b.tripped.Load() {
		return nil, newError(TooLarge, nil, "the fetch of %s passed the size limit of %d bytes", want, b.max)
	}
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) { // up to date: the store held the commit already
		return nil, classify(err, src, "fetching %s from %s", want, redact(src.URL))
	}
	ref, err := st.Reference(fetchedRef)
	if err != nil {
		return nil, fmt.Errorf("the fetch stored no %s: %w", fetchedRef, err)
	}
	return peelToCommit(st, ref.Hash())
}

// peelToCommit follows annotated tags down to the commit they name.
func peelToCommit(st *filesystem.Storage, h plumbing.Hash) (*object.Commit, error) {
	for range 10 {
		obj, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", h, err)
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			return object.DecodeCommit(st, obj)
		case plumbing.TagObject:
			tag, err := object.DecodeTag(st, obj)
			if err != nil {
				return nil, err
			}
			h = tag.Target
		default:
			return nil, newError(InvalidContent, nil, "%s is a %s, not a commit", h, obj.Type())
		}
	}
	return nil, newError(InvalidContent, nil, "%s: tags nested too deep", h)
}

// classify turns a go-git error into an *Error with its Reason; what it cannot place is Unreachable (network,
// server errors: worth retrying).
func classify(err error, src Source, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	var noRef git.NoMatchingRefSpecError
	var hostKey *knownhosts.KeyError
	var badCert *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var redirect *RedirectError
	switch {
	case errors.As(err, &redirect):
		return newError(Unreachable, redirect, "%s", msg)
	case errors.As(err, &badCert) && errors.As(err, &unknownCA):
		// Unreachable (nothing was fetched, a retry after the Secret changes may work), with the way out named.
		if len(src.CABundle) > 0 {
			return newError(Unreachable, err, "%s: the server's TLS certificate is signed by an authority that neither "+
				"the system's CAs nor the Secret's %q hold", msg, SecretCACert)
		}
		return newError(Unreachable, err, "%s: the server's TLS certificate is signed by an unknown authority (a private CA? "+
			"put its PEM certificate in the Secret's %q)", msg, SecretCACert)
	case errors.As(err, &badCert):
		return newError(Unreachable, err, "%s: the server's TLS certificate does not verify", msg)
	case errors.As(err, &hostKey):
		return newError(AuthFailed, err, "%s: the server's host key is not one pinned in known_hosts", msg)
	case strings.Contains(err.Error(), "ssh: unable to authenticate"):
		return newError(AuthFailed, err, "%s: the SSH key was refused", msg)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed),
		errors.Is(err, transport.ErrInvalidAuthMethod):
		if src.Auth == nil {
			return newError(AuthFailed, err, "%s: the repository needs credentials (secretRef)", msg)
		}
		return newError(AuthFailed, err, "%s: the credentials were refused", msg)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return newError(RepositoryNotFound, err, "%s", msg)
	case errors.As(err, &noRef), errors.Is(err, transport.ErrEmptyRemoteRepository),
		strings.Contains(err.Error(), "not our ref"):
		return newError(RefNotFound, err, "%s", msg)
	case errors.Is(err, git.ErrExactSHA1NotSupported):
		return newError(Unsupported, err, "%s: the server does not let a commit be fetched by hash; name a branch or tag", msg)
	}
	// DNS, refused connections, TLS, timeouts, 5xx and anything else the transport says: worth a retry.
	return newError(Unreachable, err, "%s", msg)
}
