package sso

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"hyperstatic.dev/hyperstatic/internal/ssokeys"
)

// CookieName is the session cookie the server reads.
const CookieName = "hs_session"

// MaxCookieValue is the longest session cookie value minted (the server ignores longer ones; browsers keep about
// 4 KiB per cookie, name and attributes included).
const MaxCookieValue = 3800

// Keys are a site's session keys: the first signs, every one verifies.
type Keys [][]byte

// ReadKeys reads a keys file (see the package contract). Errors name the line, never a key.
func ReadKeys(path string) (Keys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseKeys(string(b))
}

// ParseKeys parses the text of a keys file (internal/ssokeys).
func ParseKeys(text string) (Keys, error) {
	keys, err := ssokeys.Parse(text)
	return Keys(keys), err
}

// Session is who signed in, as the cookie carries it.
type Session struct {
	Email   string
	Groups  []string
	Expires time.Time
}

// Mint is the cookie value of s signed with the first key.
func (k Keys) Mint(s Session) string {
	groups := make([]string, len(s.Groups))
	for i, g := range s.Groups {
		groups[i] = escape(g)
	}
	body := "1|" + strconv.FormatInt(s.Expires.Unix(), 10) + "|" + escape(strings.ToLower(s.Email)) + "|" +
		strings.Join(groups, ":")
	return body + "|" + k.mac(0, "", body)
}

// Verify is the session in cookie value v if a key signed it and it has not expired at now (what the server
// does; the agent uses it for tests and to say who is signed out).
func (k Keys) Verify(v string, now time.Time) (Session, bool) {
	cut := strings.LastIndexByte(v, '|')
	if cut < 0 {
		return Session{}, false
	}
	body, mac := v[:cut], v[cut+1:]
	if !k.verify("", body, mac) {
		return Session{}, false
	}
	f := strings.Split(body, "|")
	if len(f) != 4 || f[0] != "1" {
		return Session{}, false
	}
	exp, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || now.Unix() >= exp {
		return Session{}, false
	}
	s := Session{Email: f[2], Expires: time.Unix(exp, 0)}
	if f[3] != "" {
		s.Groups = strings.Split(f[3], ":")
	}
	return s, true
}

// mac is the base64url HMAC-SHA256 of body under key i; purpose separates the agent's own cookies (the login
// flow's) from sessions: a flow cookie is never a session, whatever its bytes.
func (k Keys) mac(i int, purpose, body string) string {
	h := hmac.New(sha256.New, k[i])
	h.Write([]byte(purpose))
	h.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func (k Keys) verify(purpose, body, mac string) bool {
	for i := range k {
		if hmac.Equal([]byte(k.mac(i, purpose, body)), []byte(mac)) {
			return true
		}
	}
	return false
}

// escape writes A-Z a-z 0-9 . _ @ - as themselves and every other byte as %XX.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '@' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
