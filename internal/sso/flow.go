package sso

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// flowTTL bounds a login: from the redirect to the IdP to the callback.
const flowTTL = 10 * time.Minute

const flowPurpose = "hyperstatic sso flow\n"

// flow is one login in progress: what the callback must find again. It travels in a cookie signed with the
// session key (with its own purpose, so it can never pass for a session), so any replica of the agent can
// finish a login another began, and nothing is stored.
type flow struct {
	State    string
	Nonce    string
	Verifier string
	RD       string
	Expires  time.Time
}

// flowCookie names the cookie of the flow with this state: one per login, so two tabs signing in at once do not
// overwrite each other's.
func flowCookie(state string) string {
	return "hs_sso_flow_" + state[:12]
}

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (k Keys) sealFlow(f flow) string {
	// rd is escaped so it holds no '|'; the other fields are base64url.
	body := strings.Join([]string{f.State, f.Nonce, f.Verifier, escape(f.RD), strconv.FormatInt(f.Expires.Unix(), 10)}, "|")
	return body + "|" + k.mac(0, flowPurpose, body)
}

func (k Keys) openFlow(v string, now time.Time) (flow, bool) {
	cut := strings.LastIndexByte(v, '|')
	if cut < 0 || !k.verify(flowPurpose, v[:cut], v[cut+1:]) {
		return flow{}, false
	}
	p := strings.Split(v[:cut], "|")
	if len(p) != 5 {
		return flow{}, false
	}
	exp, err := strconv.ParseInt(p[4], 10, 64)
	if err != nil || now.Unix() >= exp {
		return flow{}, false
	}
	rd, ok := unescape(p[3])
	if !ok {
		return flow{}, false
	}
	return flow{State: p[0], Nonce: p[1], Verifier: p[2], RD: rd, Expires: time.Unix(exp, 0)}, true
}

func unescape(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}

// safeRD is rd if it is a path on the site, else "/": never another host ("//evil", "/\evil", "https://...").
func safeRD(rd string) string {
	if !strings.HasPrefix(rd, "/") || strings.HasPrefix(rd, "//") || strings.HasPrefix(rd, "/\\") ||
		strings.ContainsAny(rd, "\r\n\x00") || len(rd) > 2048 {
		return "/"
	}
	return rd
}
