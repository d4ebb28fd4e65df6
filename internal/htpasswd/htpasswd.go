// Package htpasswd checks an htpasswd file the way the server reads it (images/server/src/guard/basic.rs), so the
// operator can say in a StaticSite's AccessApplied condition why a Secret will not do before a pod refuses it:
//
//   - one "user:hash" per line; blank lines and lines starting with '#' are skipped;
//   - every hash is bcrypt ($2a$, $2b$, $2x$ or $2y$, as htpasswd -B writes), of cost at most MaxCost; any other
//     kind (MD5 $apr1$, SHA-1 {SHA}, DES crypt, plain text) refuses the whole file: such hashes are cheap to
//     brute-force once the file leaks;
//   - no user twice, at most MaxBytes.
//
// Errors name lines by number, never by content: the file is a Secret, and the message lands in a status any
// reader of the site can see.
package htpasswd

import (
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// MaxCost is the highest bcrypt cost the server accepts (each wrong password costs one verification at it).
const MaxCost = 14

// MaxBytes is the largest file the server reads.
const MaxBytes = 1 << 20

// Check returns how many users the file holds, or why the server would refuse it.
func Check(data []byte) (int, error) {
	if len(data) > MaxBytes {
		return 0, fmt.Errorf("larger than %d bytes", MaxBytes)
	}
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n := i + 1
		name, hash, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			return 0, fmt.Errorf("line %d: expected user:hash", n)
		}
		if !strings.HasPrefix(hash, "$2a$") && !strings.HasPrefix(hash, "$2b$") && !strings.HasPrefix(hash, "$2x$") && !strings.HasPrefix(hash, "$2y$") {
			return 0, fmt.Errorf("line %d: not a bcrypt hash; only bcrypt is accepted (htpasswd -B makes one)", n)
		}
		cost, err := bcrypt.Cost([]byte(hash))
		if err != nil || len(hash) != 60 {
			return 0, fmt.Errorf("line %d: bad bcrypt hash", n)
		}
		if cost > MaxCost {
			return 0, fmt.Errorf("line %d: bcrypt cost %d is above %d", n, cost, MaxCost)
		}
		if seen[name] {
			return 0, fmt.Errorf("line %d: a user appears twice", n)
		}
		seen[name] = true
	}
	return len(seen), nil
}
