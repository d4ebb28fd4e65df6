package contentagent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// A shard that stops parsing keeps its previous good form (and is reported); the other shards follow their
// changes; a hostile id ("../x") refuses its shard whole.
func TestIndexDirKeepsARefusedShardsLastGoodForm(t *testing.T) {
	dir := t.TempDir()
	a, b := poolGitSite("ns.a", "https://git.example/a.git", ""), poolGitSite("ns.b", "https://git.example/b.git", "")
	writeIndex(t, dir, []poolindex.Site{a}, []poolindex.Site{b})
	x := &contentagent.IndexDir{Dir: dir}
	if changed, err := x.Load(); err != nil || !changed || len(x.Sites()) != 2 {
		t.Fatalf("first load: %v %v %v", changed, err, x.Sites())
	}
	if changed, _ := x.Load(); changed {
		t.Error("an unchanged volume was read again")
	}

	c := poolGitSite("ns.c", "https://git.example/c.git", "")
	shard1, _ := poolindex.Render(1, []poolindex.Site{b, c})
	hostile := strings.Replace(string(shard1), `"id":"ns.c"`, `"id":"../x"`, 1)
	writeSecretVolume(t, dir, map[string]string{
		"index-00.json": `{"version":1,"shard":0,"sites":[`, // cut short
		"index-01.json": hostile,
	})
	if changed, err := x.Load(); err != nil || !changed {
		t.Fatalf("second load: %v %v", changed, err)
	}
	sites := x.Sites()
	if _, ok := sites["ns.a"]; !ok || len(sites) != 2 {
		t.Errorf("sites %v, want a and b kept from their last good shards", keysOf(sites))
	}
	if r := x.Refused(); len(r) != 2 || !strings.Contains(r["index-01.json"], "../x") {
		t.Errorf("refused %v", r)
	}

	writeIndex(t, dir, []poolindex.Site{a}, []poolindex.Site{b, c})
	if _, err := x.Load(); err != nil || len(x.Sites()) != 3 || len(x.Refused()) != 0 {
		t.Errorf("after a good index: %v, refused %v", keysOf(x.Sites()), x.Refused())
	}
	// A plain directory (no ..data link) is followed by its files' names, sizes and times.
	plain := t.TempDir()
	data, _ := poolindex.Render(0, []poolindex.Site{a})
	if err := os.WriteFile(filepath.Join(plain, "s.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	y := &contentagent.IndexDir{Dir: plain}
	if _, err := y.Load(); err != nil || len(y.Sites()) != 1 {
		t.Fatalf("plain dir: %v %v", err, y.Sites())
	}
	data, _ = poolindex.Render(0, []poolindex.Site{a, b})
	if err := os.WriteFile(filepath.Join(plain, "s.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, _ := y.Load(); !changed || len(y.Sites()) != 2 {
		t.Errorf("plain dir after a rewrite: changed %v, %v", changed, keysOf(y.Sites()))
	}
}

func keysOf(m map[string]poolindex.Site) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
