// Package podtext holds the two rules for everything the operator reads from a pod it does not trust (a server's
// admin port, a k6 pod's log): never follow where the pod points, and never copy what it says into an object
// another person reads (a status, an event) unbounded or with control characters. A tenant controls what their
// pods answer: a redirect would make the operator fetch any address it can reach (past other tenants'
// NetworkPolicies, which admit the operator) and put the answer in a status the tenant can read.
package podtext

import (
	"errors"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrRedirect is the error of a request a pod answered with a redirect.
var ErrRedirect = errors.New("the pod answered with a redirect, which the operator does not follow")

// NoRedirects returns a copy of c (nil: a zero client) that never follows a redirect: the request fails with
// ErrRedirect instead. A copy, so a caller's shared client is left as it was.
func NoRedirects(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return ErrRedirect }
	return out
}

// MaxStatusText is the most bytes of pod-supplied text the operator puts in a status message or an event.
const MaxStatusText = 1024

// Clean makes pod-supplied text safe to show: invalid UTF-8 and every control character (line breaks and tabs
// included, and the Unicode format characters that reorder text) become a visible escape or a space, and the
// result is at most max bytes, cut at a rune boundary and marked with "…" when cut.
func Clean(s string, limit int) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			b.WriteString(`\ufffd`) // a byte that is not UTF-8
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			b.WriteString(escape(r))
		default:
			b.WriteRune(r)
		}
		if b.Len() > limit {
			break // enough to know it is cut: the rest of a huge input is never walked
		}
	}
	out := b.String()
	if len(out) <= limit {
		return out
	}
	end := max(limit-len("…"), 0)
	for end > 0 && !utf8.RuneStart(out[end]) {
		end--
	}
	return out[:end] + "…"
}

func escape(r rune) string {
	const hex = "0123456789abcdef"
	if r <= 0xff {
		return `\x` + string(hex[r>>4]) + string(hex[r&0xf])
	}
	return `\u` + string(hex[(r>>12)&0xf]) + string(hex[(r>>8)&0xf]) + string(hex[(r>>4)&0xf]) + string(hex[r&0xf])
}
