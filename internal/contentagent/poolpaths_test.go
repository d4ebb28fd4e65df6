package contentagent

import (
	"path/filepath"
	"strings"
	"testing"
)

// poolindex refuses ids that are not <namespace>.<name>; siteDir is the wall at the join itself, whatever let an
// id through: nothing but one plain name inside dir, and never the .ready directory.
func TestSiteDirNeverLeavesDir(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"", ".", "..", "../x", "a/../../b", "a/b", "/etc", ".ready", "..data", `a\b`, "a\x00b"} {
		if got, err := siteDir(dir, id); err == nil {
			t.Errorf("siteDir(%q) = %s, want a refusal", id, got)
		}
	}
	for _, id := range []string{"team-a.docs", "ns.name.with.dots", "a..b"} {
		got, err := siteDir(dir, id)
		if err != nil || filepath.Dir(got) != dir || !strings.HasSuffix(got, id) {
			t.Errorf("siteDir(%q) = %s, %v: want %s/%s", id, got, err, dir, id)
		}
	}
}
