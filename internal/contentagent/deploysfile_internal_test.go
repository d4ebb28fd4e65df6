package contentagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The list's rules apart from the fetcher: a tree not on disk is left out (except the one being installed, still
// in its stage), a replaced tree the fetcher's history no longer names is listed ending now, names that are not
// trees never are.
func TestDeploysList(t *testing.T) {
	dir := t.TempDir()
	c := func(b string) string { return strings.Repeat(b, 40) }
	for _, tree := range []string{c("a"), c("b")} {
		if err := os.Mkdir(filepath.Join(dir, tree), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	deploys := []Deploy{
		{Commit: c("d"), FirstServed: t0.Add(30 * time.Minute)},                 // being installed: no tree yet
		{Commit: c("a"), FirstServed: t0, LastServed: t0.Add(30 * time.Minute)}, // kept
		{Commit: c("c"), FirstServed: t0, LastServed: t0},                       // not on this pod's disk
		{Commit: "../escape", LastServed: t0},
	}
	got := deploysList(dir, deploys, c("d"), c("b"), now).Deploys
	want := []TreeDeploy{
		{Tree: c("d"), Commit: c("d"), ServedFrom: t0.Add(30 * time.Minute)},
		{Tree: c("a"), Commit: c("a"), ServedFrom: t0, ServedUntil: t0.Add(30 * time.Minute)},
		{Tree: c("b"), Commit: c("b"), ServedUntil: now},
	}
	if len(got) != len(want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Tree != want[i].Tree || !got[i].ServedFrom.Equal(want[i].ServedFrom) || !got[i].ServedUntil.Equal(want[i].ServedUntil) {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if err := writeDeploys(dir, DeploysList{Deploys: got}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, DeploysFile))
	if !strings.Contains(string(data), `"servedUntil":"2026-12-03T07:00:00Z"`) || strings.Contains(string(data), `"servedUntil":"0001`) {
		t.Errorf("deploys.json %s: want RFC 3339 UTC times, absent when zero", data)
	}
}
