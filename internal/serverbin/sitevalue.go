package serverbin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var siteFlag sync.Map // binary path → whether its --help names --site

// RequireSiteValue skips the test, saying why, when the server binary predates the site value (issue 39: --site
// FILE). The operator's arguments always carry --site, so such a binary cannot run them; a tree whose server
// half has landed builds a binary that has it, and the skip never happens there.
func RequireSiteValue(tb testing.TB, bin string) {
	tb.Helper()
	ok, seen := siteFlag.Load(bin)
	if !seen {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "--help")
		cmd.Env = CleanEnv()
		out, _ := cmd.CombinedOutput()
		ok = strings.Contains(string(out), "--site")
		siteFlag.Store(bin, ok)
	}
	if !ok.(bool) {
		tb.Skipf("the server binary %s has no --site flag (it predates the site value, issue 39): the operator's arguments cannot run on it", bin)
	}
}

// WithSiteValue writes a site value's bytes to a file of its own and points the --site argument of args at it
// (the pod's mount, /etc/hyperstatic/site, does not exist here).
func WithSiteValue(tb testing.TB, args []string, value []byte) []string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "site.json")
	if err := os.WriteFile(p, value, 0o644); err != nil {
		tb.Fatal(err)
	}
	return SetFlag(tb, args, "--site", p)
}
