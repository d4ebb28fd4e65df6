// Package ssokeys is the format of a site's session keys file (docs/design/sso.md, "Keys"), shared by the login
// agent that signs with it (internal/sso) and the operator that judges the Secret before pods mount it
// (AccessApplied): one or two lines of standard base64, 32 to 64 bytes each, the first signing, every one
// verifying; blank lines and surrounding spaces are ignored. The server's reader (guard/session.rs) accepts the
// same files; internal/sso's contract test holds the two together.
package ssokeys

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Parse reads the text of a keys file. Errors name the line, never a key.
func Parse(text string) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: not standard base64", i+1)
		}
		if len(k) < 32 || len(k) > 64 {
			return nil, fmt.Errorf("line %d: a key is 32 to 64 bytes, this one %d", i+1, len(k))
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 || len(keys) > 2 {
		return nil, fmt.Errorf("holds %d keys: one (current) or two (current, then previous)", len(keys))
	}
	return keys, nil
}
