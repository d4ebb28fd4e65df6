// Package gitsource turns a Git repository into a served directory: it resolves a ref (branch, tag or commit)
// to a commit, fetches that one commit shallowly (depth 1) with go-git (no `git` binary), writes the selected
// subdirectory into a fresh directory named after the commit, checks it (size, links, submodules, LFS), and swaps
// it in with one rename of a symbolic link, so a reader resolves either the old tree or the new one, never a mix.
// docs/design/git-content.md says where this runs and why.
//
// Every failure is an *Error with a Reason a controller can put in a condition as is.
package gitsource

import (
	"errors"
	"fmt"
)

// Reason classifies a failure. The values are CamelCase so they can be a Kubernetes condition reason unchanged.
type Reason string

const (
	// Unreachable: the host could not be reached or answered something that is not Git (DNS, TCP, TLS, 5xx,
	// timeout). Retrying later may succeed.
	Unreachable Reason = "Unreachable"
	// AuthFailed: the host refused the credentials (or asked for some and none were given).
	AuthFailed Reason = "AuthFailed"
	// RepositoryNotFound: no repository at that URL (forges answer this for a private one without access, too).
	RepositoryNotFound Reason = "RepositoryNotFound"
	// RefNotFound: the branch or tag does not exist (any more), or the commit is not reachable from any ref.
	RefNotFound Reason = "RefNotFound"
	// TooLarge: the packfile or the written tree exceeds the size limit.
	TooLarge Reason = "TooLarge"
	// InvalidContent: the commit cannot be served as is: the path is missing or not a directory, a symbolic link
	// leaves the tree, a submodule or an LFS pointer is in the served tree, a file name is unsafe, or the
	// content check (the server's --check) refused it.
	InvalidContent Reason = "InvalidContent"
	// InvalidSource: the source itself is wrong (URL scheme, credentials Secret keys); no fetch was tried.
	InvalidSource Reason = "InvalidSource"
	// Unsupported: the server cannot do what the source needs (fetching a commit by hash from a server that
	// does not allow it).
	Unsupported Reason = "Unsupported"
)

// Error is a failure with its Reason; Error() is a message fit for a condition or an event (no credentials).
type Error struct {
	Reason Reason
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Msg
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func newError(r Reason, err error, format string, args ...any) *Error {
	return &Error{Reason: r, Msg: fmt.Sprintf(format, args...), Err: err}
}

// ReasonOf returns the Reason of err, or "" when err is nil or not from this package.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// ReasonError is a failure of reason r for callers outside this package that hold a tree to the same rules (the
// pool fetcher's ConfigMap sites).
func ReasonError(r Reason, format string, args ...any) error {
	return newError(r, nil, format, args...)
}
