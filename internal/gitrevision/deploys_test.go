package gitrevision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// The fetcher's history is read field for field and checked: a malformed entry refuses the answer, more than
// MaxDeploys are cut to the newest, a pin must be a commit.
func TestParseDeploys(t *testing.T) {
	d := contentagent.Deploy{Commit: goodCommit, Bundle: goodDigest, Size: 9,
		FirstServed: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	good := contentagent.Revision{Digest: goodDigest, Size: 9, Commit: goodCommit, Deploys: []contentagent.Deploy{d}, Pin: goodCommit}
	rev, err := Parse(body(t, good))
	if err != nil || rev.Pin != goodCommit || len(rev.Deploys) != 1 || rev.Deploys[0].Bundle != goodDigest ||
		!rev.Deploys[0].FirstServed.Equal(d.FirstServed) {
		t.Fatalf("a good history: %+v, %v", rev, err)
	}
	for name, mutate := range map[string]func(*contentagent.Revision){
		"short commit":      func(r *contentagent.Revision) { r.Deploys[0].Commit = goodCommit[:12] },
		"upper-case bundle": func(r *contentagent.Revision) { r.Deploys[0].Bundle = strings.ToUpper(goodDigest) },
		"negative size":     func(r *contentagent.Revision) { r.Deploys[0].Size = -1 },
		"twice":             func(r *contentagent.Revision) { r.Deploys = append(r.Deploys, r.Deploys[0]) },
		"pin not a commit":  func(r *contentagent.Revision) { r.Pin = "main" },
	} {
		rev := good
		rev.Deploys = slices.Clone(good.Deploys)
		mutate(&rev)
		if got, err := Parse(body(t, rev)); err == nil {
			t.Errorf("%s: accepted as %+v", name, got)
		}
	}
	long := good
	long.Deploys = nil
	for i := range MaxDeploys + 5 {
		c := []byte(goodCommit)
		c[0], c[1] = "0123456789abcdef"[i/16], "0123456789abcdef"[i%16]
		long.Deploys = append(long.Deploys, contentagent.Deploy{Commit: string(c), Bundle: goodDigest})
	}
	if rev, err := Parse(body(t, long)); err != nil || len(rev.Deploys) != MaxDeploys || rev.Deploys[0].Commit != long.Deploys[0].Commit {
		t.Errorf("%d deploys: %d read (%v), want the newest %d", len(long.Deploys), len(rev.Deploys), err, MaxDeploys)
	}
	jsonFields := func(typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			out = append(out, typ.Field(i).Tag.Get("json")+":"+typ.Field(i).Type.String())
		}
		return out
	}
	if got, want := jsonFields(reflect.TypeOf(deployAnswer{})), jsonFields(reflect.TypeOf(contentagent.Deploy{})); !slices.Equal(got, want) {
		t.Errorf("deployAnswer fields %v, contentagent.Deploy %v", got, want)
	}
}

// The operator's side of POST /pin against a real fetcher: the token sent, a pin taken (the answer is what the
// fetcher publishes), a commit not in the history refused as ErrNotInHistory, a wrong token an error.
func TestPinTheRealFetcher(t *testing.T) {
	srv, base := gittestserver.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gittestserver.File{"index.html": gittestserver.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, synced, ticks := fetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"}, func(f *contentagent.Fetcher) { f.PinTokenFile = tokenFile })
	next(t, synced)
	c2 := repo.Commit("v2", map[string]gittestserver.File{"index.html": gittestserver.Regular("v2\n")}, c1)
	repo.Push("refs/heads/main", c2, false)
	ticks <- time.Now()
	next(t, synced)
	p, port := serve(t, f.Handler())
	h := NewHTTPReader()
	ctx := context.Background()

	rev, err := h.Pin(ctx, p, port, []byte("tok"), c1.String())
	if err != nil || rev.Commit != c1.String() || rev.Pin != c1.String() || len(rev.Deploys) != 2 {
		t.Fatalf("pin v1: %+v, %v", rev, err)
	}
	if _, err := h.Pin(ctx, p, port, []byte("tok"), strings.Repeat("0", 40)); !errors.Is(err, ErrNotInHistory) {
		t.Errorf("pin of an unknown commit: %v, want ErrNotInHistory", err)
	}
	if _, err := h.Pin(ctx, p, port, []byte("other"), ""); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("unpin with another token: %v, want HTTP 401", err)
	}
	if rev, err := h.Pin(ctx, p, port, []byte("tok"), ""); err != nil || rev.Commit != c2.String() || rev.Pin != "" {
		t.Errorf("unpin: %+v, %v", rev, err)
	}
	if got, _ := h.Read(ctx, p, port); got.Commit != c2.String() {
		t.Errorf("after the unpin /revision says %s, want %s", got.Commit, c2)
	}
}

func TestParsePreviews(t *testing.T) {
	const c, b = "0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	good := `{"previews":[{"name":"pr-1","ref":"refs/pull/1/head","commit":"` + c + `","bundle":"` + b + `"},` +
		`{"name":"mr-2","ref":"refs/merge-requests/2/head","error":{"reason":"InvalidContent","message":"bad\u0007"},"failedCommit":"` + c + `"}],` +
		`"previewsSkipped":3,"previewsTag":"abc"}`
	rev, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(rev.Previews) != 2 || rev.PreviewsSkipped != 3 || rev.PreviewsTag != "abc" ||
		rev.Previews[1].Failure.Reason != "GitInvalidContent" || strings.ContainsRune(rev.Previews[1].Failure.Message, 7) {
		t.Fatalf("%+v", rev)
	}
	for name, bad := range map[string]string{
		"a name that is no label":  `{"previews":[{"name":"pr--1","ref":"refs/pull/1/head"}]}`,
		"a host in the name":       `{"previews":[{"name":"a.evil.com","ref":"refs/pull/1/head"}]}`,
		"a name twice":             `{"previews":[{"name":"pr-1","ref":"refs/pull/1/head"},{"name":"pr-1","ref":"refs/pull/2/head"}]}`,
		"a ref outside refs/":      `{"previews":[{"name":"pr-1","ref":"HEAD"}]}`,
		"a commit without bundle":  `{"previews":[{"name":"pr-1","ref":"refs/pull/1/head","commit":"` + c + `"}]}`,
		"a short commit":           `{"previews":[{"name":"pr-1","ref":"refs/pull/1/head","commit":"abc","bundle":"` + b + `"}]}`,
		"a bad failedCommit":       `{"previews":[{"name":"pr-1","ref":"refs/pull/1/head","failedCommit":"zz"}]}`,
		"a negative skipped count": `{"previewsSkipped":-1}`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
